// Package inboxtest is the contract of inbox.Store, the offline queue
// (docs/protocol.md §7), as one table-driven suite for every store: the
// bbolt store of agent/inbox (this package's own test runs it) and the
// PostgreSQL store of agent/inbox/pginbox. A new store passes it before it
// is used.
//
//	func TestContract(t *testing.T) {
//		inboxtest.Run(t, func(t *testing.T, c inboxtest.Config) func() inbox.Store {
//			where := newQueue(t) // a new, empty queue: a file, a schema
//			return func() inbox.Store { return open(t, where, c) }
//		})
//	}
//
// The cases cover Enqueue (Seqs, the store's clock, the bounds of
// offline.QueueBounds in the order of reach.Fits, duplicates by Peer and
// MessageID, a full replay cache), Next and its order by Seq, Lookup,
// Take (replay keys, replayed and missing records, the later Until of a
// key), Untake, Remove, Expired, Stats, Close and canceled contexts, what
// survives closing and reopening the queue, fields of any bytes, and
// concurrent senders and takers.
//
// The clocks are fake: times are those the cases pass (Expired's now), or
// the store's clock, which the case sets and never moves. No case waits
// for time to pass.
package inboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/offline"
)

// Config is what a case asks of the stores it opens. Zero fields are the
// store's defaults.
type Config struct {
	// Now is the store's clock, which stamps Enqueued.
	Now func() time.Time
	// MaxReplay is the most keys the replay cache holds before enqueues
	// are refused (inbox.BoltOptions.MaxReplay and the like); when set it
	// is positive.
	MaxReplay int
}

// Opener makes a new, empty queue configured as c says, for the test t,
// and returns a function that opens a Store on it. Each call of that
// function opens the same queue: a case calls it again after closing the
// first Store, and finds what was committed. The function fails t when it
// cannot open the store, and closes each store it opened when t ends.
type Opener func(t *testing.T, c Config) (open func() inbox.Store)

// Option configures Run.
type Option func(*suite)

// WithCheck has Run call check at the end of every case that passed, with
// each store the case opened and did not close itself, before it is
// closed: a store checks its own bookkeeping there (counters, indexes)
// against what it holds. Run itself checks there that Stats counts the
// records and bytes Next returns.
func WithCheck(check func(t *testing.T, s inbox.Store)) Option {
	return func(s *suite) { s.check = check }
}

type suite struct {
	open  Opener
	check func(t *testing.T, s inbox.Store)
}

// Case is one case of the contract.
type Case struct {
	// Name says what the case shows.
	Name string
	run  func(t *testing.T, s *suite)
}

// Cases returns the cases Run runs, in order.
func Cases() []Case { return slices.Clone(cases) }

// Run runs every case of the contract as a subtest of t against the
// stores open opens: one new queue a case, opened once or more.
func Run(t *testing.T, open Opener, opts ...Option) {
	s := &suite{open: open}
	for _, o := range opts {
		o(s)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.run(t, s) })
	}
}

// T0 is the cases' start of time, the stores' clock unless a case says
// otherwise.
var T0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var bg = context.Background()

// roomy bounds refuse nothing the cases enqueue.
var roomy = offline.QueueBounds{MaxMessages: 1 << 30, MaxBytes: 1 << 40, MaxPerPeer: 1 << 30, RecordTTL: time.Hour}

// queue is a case's queue: the stores opened on it, and which of them the
// case closed.
type queue struct {
	t      *testing.T
	s      *suite
	open   func() inbox.Store
	closed map[inbox.Store]bool
}

// newQueue makes a queue for the case; a zero Now is a clock at T0.
func (s *suite) newQueue(t *testing.T, c Config) *queue {
	t.Helper()
	if c.Now == nil {
		c.Now = func() time.Time { return T0 }
	}
	return &queue{t: t, s: s, open: s.open(t, c), closed: map[inbox.Store]bool{}}
}

// store opens a store on the queue, checked when the case ends unless
// closed by it.
func (q *queue) store() inbox.Store {
	q.t.Helper()
	st := q.open()
	q.t.Cleanup(func() {
		if q.t.Failed() || q.closed[st] {
			return
		}
		agree(q.t, st)
		if q.s.check != nil {
			q.s.check(q.t, st)
		}
	})
	return st
}

// agree fails t unless the store's Stats count the records Next returns.
func agree(t *testing.T, st inbox.Store) {
	t.Helper()
	rs := all(t, st)
	var size int64
	for _, r := range rs {
		size += r.Size()
	}
	if got := stats(t, st); got.Messages != len(rs) || got.Bytes != size {
		t.Errorf("Stats %+v, but Next returns %d records of %d bytes", got, len(rs), size)
	}
}

// reopen closes st and opens the queue again.
func (q *queue) reopen(st inbox.Store) inbox.Store {
	q.t.Helper()
	q.close(st)
	return q.store()
}

// close closes st, failing the case if that fails.
func (q *queue) close(st inbox.Store) {
	q.t.Helper()
	q.closed[st] = true
	if err := st.Close(); err != nil {
		q.t.Fatalf("Close: %v", err)
	}
}

// newStore opens a store on a new queue with a clock at T0.
func (s *suite) newStore(t *testing.T) inbox.Store {
	t.Helper()
	return s.newQueue(t, Config{}).store()
}

// msg is a record of peer with a message id, a task id and a payload
// naming them, expiring an hour after T0.
func msg(peer, id string) inbox.Record {
	return inbox.Record{Peer: peer, MessageID: id, TaskID: "task-" + id, ContextID: "ctx-" + peer,
		Payload: fmt.Appendf(nil, `{"from":%q,"id":%q}`, peer, id), Expires: T0.Add(time.Hour)}
}

// mustEnqueue enqueues r with roomy bounds and fails the test unless it is
// stored.
func mustEnqueue(t testing.TB, s inbox.Store, r inbox.Record) inbox.Record {
	t.Helper()
	got, dup, full, err := s.Enqueue(bg, r, roomy)
	if err != nil || dup || full != "" {
		t.Fatalf("Enqueue(%q/%q) = dup %v, full %q, %v", r.Peer, r.MessageID, dup, full, err)
	}
	return got
}

// enqueueN enqueues n records of p1 with message ids 0 to n-1.
func enqueueN(t *testing.T, s inbox.Store, n int) []inbox.Record {
	t.Helper()
	var out []inbox.Record
	for i := range n {
		out = append(out, mustEnqueue(t, s, msg("p1", fmt.Sprint(i))))
	}
	return out
}

