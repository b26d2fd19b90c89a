package inbox

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The inbox.Store contract (agent/inbox/inboxtest) runs on Bolt in
// contract_test.go; the tests here are of what is the file's alone.

// A record without Expires is refused with errNoExpiry.
func TestEnqueueRefusesBadInput(t *testing.T) {
	s, _ := openNew(t)
	noExpiry := msg("p1", "a")
	noExpiry.Expires = time.Time{}
	if _, _, _, err := s.Enqueue(bg, noExpiry, roomy); !errors.Is(err, errNoExpiry) {
		t.Fatalf("a record without Expires: %v", err)
	}
	if st, _ := s.Stats(bg); st.Messages != 0 {
		t.Fatalf("stored %+v", st)
	}
}

func TestAFileLockedByAnotherOpenFailsAfterTheLockTimeout(t *testing.T) {
	s, path := openNew(t)
	mustEnqueue(t, s, msg("p1", "a"))
	for _, tc := range []struct {
		name string
		opts BoltOptions
	}{
		{"a short lock timeout", BoltOptions{LockTimeout: 100 * time.Millisecond}},
		{"a lock timeout longer than the recover timeout", BoltOptions{LockTimeout: 300 * time.Millisecond, RecoverTimeout: 50 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, rec, err := OpenBolt(path, tc.opts)
			if err == nil || !strings.Contains(err.Error(), "locked") || rec.Damaged {
				t.Fatalf("second OpenBolt = %+v, %v", rec, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
			// The locked file was left alone.
			if got := all(t, s); len(got) != 1 {
				t.Fatalf("pending %v", seqsOf(got))
			}
			if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
				t.Fatalf("moved aside: %v", m)
			}
		})
	}
}

// An Untake refused (a record the store never assigned, Seq 0, no
// Expires) says "inbox:" once in its error.
func TestARefusedUntakeSaysInboxOnce(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	if _, _, err := s.Take(bg, []Taken{{Seq: a.Seq, ReplayKey: "key-a", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	never := a
	never.Seq = 7
	noExpiry := a
	noExpiry.Expires = time.Time{}
	for _, recs := range [][]Record{{a, never}, {{Peer: "p1", Expires: t0}}, {noExpiry}} {
		if err := s.Untake(bg, recs, []string{"key-a"}); err == nil || strings.Count(err.Error(), "inbox:") != 1 {
			t.Fatalf("Untake of Seqs %v = %v", seqsOf(recs), err)
		}
	}
}
