package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

// takeAll takes the records with the replay keys "key-" + their message
// id, until t0 + 2h, and fails the test unless all are taken fresh.
func takeAll(t *testing.T, s Store, rs []Record) {
	t.Helper()
	var takes []Taken
	for _, r := range rs {
		takes = append(takes, Taken{Seq: r.Seq, ReplayKey: "key-" + r.MessageID, Until: t0.Add(2 * time.Hour)})
	}
	replayed, missing, err := s.Take(bg, takes)
	if err != nil || slices.Contains(replayed, true) || slices.Contains(missing, true) {
		t.Fatalf("Take = %v, %v, %v", replayed, missing, err)
	}
}

func keysOf(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, "key-"+r.MessageID)
	}
	return out
}

func TestUntakePutsRecordsBackInTheirPlaceAndRemovesTheirKeys(t *testing.T) {
	s, path := openNew(t)
	var recs []Record
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		recs = append(recs, mustEnqueue(t, s, msg("p1", id)))
	}
	takeAll(t, s, recs[:4])
	// b and c were taken but never handed over.
	if err := s.Untake(bg, recs[1:3], keysOf(recs[1:3])); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, s *Bolt) {
		t.Helper()
		got := all(t, s)
		if !slices.Equal(seqsOf(got), []uint64{2, 3, 5, 6}) {
			t.Fatalf("pending %v, want [2 3 5 6]", seqsOf(got))
		}
		for _, r := range got {
			if !sameRecord(r, recs[r.Seq-1]) {
				t.Fatalf("record %d = %+v, want %+v", r.Seq, r, recs[r.Seq-1])
			}
		}
		st, _ := s.Stats(bg)
		if want := (Stats{Messages: 4, Bytes: 4 * recs[0].Size(), Replay: 2}); st != want {
			t.Fatalf("Stats %+v, want %+v", st, want)
		}
		// The indexes know them again.
		if r, ok, err := s.Lookup(bg, "task-b"); !ok || err != nil || r.Seq != 2 {
			t.Fatalf("Lookup(task-b) = %d, %v, %v", r.Seq, ok, err)
		}
		if r, dup, _, err := s.Enqueue(bg, msg("p1", "c"), roomy); !dup || err != nil || r.Seq != 3 {
			t.Fatalf("Enqueue of c again = %d, dup %v, %v", r.Seq, dup, err)
		}
	}
	t.Run("in memory", func(t *testing.T) { check(t, s) })
	s.Close()
	s2, rec := openAt(t, path, BoltOptions{})
	if rec != (Recovery{}) {
		t.Fatalf("Recovery %+v", rec)
	}
	t.Run("after reopen", func(t *testing.T) { check(t, s2) })
	// Their keys are gone, the others' kept; a and d stay taken.
	replayed, missing, err := s2.Take(bg, []Taken{
		{Seq: 2, ReplayKey: "key-b", Until: t0.Add(time.Hour)},
		{Seq: 3, ReplayKey: "key-c", Until: t0.Add(time.Hour)},
		{Seq: 5, ReplayKey: "key-a", Until: t0.Add(time.Hour)},
		{Seq: 1, ReplayKey: "key-x", Until: t0.Add(time.Hour)},
		{Seq: 4, ReplayKey: "key-y", Until: t0.Add(time.Hour)},
	})
	if err != nil || !slices.Equal(replayed, []bool{false, false, true, false, false}) || !slices.Equal(missing, []bool{false, false, false, true, true}) {
		t.Fatalf("Take after Untake = %v, %v, %v", replayed, missing, err)
	}
}