// all returns every pending record.
func all(t testing.TB, s inbox.Store) []inbox.Record {
	t.Helper()
	rs, err := s.Next(bg, 0, 1<<30)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return rs
}

// stats returns the store's Stats, failing the test on an error.
func stats(t testing.TB, s inbox.Store) inbox.Stats {
	t.Helper()
	st, err := s.Stats(bg)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// sameRecord reports whether two records hold the same fields.
func sameRecord(a, b inbox.Record) bool {
	return a.Seq == b.Seq && a.Peer == b.Peer && a.MessageID == b.MessageID && a.TaskID == b.TaskID &&
		a.ContextID == b.ContextID && bytes.Equal(a.Payload, b.Payload) && a.Enqueued.Equal(b.Enqueued) && a.Expires.Equal(b.Expires)
}

func seqsOf(rs []inbox.Record) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

// takeAll takes the records with the replay keys "key-" + their message
// id, until T0 + 2h, and fails the test unless all are taken fresh.
func takeAll(t *testing.T, s inbox.Store, rs []inbox.Record) {
	t.Helper()
	var takes []inbox.Taken
	for _, r := range rs {
		takes = append(takes, inbox.Taken{Seq: r.Seq, ReplayKey: "key-" + r.MessageID, Until: T0.Add(2 * time.Hour)})
	}
	replayed, missing, err := s.Take(bg, takes)
	if err != nil || slices.Contains(replayed, true) || slices.Contains(missing, true) {
		t.Fatalf("Take = %v, %v, %v", replayed, missing, err)
	}
}

func keysOf(rs []inbox.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, "key-"+r.MessageID)
	}
	return out
}

