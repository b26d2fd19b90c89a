package inbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

var bg = context.Background()

// t0 is the tests' start of time.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a time source for the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// roomy bounds refuse nothing the tests enqueue.
var roomy = offline.QueueBounds{MaxMessages: 1 << 30, MaxBytes: 1 << 40, MaxPerPeer: 1 << 30, RecordTTL: time.Hour}

// dbPath is a fresh queue file path.
func dbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "queue.db") }

// openAt opens a store at path, closed when the test ends.
func openAt(t testing.TB, path string, opts BoltOptions) (*Bolt, Recovery) {
	t.Helper()
	s, rec, err := OpenBolt(path, opts)
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, rec
}

// open opens a store in a fresh file with a clock at t0.
func openNew(t testing.TB) (*Bolt, string) {
	t.Helper()
	path := dbPath(t)
	c := &clock{t: t0}
	s, _ := openAt(t, path, BoltOptions{Now: c.now})
	return s, path
}

// msg is a record of peer with a message id, a task id and a payload
// naming them, expiring an hour after t0.
func msg(peer, id string) Record {
	return Record{Peer: peer, MessageID: id, TaskID: "task-" + id, ContextID: "ctx-" + peer,
		Payload: []byte(fmt.Sprintf(`{"from":%q,"id":%q}`, peer, id)), Expires: t0.Add(time.Hour)}
}

// mustEnqueue enqueues r with roomy bounds and fails the test unless it
// is stored.
func mustEnqueue(t testing.TB, s Store, r Record) Record {
	t.Helper()
	got, dup, full, err := s.Enqueue(bg, r, roomy)
	if err != nil || dup || full != "" {
		t.Fatalf("Enqueue(%s/%s) = dup %v, full %q, %v", r.Peer, r.MessageID, dup, full, err)
	}
	return got
}

// all returns every pending record.
func all(t testing.TB, s Store) []Record {
	t.Helper()
	rs, err := s.Next(bg, 0, 1<<30)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return rs
}

// sameRecord reports whether two records hold the same fields.
func sameRecord(a, b Record) bool {
	return a.Seq == b.Seq && a.Peer == b.Peer && a.MessageID == b.MessageID && a.TaskID == b.TaskID &&
		a.ContextID == b.ContextID && bytes.Equal(a.Payload, b.Payload) && a.Enqueued.Equal(b.Enqueued) && a.Expires.Equal(b.Expires)
}

func seqsOf(rs []Record) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}

// sendAll runs senders goroutines, each enqueueing perSender records made
// by mk, and counts the records stored and the refusals by kind.
func sendAll(t *testing.T, s Store, senders, perSender int, b offline.QueueBounds, mk func(g, i int) Record) (stored int64, full map[offline.QueueFullKind]int64) {
	t.Helper()
	var mu sync.Mutex
	full = map[offline.QueueFullKind]int64{}
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				_, dup, kind, err := s.Enqueue(bg, mk(g, i), b)
				if err != nil || dup {
					t.Errorf("Enqueue: dup %v, %v", dup, err)
					continue
				}
				mu.Lock()
				if kind == "" {
					stored++
				} else {
					full[kind]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return stored, full
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