func TestUntakeOfARecordStillPendingLeavesItAsItIs(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	b := mustEnqueue(t, s, msg("p1", "b"))
	takeAll(t, s, []Record{a})
	changed := b
	changed.Payload = []byte("changed")
	// b is pending: neither it nor its key (absent) changes; a comes back
	// once, though given twice.
	if err := s.Untake(bg, []Record{changed, a, a}, []string{"key-b", "", "key-a", "key-a"}); err != nil {
		t.Fatal(err)
	}
	got := all(t, s)
	if len(got) != 2 || !sameRecord(got[0], a) || !sameRecord(got[1], b) {
		t.Fatalf("pending %+v", got)
	}
	if st, _ := s.Stats(bg); st.Messages != 2 || st.Replay != 0 || st.Bytes != a.Size()+b.Size() {
		t.Fatalf("Stats %+v", st)
	}
	// Nothing to do is no error.
	if err := s.Untake(bg, []Record{a}, []string{"unknown"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Untake(bg, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestUntakeKeepsTheOrderOfSeqsAndTasks(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	second := msg("p2", "b")
	second.TaskID = a.TaskID // a resume of a's task
	b := mustEnqueue(t, s, second)
	takeAll(t, s, []Record{a})
	if r, _, _ := s.Lookup(bg, a.TaskID); r.Seq != b.Seq {
		t.Fatalf("Lookup = %d", r.Seq)
	}
	if err := s.Untake(bg, []Record{a}, keysOf([]Record{a})); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := s.Lookup(bg, a.TaskID); r.Seq != a.Seq {
		t.Fatalf("Lookup after Untake = %d, want the oldest, %d", r.Seq, a.Seq)
	}
	if got, err := s.Next(bg, 0, 1); err != nil || len(got) != 1 || got[0].Seq != a.Seq {
		t.Fatalf("Next = %v, %v", seqsOf(got), err)
	}
	if ex, err := s.Expired(bg, t0.Add(time.Hour), 10); err != nil || !slices.Equal(seqsOf(ex), []uint64{1, 2}) {
		t.Fatalf("Expired = %v, %v", seqsOf(ex), err)
	}
	// Removed again, the task's next record is found.
	if _, err := s.Remove(bg, []uint64{a.Seq}); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := s.Lookup(bg, a.TaskID); r.Seq != b.Seq {
		t.Fatalf("Lookup after Remove = %d", r.Seq)
	}
}

func TestUntakeDoesNotCheckTheBounds(t *testing.T) {
	s, _ := openNew(t)
	one := offline.QueueBounds{MaxMessages: 1, MaxBytes: 1 << 20, MaxPerPeer: 1}
	a, _, _, _ := s.Enqueue(bg, msg("p1", "a"), one)
	takeAll(t, s, []Record{a})
	if _, _, full, err := s.Enqueue(bg, msg("p1", "b"), one); full != "" || err != nil {
		t.Fatalf("Enqueue b: %q, %v", full, err)
	}
	if err := s.Untake(bg, []Record{a}, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(bg); st.Messages != 2 || st.Replay != 1 {
		t.Fatalf("Stats %+v", st)
	}
}

func TestUntakeRefusesARecordTheStoreNeverAssigned(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	takeAll(t, s, []Record{a})
	never := a
	never.Seq = 7
	noExpiry := a
	noExpiry.Expires = time.Time{}
	for _, tc := range []struct {
		name string
		recs []Record
	}{
		{"a Seq never assigned", []Record{a, never}},
		{"Seq 0", []Record{{Peer: "p1", Expires: t0}}},
		{"no Expires", []Record{noExpiry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Untake(bg, tc.recs, []string{"key-a"})
			if err == nil || strings.Count(err.Error(), "inbox:") != 1 {
				t.Fatalf("Untake = %v", err)
			}
			// Nothing changed: a stays taken, its key kept.
			if st, _ := s.Stats(bg); st.Messages != 0 || st.Replay != 1 {
				t.Fatalf("Stats %+v", st)
			}
		})
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := s.Untake(ctx, []Record{a}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Untake with a canceled context = %v", err)
	}
}

func TestUntakeWhileSendersEnqueueAndTheQueueIsTaken(t *testing.T) {
	s, path := openNew(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				mustEnqueue(t, s, msg(fmt.Sprint("p", g), fmt.Sprint(i)))
			}
		})
	}
	delivered := map[uint64]bool{}
	wg.Go(func() {
		for len(delivered) < 8*50 {
			rs, err := s.Next(bg, 0, 16)
			if err != nil {
				t.Error(err)
				return
			}
			if len(rs) == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			var takes []Taken
			for _, r := range rs {
				takes = append(takes, Taken{Seq: r.Seq, ReplayKey: "key-" + r.Peer + "/" + r.MessageID, Until: t0.Add(time.Hour)})
			}
			if replayed, missing, err := s.Take(bg, takes); err != nil || slices.Contains(replayed, true) || slices.Contains(missing, true) {
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
			if err := s.Untake(bg, half, keys); err != nil {
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
	if st, _ := s.Stats(bg); st.Messages != 0 || st.Replay != 8*50 {
		t.Fatalf("Stats %+v", st)
	}
	s.Close()
	s2, _ := openAt(t, path, BoltOptions{})
	if st, _ := s2.Stats(bg); st.Messages != 0 || st.Replay != 8*50 {
		t.Fatalf("Stats after reopen %+v", st)
	}
}