// sendAll runs senders goroutines, each enqueueing perSender records made
// by mk, and counts the outcomes.
func sendAll(t *testing.T, s inbox.Store, senders, perSender int, b offline.QueueBounds, mk func(g, i int) inbox.Record) (stored int64, full map[offline.QueueFullKind]int64) {
	t.Helper()
	var mu sync.Mutex
	full = make(map[offline.QueueFullKind]int64)
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				_, dup, kind, err := s.Enqueue(bg, mk(g, i), b)
				switch {
				case err != nil || dup:
					t.Errorf("Enqueue: dup %v, %v", dup, err)
				case kind != "":
					mu.Lock()
					full[kind]++
					mu.Unlock()
				default:
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return n.Load(), full
}

var cases = []Case{
	{"Enqueue assigns increasing Seqs from 1 and Next pages through them in order", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		var want []inbox.Record
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			r := mustEnqueue(t, st, msg("p1", id))
			if !r.Enqueued.Equal(T0) {
				t.Fatalf("Enqueued = %v, want the store's clock %v", r.Enqueued, T0)
			}
			want = append(want, r)
		}
		if got := seqsOf(want); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
			t.Fatalf("seqs %v", got)
		}
		for _, tc := range []struct {
			name     string
			after    uint64
			n        int
			wantSeqs []uint64
		}{
			{"from the start", 0, 2, []uint64{1, 2}},
			{"after a seq", 2, 2, []uint64{3, 4}},
			{"past the end is empty", 5, 10, nil},
			{"n larger than what is left", 3, 10, []uint64{4, 5}},
			{"n zero is empty", 0, 0, nil},
			{"n negative is empty", 0, -1, nil},
			{"after the largest Seq there is is empty", ^uint64(0), 10, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := st.Next(bg, tc.after, tc.n)
				if err != nil || !slices.Equal(seqsOf(got), tc.wantSeqs) {
					t.Fatalf("Next(%d, %d) = %v, %v; want %v", tc.after, tc.n, seqsOf(got), err, tc.wantSeqs)
				}
				for _, r := range got {
					if !sameRecord(r, want[r.Seq-1]) {
						t.Fatalf("record %d = %+v, want %+v", r.Seq, r, want[r.Seq-1])
					}
				}
			})
		}
		got := stats(t, st)
		if want := (inbox.Stats{Messages: 5, Bytes: 5 * int64(len(msg("p1", "a").Payload))}); got != want {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
	}},

	{"fields of any bytes round-trip and are matched exactly", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		long := strings.Repeat("x", 10_000)
		odd := []inbox.Record{
			{Peer: "p\x00\xff", MessageID: "m\x00", TaskID: "t\xfe\x00", ContextID: "c\x00\x80", Payload: []byte{0, 1, 2, 0xff, 0}},
			{Peer: "p\x00", MessageID: "m", TaskID: "t\xfe", ContextID: "", Payload: []byte{}},
			{Peer: long, MessageID: long, TaskID: long, ContextID: long, Payload: []byte(long)},
			{Peer: "", MessageID: "", TaskID: "", Payload: nil},
		}
		var want []inbox.Record
		for _, r := range odd {
			r.Expires = T0.Add(time.Hour)
			want = append(want, mustEnqueue(t, st, r))
		}
		got := all(t, st)
		if len(got) != len(want) {
			t.Fatalf("pending %v", seqsOf(got))
		}
		for i := range got {
			if !sameRecord(got[i], want[i]) {
				t.Fatalf("record %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		for i, r := range want[:3] {
			if l, ok, err := st.Lookup(bg, r.TaskID); !ok || err != nil || l.Seq != r.Seq {
				t.Fatalf("Lookup of task %d = %d, %v, %v", i, l.Seq, ok, err)
			}
			if d, dup, _, err := st.Enqueue(bg, inbox.Record{Peer: r.Peer, MessageID: r.MessageID, Expires: r.Expires}, roomy); !dup || err != nil || d.Seq != r.Seq {
				t.Fatalf("duplicate of record %d = %d, dup %v, %v", i, d.Seq, dup, err)
			}
		}
		// A prefix, or a difference after a NUL byte, is another id.
		if _, ok, err := st.Lookup(bg, "t\xfe\x00x"); ok || err != nil {
			t.Fatalf("Lookup of another task: %v, %v", ok, err)
		}
		if _, dup, _, err := st.Enqueue(bg, inbox.Record{Peer: "p\x00\xff", MessageID: "m\x00x", Expires: T0.Add(time.Hour)}, roomy); dup || err != nil {
			t.Fatalf("another message id: dup %v, %v", dup, err)
		}
		// The per-peer bound counts the peer's records exactly.
		one := offline.QueueBounds{MaxMessages: 100, MaxBytes: 1 << 20, MaxPerPeer: 1}
		if _, _, full, err := st.Enqueue(bg, inbox.Record{Peer: "p\x00", MessageID: "n", Expires: T0.Add(time.Hour)}, one); full != offline.QueueFullKindPeer || err != nil {
			t.Fatalf("a peer's second record: full %q, %v", full, err)
		}
		if _, _, full, err := st.Enqueue(bg, inbox.Record{Peer: "p\x00\x00", MessageID: "n", Expires: T0.Add(time.Hour)}, one); full != "" || err != nil {
			t.Fatalf("another peer's first record: full %q, %v", full, err)
		}
	}},

	{"Lookup finds the oldest pending record of a task", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		second := msg("p2", "x")
		second.TaskID = a.TaskID
		b := mustEnqueue(t, st, second)
		for _, tc := range []struct {
			name    string
			remove  []uint64
			task    string
			wantSeq uint64
		}{
			{"the oldest of a task", nil, a.TaskID, a.Seq},
			{"an unknown task", nil, "nope", 0},
			{"no task id", nil, "", 0},
			{"the next once the oldest is removed", []uint64{a.Seq}, a.TaskID, b.Seq},
			{"none once all are removed", []uint64{b.Seq}, a.TaskID, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := st.Remove(bg, tc.remove); err != nil {
					t.Fatal(err)
				}
				r, ok, err := st.Lookup(bg, tc.task)
				if err != nil || ok != (tc.wantSeq != 0) || r.Seq != tc.wantSeq {
					t.Fatalf("Lookup(%q) = %d, %v, %v; want %d", tc.task, r.Seq, ok, err, tc.wantSeq)
				}
			})
		}
	}},

	{"Take removes records, enters replay keys and reports replayed and missing", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		enqueueN(t, st, 4)
		until := T0.Add(2 * time.Hour)
		for _, tc := range []struct {
			name                      string
			takes                     []inbox.Taken
			wantReplayed, wantMissing []bool
			wantPending               []uint64
			wantReplay                int
		}{
			{"a fresh key is entered", []inbox.Taken{{Seq: 1, ReplayKey: "obj-1", Until: until}},
				[]bool{false}, []bool{false}, []uint64{2, 3, 4}, 1},
			{"a known key is replayed and its record removed too", []inbox.Taken{{Seq: 2, ReplayKey: "obj-1", Until: until}},
				[]bool{true}, []bool{false}, []uint64{3, 4}, 1},
			{"a seq no longer pending is missing", []inbox.Taken{{Seq: 1, ReplayKey: "obj-9", Until: until}, {Seq: 3, ReplayKey: "obj-3", Until: until}},
				[]bool{false, false}, []bool{true, false}, []uint64{4}, 2},
			{"a seq never assigned is missing", []inbox.Taken{{Seq: 99, ReplayKey: "obj-99", Until: until}, {Seq: 0}},
				[]bool{false, false}, []bool{true, true}, []uint64{4}, 2},
			{"the same seq twice in one take is missing the second time", []inbox.Taken{{Seq: 4, ReplayKey: "obj-4", Until: until}, {Seq: 4, ReplayKey: "obj-5", Until: until}},
				[]bool{false, false}, []bool{false, true}, nil, 3},
			{"nothing taken changes nothing", nil, []bool{}, []bool{}, nil, 3},
		} {
			t.Run(tc.name, func(t *testing.T) {
				replayed, missing, err := st.Take(bg, tc.takes)
				if err != nil || !slices.Equal(replayed, tc.wantReplayed) || !slices.Equal(missing, tc.wantMissing) {
					t.Fatalf("Take = %v, %v, %v; want %v, %v", replayed, missing, err, tc.wantReplayed, tc.wantMissing)
				}
				if got := seqsOf(all(t, st)); !slices.Equal(got, tc.wantPending) {
					t.Fatalf("pending %v, want %v", got, tc.wantPending)
				}
				if got := stats(t, st); got.Replay != tc.wantReplay || got.Messages != len(tc.wantPending) {
					t.Fatalf("Stats %+v, want %d replay keys", got, tc.wantReplay)
				}
			})
		}
	}},

	{"Take of two records with one key reports the second replayed", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		enqueueN(t, st, 2)
		replayed, missing, err := st.Take(bg, []inbox.Taken{{Seq: 1, ReplayKey: "k", Until: T0.Add(time.Hour)}, {Seq: 2, ReplayKey: "k", Until: T0.Add(time.Hour)}})
		if err != nil || !slices.Equal(replayed, []bool{false, true}) || !slices.Equal(missing, []bool{false, false}) {
			t.Fatalf("Take = %v, %v, %v", replayed, missing, err)
		}
		if got := stats(t, st); got != (inbox.Stats{Replay: 1}) {
			t.Fatalf("Stats %+v", got)
		}
	}},

	{"a Taken without a replay key enters none and is never replayed", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		enqueueN(t, st, 3)
		replayed, missing, err := st.Take(bg, []inbox.Taken{{Seq: 1}, {Seq: 2}, {Seq: 3, ReplayKey: ""}})
		if err != nil || slices.Contains(replayed, true) || slices.Contains(missing, true) {
			t.Fatalf("Take = %v, %v, %v", replayed, missing, err)
		}
		if got := stats(t, st); got != (inbox.Stats{}) {
			t.Fatalf("Stats %+v", got)
		}
	}},

	{"a key keeps the later of its Untils and Expired forgets it once that passes", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		enqueueN(t, st, 6)
		h := func(d time.Duration) time.Time { return T0.Add(d) }
		for _, step := range []struct {
			takes        []inbox.Taken
			wantReplayed []bool
		}{
			{[]inbox.Taken{{Seq: 1, ReplayKey: "A", Until: h(5 * time.Hour)}, {Seq: 2, ReplayKey: "B", Until: h(time.Hour)}, {Seq: 3, ReplayKey: "C", Until: h(3 * time.Hour)}},
				[]bool{false, false, false}},
			// A later Until extends A; an earlier one leaves B as it was.
			{[]inbox.Taken{{Seq: 4, ReplayKey: "A", Until: h(8 * time.Hour)}, {Seq: 5, ReplayKey: "B", Until: h(time.Minute)}},
				[]bool{true, true}},
			// The same Seq twice: the second is missing, its Until not
			// entered.
			{[]inbox.Taken{{Seq: 6, ReplayKey: "D", Until: h(2 * time.Hour)}, {Seq: 6, ReplayKey: "D", Until: h(4 * time.Hour)}},
				[]bool{false, false}},
		} {
			replayed, _, err := st.Take(bg, step.takes)
			if err != nil || !slices.Equal(replayed, step.wantReplayed) {
				t.Fatalf("Take %+v = %v, %v", step.takes, replayed, err)
			}
		}
		if err := st.Untake(bg, nil, []string{"C"}); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			now  time.Duration
			want int
		}{
			{0, 3},                // A, B, D
			{time.Hour, 2},        // B's Until is inclusive
			{2 * time.Hour, 1},    // D's
			{7 * time.Hour, 1},    // A was extended
			{8 * time.Hour, 0},    // to 8h
			{100 * time.Hour, 0},  // nothing left
			{-100 * time.Hour, 0}, // a time before all
		} {
			if _, err := st.Expired(bg, h(step.now), 10); err != nil {
				t.Fatal(err)
			}
			if got := stats(t, st); got.Replay != step.want {
				t.Fatalf("after Expired at %v: %+v, want %d keys", step.now, got, step.want)
			}
		}
	}},

	{"Expired forgets keys in the order of their Until, not of their entry", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		r := rand.New(rand.NewPCG(5, 6))
		recs := enqueueN(t, st, 150)
		until := map[string]time.Duration{}
		for len(recs) > 0 {
			var takes []inbox.Taken
			for _, rec := range recs[:min(32, len(recs))] {
				d := time.Duration(r.IntN(100*60)) * time.Minute
				until[rec.MessageID] = d
				takes = append(takes, inbox.Taken{Seq: rec.Seq, ReplayKey: "k" + rec.MessageID, Until: T0.Add(d)})
			}
			if replayed, _, err := st.Take(bg, takes); err != nil || slices.Contains(replayed, true) {
				t.Fatalf("Take = %v, %v", replayed, err)
			}
			recs = recs[len(takes):]
		}
		left := func(now time.Duration) int {
			n := 0
			for _, d := range until {
				if d > now {
					n++
				}
			}
			return n
		}
		for _, now := range []time.Duration{0, 10 * time.Hour, 55 * time.Hour, 80 * time.Hour, 99 * time.Hour, 100 * time.Hour} {
			if _, err := st.Expired(bg, T0.Add(now), 1); err != nil {
				t.Fatal(err)
			}
			if got := stats(t, st); got.Replay != left(now) {
				t.Fatalf("at %v: %d keys, want %d", now, got.Replay, left(now))
			}
		}
	}},

	{"a replay key of any length is one key", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		enqueueN(t, st, 5)
		long := strings.Repeat("k", 100_000)
		other := long[:len(long)-1] + "j"
		until := T0.Add(time.Hour)
		replayed, _, err := st.Take(bg, []inbox.Taken{{Seq: 1, ReplayKey: long, Until: until}, {Seq: 2, ReplayKey: other, Until: until}})
		if err != nil || !slices.Equal(replayed, []bool{false, false}) {
			t.Fatalf("Take = %v, %v", replayed, err)
		}
		replayed, _, err = st.Take(bg, []inbox.Taken{{Seq: 3, ReplayKey: long, Until: until}, {Seq: 4, ReplayKey: long[:1000], Until: until}, {Seq: 5, ReplayKey: "k\x00"}})
		if err != nil || !slices.Equal(replayed, []bool{true, false, false}) {
			t.Fatalf("Take = %v, %v", replayed, err)
		}
	}},

	{"Remove returns the records still pending, in the order asked", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		mustEnqueue(t, st, msg("p1", "b"))
		c := mustEnqueue(t, st, msg("p2", "c"))
		for _, tc := range []struct {
			name        string
			seqs        []uint64
			wantRemoved []uint64
			wantPending []uint64
		}{
			{"pending ones, in the order asked", []uint64{3, 1}, []uint64{3, 1}, []uint64{2}},
			{"gone and unknown ones are skipped", []uint64{1, 99, 3, 0}, nil, []uint64{2}},
			{"nothing asked removes nothing", nil, nil, []uint64{2}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := st.Remove(bg, tc.seqs)
				if err != nil || !slices.Equal(seqsOf(got), tc.wantRemoved) {
					t.Fatalf("Remove(%v) = %v, %v; want %v", tc.seqs, seqsOf(got), err, tc.wantRemoved)
				}
				if p := seqsOf(all(t, st)); !slices.Equal(p, tc.wantPending) {
					t.Fatalf("pending %v, want %v", p, tc.wantPending)
				}
			})
		}
		if got := stats(t, st); got.Messages != 1 || got.Bytes != a.Size() {
			t.Fatalf("Stats %+v", got)
		}
		// Removed records are gone from the duplicates: the same message
		// enqueues again.
		for _, r := range []inbox.Record{a, c} {
			if _, dup, _, err := st.Enqueue(bg, msg(r.Peer, r.MessageID), roomy); dup || err != nil {
				t.Fatalf("re-enqueue of removed %s: dup %v, %v", r.MessageID, dup, err)
			}
		}
	}},

	{"Remove returns the removed records whole", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		b := mustEnqueue(t, st, msg("p2", "b"))
		got, err := st.Remove(bg, []uint64{b.Seq, a.Seq, b.Seq})
		if err != nil || len(got) != 2 || !sameRecord(got[0], b) || !sameRecord(got[1], a) {
			t.Fatalf("Remove = %+v, %v", got, err)
		}
	}},

	{"Expired returns expired records oldest first and only lists them", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		for i, ttl := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour, time.Hour, 5 * time.Hour} {
			r := msg("p1", string(rune('a'+i)))
			r.Expires = T0.Add(ttl)
			mustEnqueue(t, st, r)
		}
		if _, _, err := st.Take(bg, []inbox.Taken{{Seq: 5, ReplayKey: "short", Until: T0.Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Take(bg, []inbox.Taken{{Seq: 3, ReplayKey: "long", Until: T0.Add(10 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name       string
			now        time.Time
			n          int
			wantSeqs   []uint64
			wantReplay int
		}{
			{"nothing expired yet", T0, 10, nil, 2},
			{"expiry is inclusive, oldest first, keys forgotten", T0.Add(time.Hour), 10, []uint64{2, 4}, 1},
			{"n bounds the answer", T0.Add(4 * time.Hour), 2, []uint64{1, 2}, 1},
			{"n zero lists nothing but forgets keys", T0.Add(10 * time.Hour), 0, nil, 0},
			{"later keys are kept until they pass", T0.Add(10 * time.Hour), 10, []uint64{1, 2, 4}, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := st.Expired(bg, tc.now, tc.n)
				if err != nil || !slices.Equal(seqsOf(got), tc.wantSeqs) {
					t.Fatalf("Expired = %v, %v; want %v", seqsOf(got), err, tc.wantSeqs)
				}
				if got := stats(t, st); got.Replay != tc.wantReplay {
					t.Fatalf("replay keys %d, want %d", got.Replay, tc.wantReplay)
				}
			})
		}
		if got := seqsOf(all(t, st)); !slices.Equal(got, []uint64{1, 2, 4}) {
			t.Fatalf("pending %v", got)
		}
		// A forgotten key is fresh again.
		r := mustEnqueue(t, st, msg("p1", "f"))
		replayed, _, err := st.Take(bg, []inbox.Taken{{Seq: r.Seq, ReplayKey: "short", Until: T0.Add(20 * time.Hour)}})
		if err != nil || replayed[0] {
			t.Fatalf("Take of a forgotten key: replayed %v, %v", replayed, err)
		}
	}},

	{"each bound refuses with its kind and stores nothing", func(t *testing.T, s *suite) {
		size := int64(len(msg("p1", "x").Payload))
		for _, tc := range []struct {
			name   string
			bounds offline.QueueBounds
			queued []inbox.Record // enqueued first, with roomy bounds
			next   inbox.Record
			want   offline.QueueFullKind
		}{
			{"messages: the global count", offline.QueueBounds{MaxMessages: 2, MaxBytes: 1 << 20, MaxPerPeer: 10},
				[]inbox.Record{msg("p1", "a"), msg("p2", "b")}, msg("p3", "x"), offline.QueueFullKindMessages},
			{"bytes: the global size", offline.QueueBounds{MaxMessages: 10, MaxBytes: 3*size - 1, MaxPerPeer: 10},
				[]inbox.Record{msg("p1", "a"), msg("p2", "b")}, msg("p3", "x"), offline.QueueFullKindBytes},
			{"peer: the sender's pending count", offline.QueueBounds{MaxMessages: 10, MaxBytes: 1 << 20, MaxPerPeer: 2},
				[]inbox.Record{msg("p1", "a"), msg("p1", "b"), msg("p2", "c")}, msg("p1", "x"), offline.QueueFullKindPeer},
			{"messages before bytes and peer", offline.QueueBounds{MaxMessages: 1, MaxBytes: 1, MaxPerPeer: 1},
				[]inbox.Record{msg("p1", "a")}, msg("p1", "x"), offline.QueueFullKindMessages},
			{"bytes before peer", offline.QueueBounds{MaxMessages: 10, MaxBytes: size, MaxPerPeer: 1},
				[]inbox.Record{msg("p1", "a")}, msg("p1", "x"), offline.QueueFullKindBytes},
			{"an empty queue with zero bounds", offline.QueueBounds{}, nil, msg("p1", "x"), offline.QueueFullKindMessages},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st := s.newStore(t)
				for _, r := range tc.queued {
					mustEnqueue(t, st, r)
				}
				before := stats(t, st)
				got, dup, full, err := st.Enqueue(bg, tc.next, tc.bounds)
				if err != nil || dup || full != tc.want || got.Seq != 0 {
					t.Fatalf("Enqueue = seq %d, dup %v, full %q, %v; want full %q", got.Seq, dup, full, err, tc.want)
				}
				if after := stats(t, st); after != before || len(all(t, st)) != len(tc.queued) {
					t.Fatalf("stats %+v after the refusal, %+v before", after, before)
				}
				if _, ok, _ := st.Lookup(bg, tc.next.TaskID); ok {
					t.Fatal("the refused record's task is found")
				}
				// Within the bounds again, it is stored, with the next Seq.
				r, _, full, err := st.Enqueue(bg, tc.next, roomy)
				if full != "" || err != nil || r.Seq != uint64(len(tc.queued)+1) {
					t.Fatalf("with room: seq %d, full %q, %v", r.Seq, full, err)
				}
			})
		}
	}},

	{"a duplicate returns the pending record and stores nothing", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		first := mustEnqueue(t, st, msg("p1", "a"))
		for _, tc := range []struct {
			name    string
			r       inbox.Record
			bounds  offline.QueueBounds
			wantDup bool
		}{
			{"same peer and message id", msg("p1", "a"), roomy, true},
			{"a duplicate is reported even when the queue is full", msg("p1", "a"), offline.QueueBounds{}, true},
			{"whatever its other fields", inbox.Record{Peer: "p1", MessageID: "a", TaskID: "other", Payload: []byte("other"), Expires: T0.Add(time.Minute)}, roomy, true},
			{"same message id from another peer is not", msg("p2", "a"), roomy, false},
			{"an empty message id never matches", inbox.Record{Peer: "p1", Expires: T0.Add(time.Hour)}, roomy, false},
			{"nor does a second one", inbox.Record{Peer: "p1", Expires: T0.Add(time.Hour)}, roomy, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := stats(t, st)
				got, dup, full, err := st.Enqueue(bg, tc.r, tc.bounds)
				if err != nil || full != "" || dup != tc.wantDup {
					t.Fatalf("Enqueue = dup %v, full %q, %v; want dup %v", dup, full, err, tc.wantDup)
				}
				after := stats(t, st)
				if tc.wantDup {
					if !sameRecord(got, first) || after != before {
						t.Fatalf("dup returned %+v (want %+v), stats %+v -> %+v", got, first, before, after)
					}
				} else if after.Messages != before.Messages+1 {
					t.Fatalf("stats %+v -> %+v", before, after)
				}
			})
		}
		// Taken, the record is no longer pending: the message enqueues
		// again.
		takeAll(t, st, []inbox.Record{first})
		if r, dup, _, err := st.Enqueue(bg, msg("p1", "a"), roomy); dup || err != nil || r.Seq == first.Seq {
			t.Fatalf("after Take: seq %d, dup %v, %v", r.Seq, dup, err)
		}
	}},

	{"a full replay cache refuses with kind messages", func(t *testing.T, s *suite) {
		st := s.newQueue(t, Config{MaxReplay: 2}).store()
		enqueueN(t, st, 3)
		if _, _, err := st.Take(bg, []inbox.Taken{{Seq: 1, ReplayKey: "k1", Until: T0.Add(time.Hour)}, {Seq: 2, ReplayKey: "k2", Until: T0.Add(2 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		if _, dup, full, err := st.Enqueue(bg, msg("p1", "x"), roomy); full != offline.QueueFullKindMessages || dup || err != nil {
			t.Fatalf("with the replay cache full: full %q, dup %v, %v", full, dup, err)
		}
		// A duplicate is still reported as one.
		if _, dup, full, err := st.Enqueue(bg, msg("p1", "2"), roomy); !dup || full != "" || err != nil {
			t.Fatalf("a duplicate with the replay cache full: full %q, dup %v, %v", full, dup, err)
		}
		// A key forgotten makes room again.
		if _, err := st.Expired(bg, T0.Add(time.Hour), 10); err != nil {
			t.Fatal(err)
		}
		if _, _, full, err := st.Enqueue(bg, msg("p1", "x"), roomy); full != "" || err != nil {
			t.Fatalf("after a key expired: full %q, %v", full, err)
		}
	}},

	{"Enqueue refuses a record without Expires and stores nothing", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		noExpiry := msg("p1", "a")
		noExpiry.Expires = time.Time{}
		if _, _, _, err := st.Enqueue(bg, noExpiry, roomy); err == nil {
			t.Fatal("a record without Expires was accepted")
		}
		if got := stats(t, st); got != (inbox.Stats{}) {
			t.Fatalf("stored %+v", got)
		}
		// The Seq the caller gives is not the one stored.
		r := msg("p1", "b")
		r.Seq = 42
		if got := mustEnqueue(t, st, r); got.Seq != 1 {
			t.Fatalf("Seq %d", got.Seq)
		}
	}},

	{"a canceled context stores nothing", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		ctx, cancel := context.WithCancel(bg)
		cancel()
		if _, _, _, err := st.Enqueue(ctx, msg("p1", "a"), roomy); !errors.Is(err, context.Canceled) {
			t.Fatalf("Enqueue = %v", err)
		}
		a := mustEnqueue(t, st, msg("p1", "b"))
		if _, _, err := st.Take(ctx, []inbox.Taken{{Seq: a.Seq, ReplayKey: "k"}}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Take = %v", err)
		}
		if _, err := st.Remove(ctx, []uint64{a.Seq}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Remove = %v", err)
		}
		if got := all(t, st); len(got) != 1 || !sameRecord(got[0], a) {
			t.Fatalf("pending %v", seqsOf(got))
		}
		if got := stats(t, st); got.Replay != 0 {
			t.Fatalf("Stats %+v", got)
		}
	}},

	{"every call after Close returns ErrClosed", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		mustEnqueue(t, st, msg("p1", "a"))
		q.close(st)
		if err := st.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		for name, call := range map[string]func() error{
			"Enqueue": func() error { _, _, _, err := st.Enqueue(bg, msg("p1", "b"), roomy); return err },
			"Next":    func() error { _, err := st.Next(bg, 0, 1); return err },
			"Lookup":  func() error { _, _, err := st.Lookup(bg, "task-a"); return err },
			"Take":    func() error { _, _, err := st.Take(bg, []inbox.Taken{{Seq: 1}}); return err },
			"Untake":  func() error { return st.Untake(bg, []inbox.Record{msg("p1", "a")}, nil) },
			"Remove":  func() error { _, err := st.Remove(bg, []uint64{1}); return err },
			"Expired": func() error { _, err := st.Expired(bg, T0, 1); return err },
			"Stats":   func() error { _, err := st.Stats(bg); return err },
		} {
			if err := call(); !errors.Is(err, inbox.ErrClosed) {
				t.Errorf("%s after Close = %v", name, err)
			}
		}
	}},

	{"records survive closing and reopening, with their Seqs, duplicates and tasks", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		var want []inbox.Record
		for _, id := range []string{"a", "b", "c", "d"} {
			want = append(want, mustEnqueue(t, st, msg("p"+id, id)))
		}
		if _, err := st.Remove(bg, []uint64{2}); err != nil {
			t.Fatal(err)
		}
		want = slices.Delete(want, 1, 2)
		st = q.reopen(st)
		got := all(t, st)
		if len(got) != len(want) {
			t.Fatalf("after reopen %v, want %v", seqsOf(got), seqsOf(want))
		}
		for i := range got {
			if !sameRecord(got[i], want[i]) {
				t.Fatalf("after reopen %+v, want %+v", got[i], want[i])
			}
		}
		if _, dup, _, err := st.Enqueue(bg, msg("pa", "a"), roomy); !dup || err != nil {
			t.Fatalf("duplicate after reopen: dup %v, %v", dup, err)
		}
		if r, ok, _ := st.Lookup(bg, "task-c"); !ok || r.Seq != 3 {
			t.Fatalf("Lookup after reopen = %d, %v", r.Seq, ok)
		}
		if got := stats(t, st); got.Messages != 3 || got.Bytes != want[0].Size()+want[1].Size()+want[2].Size() {
			t.Fatalf("Stats after reopen %+v", got)
		}
	}},

	{"Seqs are never reused, even once the queue was empty and reopened", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		enqueueN(t, st, 3)
		if _, err := st.Remove(bg, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if r := mustEnqueue(t, st, msg("p1", "d")); r.Seq != 4 {
			t.Fatalf("Seq = %d, want 4", r.Seq)
		}
		takeAll(t, st, all(t, st))
		st = q.reopen(st)
		if r := mustEnqueue(t, st, msg("p1", "e")); r.Seq != 5 {
			t.Fatalf("Seq after reopen = %d, want 5", r.Seq)
		}
	}},

	{"replay keys survive closing and reopening", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		enqueueN(t, st, 3)
		if _, _, err := st.Take(bg, []inbox.Taken{{Seq: 1, ReplayKey: "obj-a", Until: T0.Add(time.Hour)}, {Seq: 2, ReplayKey: "obj-b", Until: T0.Add(3 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		st = q.reopen(st)
		if got := stats(t, st); got.Replay != 2 || got.Messages != 1 {
			t.Fatalf("Stats after reopen %+v", got)
		}
		r := mustEnqueue(t, st, msg("p1", "d"))
		replayed, missing, err := st.Take(bg, []inbox.Taken{{Seq: 3, ReplayKey: "obj-a", Until: T0.Add(time.Hour)}, {Seq: r.Seq, ReplayKey: "obj-new", Until: T0.Add(time.Hour)}})
		if err != nil || !slices.Equal(replayed, []bool{true, false}) || !slices.Equal(missing, []bool{false, false}) {
			t.Fatalf("Take after reopen = %v, %v, %v", replayed, missing, err)
		}
		// Expired forgets the passed keys, for good.
		if _, err := st.Expired(bg, T0.Add(2*time.Hour), 10); err != nil {
			t.Fatal(err)
		}
		st = q.reopen(st)
		if got := stats(t, st); got.Replay != 1 {
			t.Fatalf("replay keys after expiry and reopen: %+v", got)
		}
	}},

	{"Untake puts records back in their place and removes their keys", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		var recs []inbox.Record
		for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
			recs = append(recs, mustEnqueue(t, st, msg("p1", id)))
		}
		takeAll(t, st, recs[:4])
		// b and c were taken but never handed over.
		if err := st.Untake(bg, recs[1:3], keysOf(recs[1:3])); err != nil {
			t.Fatal(err)
		}
		check := func(t *testing.T, st inbox.Store) {
			t.Helper()
			got := all(t, st)
			if !slices.Equal(seqsOf(got), []uint64{2, 3, 5, 6}) {
				t.Fatalf("pending %v, want [2 3 5 6]", seqsOf(got))
			}
			for _, r := range got {
				if !sameRecord(r, recs[r.Seq-1]) {
					t.Fatalf("record %d = %+v, want %+v", r.Seq, r, recs[r.Seq-1])
				}
			}
			if got, want := stats(t, st), (inbox.Stats{Messages: 4, Bytes: 4 * recs[0].Size(), Replay: 2}); got != want {
				t.Fatalf("Stats %+v, want %+v", got, want)
			}
			if r, ok, err := st.Lookup(bg, "task-b"); !ok || err != nil || r.Seq != 2 {
				t.Fatalf("Lookup(task-b) = %d, %v, %v", r.Seq, ok, err)
			}
			if r, dup, _, err := st.Enqueue(bg, msg("p1", "c"), roomy); !dup || err != nil || r.Seq != 3 {
				t.Fatalf("Enqueue of c again = %d, dup %v, %v", r.Seq, dup, err)
			}
		}
		t.Run("at once", func(t *testing.T) { check(t, st) })
		st = q.reopen(st)
		t.Run("after reopen", func(t *testing.T) { check(t, st) })
		// Their keys are gone, the others' kept; a and d stay taken.
		replayed, missing, err := st.Take(bg, []inbox.Taken{
			{Seq: 2, ReplayKey: "key-b", Until: T0.Add(time.Hour)},
			{Seq: 3, ReplayKey: "key-c", Until: T0.Add(time.Hour)},
			{Seq: 5, ReplayKey: "key-a", Until: T0.Add(time.Hour)},
			{Seq: 1, ReplayKey: "key-x", Until: T0.Add(time.Hour)},
			{Seq: 4, ReplayKey: "key-y", Until: T0.Add(time.Hour)},
		})
		if err != nil || !slices.Equal(replayed, []bool{false, false, true, false, false}) || !slices.Equal(missing, []bool{false, false, false, true, true}) {
			t.Fatalf("Take after Untake = %v, %v, %v", replayed, missing, err)
		}
	}},

	{"Untake of a record still pending leaves it as it is", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		b := mustEnqueue(t, st, msg("p1", "b"))
		takeAll(t, st, []inbox.Record{a})
		changed := b
		changed.Payload = []byte("changed")
		// b is pending: neither it nor its key (absent) changes; a comes
		// back once, though given twice.
		if err := st.Untake(bg, []inbox.Record{changed, a, a}, []string{"key-b", "", "key-a", "key-a"}); err != nil {
			t.Fatal(err)
		}
		got := all(t, st)
		if len(got) != 2 || !sameRecord(got[0], a) || !sameRecord(got[1], b) {
			t.Fatalf("pending %+v", got)
		}
		if got := stats(t, st); got != (inbox.Stats{Messages: 2, Bytes: a.Size() + b.Size()}) {
			t.Fatalf("Stats %+v", got)
		}
		// Nothing to do is no error.
		if err := st.Untake(bg, []inbox.Record{a}, []string{"unknown"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Untake(bg, nil, nil); err != nil {
			t.Fatal(err)
		}
	}},

	{"Untake keeps the order of Seqs and tasks", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		second := msg("p2", "b")
		second.TaskID = a.TaskID // a resume of a's task
		b := mustEnqueue(t, st, second)
		takeAll(t, st, []inbox.Record{a})
		if r, _, _ := st.Lookup(bg, a.TaskID); r.Seq != b.Seq {
			t.Fatalf("Lookup = %d", r.Seq)
		}
		if err := st.Untake(bg, []inbox.Record{a}, keysOf([]inbox.Record{a})); err != nil {
			t.Fatal(err)
		}
		if r, _, _ := st.Lookup(bg, a.TaskID); r.Seq != a.Seq {
			t.Fatalf("Lookup after Untake = %d, want the oldest, %d", r.Seq, a.Seq)
		}
		if got, err := st.Next(bg, 0, 1); err != nil || len(got) != 1 || got[0].Seq != a.Seq {
			t.Fatalf("Next = %v, %v", seqsOf(got), err)
		}
		if ex, err := st.Expired(bg, T0.Add(time.Hour), 10); err != nil || !slices.Equal(seqsOf(ex), []uint64{1, 2}) {
			t.Fatalf("Expired = %v, %v", seqsOf(ex), err)
		}
		if _, err := st.Remove(bg, []uint64{a.Seq}); err != nil {
			t.Fatal(err)
		}
		if r, _, _ := st.Lookup(bg, a.TaskID); r.Seq != b.Seq {
			t.Fatalf("Lookup after Remove = %d", r.Seq)
		}
	}},

	{"Untake does not check the bounds", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		one := offline.QueueBounds{MaxMessages: 1, MaxBytes: 1 << 20, MaxPerPeer: 1}
		a, _, _, err := st.Enqueue(bg, msg("p1", "a"), one)
		if err != nil || a.Seq == 0 {
			t.Fatalf("Enqueue a: %d, %v", a.Seq, err)
		}
		takeAll(t, st, []inbox.Record{a})
		if _, _, full, err := st.Enqueue(bg, msg("p1", "b"), one); full != "" || err != nil {
			t.Fatalf("Enqueue b: %q, %v", full, err)
		}
		if err := st.Untake(bg, []inbox.Record{a}, nil); err != nil {
			t.Fatal(err)
		}
		if got := stats(t, st); got.Messages != 2 || got.Replay != 1 {
			t.Fatalf("Stats %+v", got)
		}
		if _, _, full, err := st.Enqueue(bg, msg("p1", "c"), one); full != offline.QueueFullKindMessages || err != nil {
			t.Fatalf("Enqueue c over the bound: %q, %v", full, err)
		}
	}},

	{"Untake refuses a record the store never assigned, and changes nothing", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		a := mustEnqueue(t, st, msg("p1", "a"))
		takeAll(t, st, []inbox.Record{a})
		never := a
		never.Seq = 7
		noExpiry := a
		noExpiry.Expires = time.Time{}
		for _, tc := range []struct {
			name string
			recs []inbox.Record
		}{
			{"a Seq never assigned", []inbox.Record{a, never}},
			{"Seq 0", []inbox.Record{{Peer: "p1", Expires: T0}}},
			{"no Expires", []inbox.Record{noExpiry}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := st.Untake(bg, tc.recs, []string{"key-a"}); err == nil {
					t.Fatal("Untake accepted it")
				}
				if got := stats(t, st); got.Messages != 0 || got.Replay != 1 {
					t.Fatalf("Stats %+v", got)
				}
			})
		}
		ctx, cancel := context.WithCancel(bg)
		cancel()
		if err := st.Untake(ctx, []inbox.Record{a}, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Untake with a canceled context = %v", err)
		}
	}},

	{"concurrent senders never exceed the bounds, and reach them", func(t *testing.T, s *suite) {
		size := int64(len(msg("p00", "00-000").Payload))
		for _, tc := range []struct {
			name   string
			bounds offline.QueueBounds
			peers  int
			want   offline.QueueFullKind
		}{
			{"messages", offline.QueueBounds{MaxMessages: 23, MaxBytes: 1 << 30, MaxPerPeer: 1 << 20}, 16, offline.QueueFullKindMessages},
			{"bytes", offline.QueueBounds{MaxMessages: 1 << 20, MaxBytes: 13 * size, MaxPerPeer: 1 << 20}, 16, offline.QueueFullKindBytes},
			{"peer", offline.QueueBounds{MaxMessages: 1 << 20, MaxBytes: 1 << 30, MaxPerPeer: 5}, 4, offline.QueueFullKindPeer},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st := s.newStore(t)
				const senders, each = 16, 4
				stored, full := sendAll(t, st, senders, each, tc.bounds, func(g, i int) inbox.Record {
					return msg(fmt.Sprintf("p%02d", g%tc.peers), fmt.Sprintf("%02d-%03d", g, i))
				})
				got := all(t, st)
				if int64(len(got)) != stored {
					t.Fatalf("%d enqueues succeeded, Next returns %d", stored, len(got))
				}
				sts := stats(t, st)
				perPeer := map[string]int{}
				for _, r := range got {
					perPeer[r.Peer]++
				}
				if sts.Messages > tc.bounds.MaxMessages || sts.Bytes > tc.bounds.MaxBytes || sts.Messages != len(got) {
					t.Fatalf("stats %+v over the bounds %+v", sts, tc.bounds)
				}
				for p, n := range perPeer {
					if n > tc.bounds.MaxPerPeer {
						t.Fatalf("peer %s has %d pending, bound %d", p, n, tc.bounds.MaxPerPeer)
					}
				}
				if full[tc.want] == 0 || len(full) != 1 || stored+full[tc.want] != senders*each {
					t.Fatalf("stored %d, refused %v; want refusals of kind %q only", stored, full, tc.want)
				}
				var reached bool
				switch tc.want {
				case offline.QueueFullKindMessages:
					reached = sts.Messages == tc.bounds.MaxMessages
				case offline.QueueFullKindBytes:
					reached = sts.Bytes == tc.bounds.MaxBytes
				case offline.QueueFullKindPeer:
					reached = sts.Messages == tc.peers*tc.bounds.MaxPerPeer
				}
				if !reached {
					t.Fatalf("stats %+v: the bound %q was not reached", sts, tc.want)
				}
			})
		}
	}},

	{"concurrent duplicates store one record", func(t *testing.T, s *suite) {
		st := s.newStore(t)
		var seqs sync.Map
		var dups atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				r, dup, _, err := st.Enqueue(bg, msg("p1", "same"), roomy)
				if err != nil {
					t.Error(err)
				}
				if dup {
					dups.Add(1)
				}
				seqs.Store(r.Seq, true)
			})
		}
		wg.Wait()
		n := 0
		seqs.Range(func(any, any) bool { n++; return true })
		if n != 1 || dups.Load() != 15 || len(all(t, st)) != 1 {
			t.Fatalf("%d distinct seqs, %d dups, %d stored", n, dups.Load(), len(all(t, st)))
		}
	}},

	{"Take and Untake while senders enqueue deliver each record once", func(t *testing.T, s *suite) {
		q := s.newQueue(t, Config{})
		st := q.store()
		const senders, each = 4, 25
		var wg sync.WaitGroup
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					if _, _, full, err := st.Enqueue(bg, msg(fmt.Sprint("p", g), fmt.Sprint(i)), roomy); full != "" || err != nil {
						t.Errorf("Enqueue: %q, %v", full, err)
						return
					}
				}
			})
		}
		delivered := map[uint64]bool{}
		wg.Go(func() {
			for len(delivered) < senders*each {
				rs, err := st.Next(bg, 0, 8)
				if err != nil {
					t.Error(err)
					return
				}
				if len(rs) == 0 {
					time.Sleep(time.Millisecond) // the senders are behind
					continue
				}
				var takes []inbox.Taken
				for _, r := range rs {
					takes = append(takes, inbox.Taken{Seq: r.Seq, ReplayKey: "key-" + r.Peer + "/" + r.MessageID, Until: T0.Add(time.Hour)})
				}
				if replayed, missing, err := st.Take(bg, takes); err != nil || slices.Contains(replayed, true) || slices.Contains(missing, true) {
					t.Errorf("Take = %v, %v, %v", replayed, missing, err)
					return
				}
				// The second half goes back, to be taken again.
				half := rs[len(rs)/2:]
				if len(rs) == 1 {
					half = nil
				}
				var keys []string
				for _, r := range half {
					keys = append(keys, "key-"+r.Peer+"/"+r.MessageID)
				}
				if err := st.Untake(bg, half, keys); err != nil {
					t.Error(err)
					return
				}
				for _, r := range rs[:len(rs)-len(half)] {
					if delivered[r.Seq] {
						t.Errorf("record %d delivered twice", r.Seq)
					}
					delivered[r.Seq] = true
				}
			}
		})
		wg.Wait()
		if got := stats(t, st); got.Messages != 0 || got.Replay != senders*each {
			t.Fatalf("Stats %+v", got)
		}
		st = q.reopen(st)
		if got := stats(t, st); got.Messages != 0 || got.Replay != senders*each {
			t.Fatalf("Stats after reopen %+v", got)
		}
	}},
}
