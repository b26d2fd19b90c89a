package inbox

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnqueueAssignsIncreasingSeqsAndNextPagesThroughThemInOrder(t *testing.T) {
	s, _ := openNew(t)
	var want []Record
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		r := mustEnqueue(t, s, msg("p1", id))
		if !r.Enqueued.Equal(t0) {
			t.Fatalf("Enqueued = %v, want the store's clock %v", r.Enqueued, t0)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Next(bg, tc.after, tc.n)
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
	st, err := s.Stats(bg)
	if err != nil || st.Messages != 5 || st.Bytes != 5*int64(len(msg("p1", "a").Payload)) || st.Replay != 0 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}

func TestLookupFindsThePendingRecordOfATask(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	second := msg("p2", "x")
	second.TaskID = a.TaskID
	b := mustEnqueue(t, s, second)
	for _, tc := range []struct {
		name    string
		remove  []uint64
		task    string
		wantSeq uint64
	}{
		{"the oldest of a task", nil, a.TaskID, a.Seq},
		{"an unknown task", nil, "nope", 0},
		{"the next once the oldest is removed", []uint64{a.Seq}, a.TaskID, b.Seq},
		{"none once all are removed", []uint64{b.Seq}, a.TaskID, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Remove(bg, tc.remove); err != nil {
				t.Fatal(err)
			}
			r, ok, err := s.Lookup(bg, tc.task)
			if err != nil || ok != (tc.wantSeq != 0) || r.Seq != tc.wantSeq {
				t.Fatalf("Lookup(%q) = %d, %v, %v; want %d", tc.task, r.Seq, ok, err, tc.wantSeq)
			}
		})
	}
}

func TestTakeRemovesRecordsEntersReplayKeysAndReportsReplayedAndMissing(t *testing.T) {
	s, _ := openNew(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		mustEnqueue(t, s, msg("p1", id))
	}
	until := t0.Add(2 * time.Hour)
	for _, tc := range []struct {
		name                      string
		takes                     []Taken
		wantReplayed, wantMissing []bool
		wantPending               []uint64
		wantReplay                int
	}{
		{"a fresh key is entered", []Taken{{Seq: 1, ReplayKey: "obj-1", Until: until}},
			[]bool{false}, []bool{false}, []uint64{2, 3, 4}, 1},
		{"a known key is replayed and its record removed too", []Taken{{Seq: 2, ReplayKey: "obj-1", Until: until}},
			[]bool{true}, []bool{false}, []uint64{3, 4}, 1},
		{"a seq no longer pending is missing", []Taken{{Seq: 1, ReplayKey: "obj-9", Until: until}, {Seq: 3, ReplayKey: "obj-3", Until: until}},
			[]bool{false, false}, []bool{true, false}, []uint64{4}, 2},
		{"the same seq twice in one take is missing the second time", []Taken{{Seq: 4, ReplayKey: "obj-4", Until: until}, {Seq: 4, ReplayKey: "obj-5", Until: until}},
			[]bool{false, false}, []bool{false, true}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replayed, missing, err := s.Take(bg, tc.takes)
			if err != nil || !slices.Equal(replayed, tc.wantReplayed) || !slices.Equal(missing, tc.wantMissing) {
				t.Fatalf("Take = %v, %v, %v; want %v, %v", replayed, missing, err, tc.wantReplayed, tc.wantMissing)
			}
			if got := seqsOf(all(t, s)); !slices.Equal(got, tc.wantPending) {
				t.Fatalf("pending %v, want %v", got, tc.wantPending)
			}
			if st, _ := s.Stats(bg); st.Replay != tc.wantReplay || st.Messages != len(tc.wantPending) {
				t.Fatalf("Stats %+v, want %d replay keys", st, tc.wantReplay)
			}
		})
	}
}

