package inbox_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/inboxtest"
	"github.com/a2abind/a2abind/agent/sealed"
)

// The contract of every store (agent/inbox/inboxtest) on the bbolt store,
// in clear and sealing the payloads. At the end of every case each file
// is closed and opened again: it needs no repair (a zero inbox.Recovery)
// and holds the same records and replay keys.
func TestContract(t *testing.T) {
	k, err := sealed.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := sealed.New(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range []*sealed.Ring{nil, ring} {
		name := "bolt"
		if keys != nil {
			name = "bolt sealing"
		}
		t.Run(name, func(t *testing.T) {
			var paths sync.Map // *inbox.Bolt -> its file
			open := func(t *testing.T, c inboxtest.Config) func() inbox.Store {
				path := filepath.Join(t.TempDir(), "queue.db")
				return func() inbox.Store {
					s, _, err := inbox.OpenBolt(path, inbox.BoltOptions{Now: c.Now, MaxReplay: c.MaxReplay, Keys: keys})
					if err != nil {
						t.Fatalf("OpenBolt: %v", err)
					}
					t.Cleanup(func() { s.Close() })
					paths.Store(s, path)
					return s
				}
			}
			reopens := func(t *testing.T, s inbox.Store) {
				t.Helper()
				path, _ := paths.Load(s)
				want, wantStats := pending(t, s)
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				again, rec, err := inbox.OpenBolt(path.(string), inbox.BoltOptions{Keys: keys})
				if err != nil || rec != (inbox.Recovery{}) {
					t.Fatalf("reopened: Recovery %+v, %v", rec, err)
				}
				defer again.Close()
				got, gotStats := pending(t, again)
				if gotStats != wantStats || len(got) != len(want) {
					t.Fatalf("reopened: %d records, %+v; before, %d, %+v", len(got), gotStats, len(want), wantStats)
				}
				for i := range got {
					g, w := got[i], want[i]
					if g.Seq != w.Seq || g.Peer != w.Peer || g.MessageID != w.MessageID || g.TaskID != w.TaskID || g.ContextID != w.ContextID ||
						!bytes.Equal(g.Payload, w.Payload) || !g.Enqueued.Equal(w.Enqueued) || !g.Expires.Equal(w.Expires) {
						t.Fatalf("reopened: record %+v, before %+v", g, w)
					}
				}
			}
			inboxtest.Run(t, open, inboxtest.WithCheck(reopens))
		})
	}
}

// pending returns the records and Stats of s.
func pending(t *testing.T, s inbox.Store) ([]inbox.Record, inbox.Stats) {
	t.Helper()
	rs, err := s.Next(context.Background(), 0, 1<<30)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return rs, st
}
