package inbox

import (
	"cmp"
	"container/heap"
	"crypto/sha256"
	"slices"
)

// The replay cache is kept in memory, each key as its hash (replayHash),
// and stored as a log: every key entered, or whose Until is extended, is
// appended to the replay log bucket under the next counter, so that a
// Take writes its keys together at the end of the log (a few pages)
// rather than at scattered places of a bucket ordered by key. An entry is
// deleted by its counter when its key is forgotten (Expired), removed
// (Untake) or superseded by a later Until: the log holds exactly the keys
// of the cache, and is read back into memory at open.
//
// A key is held as the first 16 bytes of its SHA-256 (FIPS 180-4), which
// bounds the memory and the file whatever the keys' length. Two keys that
// share a hash are one key to the cache: the second is refused as a
// replay of the first, and an Untake of one forgets the other. That
// happens with a probability of about n²/2¹²⁹ among n keys: below 2⁻⁹⁵
// for the 100,000 keys of DefaultMaxReplay, below 2⁻⁶⁹ for 2³⁰ keys. A
// sender cannot choose a key that matches another's (a second preimage
// of 128 bits); finding two keys of its own that match takes about 2⁶⁴
// evaluations of SHA-256, for no more than its own two messages taken
// for one.

// replayHashLen is the length of a replay key's hash.
const replayHashLen = 16

// replayHash is how the replay cache holds a key.
type replayHash [replayHashLen]byte

// replayHashOf is the hash of a replay key.
func replayHashOf(key string) replayHash {
	sum := sha256.Sum256([]byte(key))
	return replayHash(sum[:replayHashLen])
}

// replayEntry is a key of the cache: its Until and the counter of its log
// entry.
type replayEntry struct {
	until moment
	ctr   uint64
}

// replayCache is the replay cache in memory. It is the writers' (changed
// only after a commit, under the writer lock); readers see its size and
// earliest Until in the state.
type replayCache struct {
	keys map[replayHash]replayEntry
	// byUntil orders the keys by Until, earliest first (a heap). It may
	// hold stale items, of keys since forgotten, removed or given a later
	// Until (their counter is no longer the key's): they are dropped when
	// they reach the top, and all at once when they outnumber the keys.
	byUntil untilHeap
	// next is the counter of the next log entry.
	next uint64
}

// untilItem is an item of the heap by Until.
type untilItem struct {
	until moment
	ctr   uint64
	h     replayHash
}

type untilHeap []untilItem

func (q untilHeap) Len() int { return len(q) }
func (q untilHeap) Less(i, j int) bool {
	return q[j].until.after(q[i].until) || q[i].until == q[j].until && q[i].ctr < q[j].ctr
}
func (q untilHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *untilHeap) Push(x any)   { *q = append(*q, x.(untilItem)) }
func (q *untilHeap) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

func newReplayCache() *replayCache {
	return &replayCache{keys: make(map[replayHash]replayEntry), next: 1}
}

// lookup returns the entry of a key.
func (c *replayCache) lookup(h replayHash) (replayEntry, bool) {
	e, ok := c.keys[h]
	return e, ok
}

// put enters a key, or replaces its entry, once its log entry is committed.
func (c *replayCache) put(h replayHash, e replayEntry) {
	c.keys[h] = e
	heap.Push(&c.byUntil, untilItem{until: e.until, ctr: e.ctr, h: h})
	c.next = max(c.next, e.ctr+1)
	c.tidy()
}

// drop forgets a key, once the deletion of its log entry is committed.
func (c *replayCache) drop(h replayHash) {
	delete(c.keys, h)
	c.tidy()
}

// tidy rebuilds the heap once its stale items outnumber the keys.
func (c *replayCache) tidy() {
	if len(c.byUntil) > 2*len(c.keys)+1024 {
		c.reorder()
	}
}

// reorder rebuilds the heap from the keys, without stale items.
func (c *replayCache) reorder() {
	c.byUntil = c.byUntil[:0]
	for h, e := range c.keys {
		c.byUntil = append(c.byUntil, untilItem{until: e.until, ctr: e.ctr, h: h})
	}
	heap.Init(&c.byUntil)
}

func (c *replayCache) live(it untilItem) bool {
	e, ok := c.keys[it.h]
	return ok && e.ctr == it.ctr
}

// first returns the earliest Until of the keys (ok false when there are
// none), dropping the stale items above it.
func (c *replayCache) first() (until moment, ok bool) {
	for len(c.byUntil) > 0 {
		if top := c.byUntil[0]; c.live(top) {
			return top.until, true
		}
		heap.Pop(&c.byUntil)
	}
	return moment{}, false
}

// due lists the keys whose Until is not after now, by counter (the order
// of their log entries), without forgetting them.
func (c *replayCache) due(now moment) []untilItem {
	var out []untilItem
	// The items not after now are a subtree at the top of the heap.
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(c.byUntil) || c.byUntil[i].until.after(now) {
			continue
		}
		if c.live(c.byUntil[i]) {
			out = append(out, c.byUntil[i])
		}
		stack = append(stack, 2*i+1, 2*i+2)
	}
	slices.SortFunc(out, func(a, b untilItem) int { return cmp.Compare(a.ctr, b.ctr) })
	return out
}