func TestTakeOfTwoRecordsWithOneKeyReportsTheSecondReplayed(t *testing.T) {
	s, _ := openNew(t)
	mustEnqueue(t, s, msg("p1", "a"))
	mustEnqueue(t, s, msg("p1", "b"))
	replayed, missing, err := s.Take(bg, []Taken{{Seq: 1, ReplayKey: "k", Until: t0.Add(time.Hour)}, {Seq: 2, ReplayKey: "k", Until: t0.Add(time.Hour)}})
	if err != nil || !slices.Equal(replayed, []bool{false, true}) || !slices.Equal(missing, []bool{false, false}) {
		t.Fatalf("Take = %v, %v, %v", replayed, missing, err)
	}
}

func TestRemoveReturnsTheRecordsStillPending(t *testing.T) {
	s, _ := openNew(t)
	a := mustEnqueue(t, s, msg("p1", "a"))
	mustEnqueue(t, s, msg("p1", "b"))
	c := mustEnqueue(t, s, msg("p2", "c"))
	for _, tc := range []struct {
		name        string
		seqs        []uint64
		wantRemoved []uint64
		wantPending []uint64
	}{
		{"pending ones, in the order asked", []uint64{3, 1}, []uint64{3, 1}, []uint64{2}},
		{"gone and unknown ones are skipped", []uint64{1, 99, 3}, nil, []uint64{2}},
		{"nothing asked removes nothing", nil, nil, []uint64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Remove(bg, tc.seqs)
			if err != nil || !slices.Equal(seqsOf(got), tc.wantRemoved) {
				t.Fatalf("Remove(%v) = %v, %v; want %v", tc.seqs, seqsOf(got), err, tc.wantRemoved)
			}
			if p := seqsOf(all(t, s)); !slices.Equal(p, tc.wantPending) {
				t.Fatalf("pending %v, want %v", p, tc.wantPending)
			}
		})
	}
	// The duplicate index forgets removed records: the same message
	// enqueues again.
	for _, r := range []Record{a, c} {
		if _, dup, _, err := s.Enqueue(bg, msg(r.Peer, r.MessageID), roomy); dup || err != nil {
			t.Fatalf("re-enqueue of removed %s: dup %v, %v", r.MessageID, dup, err)
		}
	}
}

