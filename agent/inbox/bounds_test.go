package inbox

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

func TestEachBoundRefusesWithItsKindAndStoresNothing(t *testing.T) {
	size := int64(len(msg("p1", "x").Payload))
	for _, tc := range []struct {
		name   string
		bounds offline.QueueBounds
		queued []Record // enqueued first, with roomy bounds
		next   Record
		want   offline.QueueFullKind
	}{
		{"messages: the global count", offline.QueueBounds{MaxMessages: 2, MaxBytes: 1 << 20, MaxPerPeer: 10},
			[]Record{msg("p1", "a"), msg("p2", "b")}, msg("p3", "x"), offline.QueueFullKindMessages},
		{"bytes: the global size", offline.QueueBounds{MaxMessages: 10, MaxBytes: 3*size - 1, MaxPerPeer: 10},
			[]Record{msg("p1", "a"), msg("p2", "b")}, msg("p3", "x"), offline.QueueFullKindBytes},
		{"peer: the sender's pending count", offline.QueueBounds{MaxMessages: 10, MaxBytes: 1 << 20, MaxPerPeer: 2},
			[]Record{msg("p1", "a"), msg("p1", "b"), msg("p2", "c")}, msg("p1", "x"), offline.QueueFullKindPeer},
		{"messages before bytes and peer", offline.QueueBounds{MaxMessages: 1, MaxBytes: 1, MaxPerPeer: 1},
			[]Record{msg("p1", "a")}, msg("p1", "x"), offline.QueueFullKindMessages},
		{"bytes before peer", offline.QueueBounds{MaxMessages: 10, MaxBytes: size, MaxPerPeer: 1},
			[]Record{msg("p1", "a")}, msg("p1", "x"), offline.QueueFullKindBytes},
		{"an empty queue with zero bounds", offline.QueueBounds{}, nil, msg("p1", "x"), offline.QueueFullKindMessages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openNew(t)
			for _, r := range tc.queued {
				mustEnqueue(t, s, r)
			}
			before, _ := s.Stats(bg)
			got, dup, full, err := s.Enqueue(bg, tc.next, tc.bounds)
			if err != nil || dup || full != tc.want || got.Seq != 0 {
				t.Fatalf("Enqueue = seq %d, dup %v, full %q, %v; want full %q", got.Seq, dup, full, err, tc.want)
			}
			after, _ := s.Stats(bg)
			if after != before || len(all(t, s)) != len(tc.queued) {
				t.Fatalf("stats %+v after the refusal, %+v before", after, before)
			}
			if _, ok, _ := s.Lookup(bg, tc.next.TaskID); ok {
				t.Fatal("the refused record's task is indexed")
			}
			// Within the bounds again, it is stored.
			if _, _, full, err := s.Enqueue(bg, tc.next, roomy); full != "" || err != nil {
				t.Fatalf("with room: full %q, %v", full, err)
			}
		})
	}
}

func TestADuplicateReturnsTheFirstRecordAndStoresNothing(t *testing.T) {
	s, _ := openNew(t)
	first := mustEnqueue(t, s, msg("p1", "a"))
	for _, tc := range []struct {
		name    string
		r       Record
		bounds  offline.QueueBounds
		wantDup bool
	}{
		{"same peer and message id", msg("p1", "a"), roomy, true},
		{"a duplicate is reported even when the queue is full", msg("p1", "a"), offline.QueueBounds{}, true},
		{"same message id from another peer is not", msg("p2", "a"), roomy, false},
		{"an empty message id never matches", Record{Peer: "p1", Expires: t0.Add(time.Hour)}, roomy, false},
		{"nor does a second one", Record{Peer: "p1", Expires: t0.Add(time.Hour)}, roomy, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := s.Stats(bg)
			got, dup, full, err := s.Enqueue(bg, tc.r, tc.bounds)
			if err != nil || full != "" || dup != tc.wantDup {
				t.Fatalf("Enqueue = dup %v, full %q, %v; want dup %v", dup, full, err, tc.wantDup)
			}
			after, _ := s.Stats(bg)
			if tc.wantDup {
				if !sameRecord(got, first) || after != before {
					t.Fatalf("dup returned %+v (want %+v), stats %+v -> %+v", got, first, before, after)
				}
			} else if after.Messages != before.Messages+1 {
				t.Fatalf("stats %+v -> %+v", before, after)
			}
		})
	}
}

func TestAFullReplayCacheRefusesWithKindMessages(t *testing.T) {
	s, _ := openAt(t, dbPath(t), BoltOptions{MaxReplay: 2})
	for i := range 3 {
		mustEnqueue(t, s, msg("p1", fmt.Sprint(i)))
	}
	if _, _, err := s.Take(bg, []Taken{{Seq: 1, ReplayKey: "k1", Until: t0.Add(time.Hour)}, {Seq: 2, ReplayKey: "k2", Until: t0.Add(2 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, dup, full, err := s.Enqueue(bg, msg("p1", "x"), roomy); full != offline.QueueFullKindMessages || dup || err != nil {
		t.Fatalf("with the replay cache full: full %q, dup %v, %v", full, dup, err)
	}
	// A key forgotten makes room again.
	if _, err := s.Expired(bg, t0.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	if _, _, full, err := s.Enqueue(bg, msg("p1", "x"), roomy); full != "" || err != nil {
		t.Fatalf("after a key expired: full %q, %v", full, err)
	}
}

func TestReplayKeysSurviveReopenAndAreReportedReplayedByTake(t *testing.T) {
	s, path := openNew(t)
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, msg("p1", id))
	}
	if _, _, err := s.Take(bg, []Taken{{Seq: 1, ReplayKey: "obj-a", Until: t0.Add(time.Hour)}, {Seq: 2, ReplayKey: "obj-b", Until: t0.Add(3 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, _ := openAt(t, path, BoltOptions{})
	if st, _ := s2.Stats(bg); st.Replay != 2 || st.Messages != 1 {
		t.Fatalf("Stats after reopen %+v", st)
	}
	mustEnqueue(t, s2, msg("p1", "d"))
	replayed, missing, err := s2.Take(bg, []Taken{{Seq: 3, ReplayKey: "obj-a", Until: t0.Add(time.Hour)}, {Seq: 4, ReplayKey: "obj-new", Until: t0.Add(time.Hour)}})
	if err != nil || !slices.Equal(replayed, []bool{true, false}) || !slices.Equal(missing, []bool{false, false}) {
		t.Fatalf("Take after reopen = %v, %v, %v", replayed, missing, err)
	}
	// Expired forgets the passed keys, for good.
	if _, err := s2.Expired(bg, t0.Add(2*time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3, _ := openAt(t, path, BoltOptions{})
	if st, _ := s3.Stats(bg); st.Replay != 1 {
		t.Fatalf("replay keys after expiry and reopen: %+v", st)
	}
}