func TestExpiredReturnsExpiredRecordsOldestFirstAndForgetsPassedReplayKeys(t *testing.T) {
	s, _ := openNew(t)
	for i, ttl := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour, time.Hour, 5 * time.Hour} {
		r := msg("p1", string(rune('a'+i)))
		r.Expires = t0.Add(ttl)
		mustEnqueue(t, s, r)
	}
	if _, _, err := s.Take(bg, []Taken{
		{Seq: 5, ReplayKey: "short", Until: t0.Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	// A record taken earlier left a key that lives longer.
	if _, _, err := s.Take(bg, []Taken{{Seq: 3, ReplayKey: "long", Until: t0.Add(10 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		now        time.Time
		n          int
		wantSeqs   []uint64
		wantReplay int
	}{
		{"nothing expired yet", t0, 10, nil, 2},
		{"expiry is inclusive, oldest first, keys forgotten", t0.Add(time.Hour), 10, []uint64{2, 4}, 1},
		{"n bounds the answer", t0.Add(4 * time.Hour), 2, []uint64{1, 2}, 1},
		{"later keys are kept until they pass", t0.Add(10 * time.Hour), 10, []uint64{1, 2, 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Expired(bg, tc.now, tc.n)
			if err != nil || !slices.Equal(seqsOf(got), tc.wantSeqs) {
				t.Fatalf("Expired = %v, %v; want %v", seqsOf(got), err, tc.wantSeqs)
			}
			if st, _ := s.Stats(bg); st.Replay != tc.wantReplay {
				t.Fatalf("replay keys %d, want %d", st.Replay, tc.wantReplay)
			}
		})
	}
	// Expired only lists: the records are still pending until removed.
	if got := seqsOf(all(t, s)); !slices.Equal(got, []uint64{1, 2, 4}) {
		t.Fatalf("pending %v", got)
	}
	// A forgotten key is fresh again.
	mustEnqueue(t, s, msg("p1", "f"))
	replayed, _, err := s.Take(bg, []Taken{{Seq: 6, ReplayKey: "short", Until: t0.Add(20 * time.Hour)}})
	if err != nil || replayed[0] {
		t.Fatalf("Take of a forgotten key: replayed %v, %v", replayed, err)
	}
}

func TestRecordsSurviveCloseAndReopenInOrderWithTheirSeqs(t *testing.T) {
	s, path := openNew(t)
	var want []Record
	for _, id := range []string{"a", "b", "c", "d"} {
		want = append(want, mustEnqueue(t, s, msg("p"+id, id)))
	}
	if _, err := s.Remove(bg, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	want = slices.Delete(want, 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, rec := openAt(t, path, BoltOptions{})
	if rec != (Recovery{}) {
		t.Fatalf("Recovery of a sound file = %+v", rec)
	}
	got := all(t, s2)
	if len(got) != len(want) {
		t.Fatalf("after reopen %v, want %v", seqsOf(got), seqsOf(want))
	}
	for i := range got {
		if !sameRecord(got[i], want[i]) {
			t.Fatalf("after reopen %+v, want %+v", got[i], want[i])
		}
	}
	// The indexes are rebuilt: duplicates, tasks, occupancy.
	if _, dup, _, err := s2.Enqueue(bg, msg("pa", "a"), roomy); !dup || err != nil {
		t.Fatalf("duplicate after reopen: dup %v, %v", dup, err)
	}
	if r, ok, _ := s2.Lookup(bg, "task-c"); !ok || r.Seq != 3 {
		t.Fatalf("Lookup after reopen = %d, %v", r.Seq, ok)
	}
	if st, _ := s2.Stats(bg); st.Messages != 3 {
		t.Fatalf("Stats after reopen %+v", st)
	}
}

func TestSeqsAreNeverReusedAfterReopen(t *testing.T) {
	s, path := openNew(t)
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, msg("p1", id))
	}
	// An empty queue keeps its last Seq too.
	if _, err := s.Remove(bg, []uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, _ := openAt(t, path, BoltOptions{})
	if r := mustEnqueue(t, s2, msg("p1", "d")); r.Seq != 4 {
		t.Fatalf("Seq after reopen = %d, want 4", r.Seq)
	}
}

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

func TestACanceledContextStoresNothing(t *testing.T) {
	s, _ := openNew(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, _, _, err := s.Enqueue(ctx, msg("p1", "a"), roomy); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enqueue = %v", err)
	}
	if _, _, err := s.Take(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take = %v", err)
	}
	if got := all(t, s); len(got) != 0 {
		t.Fatalf("stored %v", seqsOf(got))
	}
}

func TestEveryCallAfterCloseReturnsErrClosed(t *testing.T) {
	s, _ := openNew(t)
	mustEnqueue(t, s, msg("p1", "a"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	for name, call := range map[string]func() error{
		"Enqueue": func() error { _, _, _, err := s.Enqueue(bg, msg("p1", "b"), roomy); return err },
		"Next":    func() error { _, err := s.Next(bg, 0, 1); return err },
		"Lookup":  func() error { _, _, err := s.Lookup(bg, "task-a"); return err },
		"Take":    func() error { _, _, err := s.Take(bg, []Taken{{Seq: 1}}); return err },
		"Untake":  func() error { return s.Untake(bg, []Record{msg("p1", "a")}, nil) },
		"Remove":  func() error { _, err := s.Remove(bg, []uint64{1}); return err },
		"Expired": func() error { _, err := s.Expired(bg, t0, 1); return err },
		"Stats":   func() error { _, err := s.Stats(bg); return err },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v", name, err)
		}
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
