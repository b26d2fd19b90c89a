package agent

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
)

// TestEncodeTaskIsAppendJSON checks that encodeTask makes what
// a2a.Task.AppendJSON makes, byte for byte, with and without a previous
// encoding to copy the history's messages from, and that the buffer it
// makes keeps no more than an eighth of the encoding's size unused beside
// the envelope's rooms.
func TestEncodeTaskIsAppendJSON(t *testing.T) {
	text := func(id, s string) a2a.Message {
		return a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(s)}}}
	}
	long := strings.Repeat("a line\n", 2000)
	base := a2a.Task{ID: "t1", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted}, History: []a2a.Message{text("m1", long)}}
	done := base
	done.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted}
	done.History = append(append([]a2a.Message(nil), base.History...), text("m2", "done"))
	done.Artifacts = []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}
	done.Metadata = map[string]any{"k": "<v>"}
	other := done
	other.History = []a2a.Message{text("m9", "else"), text("m2", "done")}

	// Large tasks: a text of 1 MB plain, escaped and with a burst of
	// escapes the size estimate does not see, raw parts, several messages
	// and metadata.
	big := func(hist ...a2a.Message) a2a.Task {
		return a2a.Task{ID: "t2", ContextID: "c2", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: "2026-12-01T10:00:00Z"}, History: hist}
	}
	raw := make([]byte, 700_000)
	for i := range raw {
		raw[i] = byte(i)
	}
	meta := map[string]any{"source": "test \"quoted\"", "n": 42.0, "tags": []any{"a", "b"}}
	plain := big(text("m1", benchLikeText(1_000_000)))
	quoted := big(text("m1", strings.Repeat(`say "hi" \ `, 100_000)))
	burst := big(text("m1", strings.Repeat("x", 210_000)+strings.Repeat("\n", 50_000)+strings.Repeat("x", 740_000)))
	rawParts := big(a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{
		{Content: a2a.PartRaw(raw), MediaType: "application/octet-stream", Filename: "blob.bin"},
		{Content: a2a.PartText("and a caption"), Metadata: meta}}})
	several := big(text("m1", benchLikeText(400_000)), text("m2", "a reply"), text("m3", strings.Repeat("é\t", 100_000)))
	several.Metadata = meta
	several.Artifacts = []a2a.Artifact{{ArtifactID: "a1", Name: "echo", Parts: []a2a.Part{{Content: a2a.PartText(benchLikeText(300_000))}}, Metadata: meta}}
	severalMore := several
	severalMore.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: &a2a.Message{MessageID: "m4", Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText("done")}}}}
	severalMore.History = append(append([]a2a.Message(nil), several.History...), *severalMore.Status.Message)
	// A small task (plainSize) whose every byte is escaped in six: its
	// encoding grows past envelopeMin.
	escapedSmall := a2a.Task{ID: "t3", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}, History: []a2a.Message{text("m1", strings.Repeat("\x01", 3500))}}

	cases := []struct {
		name string
		prev *a2a.Task
		t    a2a.Task
		// missed says the size estimate falls short of the encoding.
		missed bool
	}{
		{"no history", nil, a2a.Task{ID: "t0", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}, false},
		{"empty history", nil, a2a.Task{ID: "t0", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}, History: []a2a.Message{}}, false},
		{"created", nil, base, false},
		{"completed, history, artifacts and metadata", nil, done, false},
		{"completed after created: history copied", &base, done, false},
		{"same history: all copied", &done, done, false},
		{"a different history: encoded again", &base, other, false},
		{"a shorter history: its first message copied", &done, base, false},
		{"1 MB of plain text", nil, plain, false},
		{"1 MB of text, a quarter escaped", nil, quoted, false},
		{"1 MB of text with a burst of escapes the estimate misses", nil, burst, true},
		{"raw parts", nil, rawParts, false},
		{"small, every byte escaped: encoded past the envelope's threshold", nil, escapedSmall, false},
		{"several messages, an artifact and metadata", nil, several, false},
		{"several messages, one more copied from the previous", &several, severalMore, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.t.ID == escapedSmall.ID && (jsonsize.PlainTask(&tc.t, 0, 0) > smallTask || envelopeMin > 6*3500) {
				t.Fatalf("plainSize %d: not a small task, or too short to pass envelopeMin", jsonsize.PlainTask(&tc.t, 0, 0))
			}
			var prev *taskEnc
			if tc.prev != nil {
				var err error
				if prev, err = encodeTask(tc.prev, nil); err != nil {
					t.Fatal(err)
				}
			}
			got, err := encodeTask(&tc.t, prev)
			if err != nil {
				t.Fatal(err)
			}
			want, err := tc.t.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.b, want) {
				t.Fatalf("got  %.300s\nwant %.300s", got.b, want)
			}
			if est := jsonsize.Task(&tc.t); (est < len(want)) != tc.missed {
				t.Errorf("size estimate %d for %d bytes: short %v, want %v", est, len(want), est < len(want), tc.missed)
			}
			checkEncodingBuffer(t, got)
		})
	}
	// The copy is a copy: a previous encoding whose history bytes differ
	// from the messages (which a run never produces) shows through.
	prev, err := encodeTask(&base, nil)
	if err != nil {
		t.Fatal(err)
	}
	marked := bytes.Replace(prev.b, []byte("a line"), []byte("A LINE"), 1)
	prev.b = marked
	got, err := encodeTask(&done, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got.b, []byte("A LINE")) {
		t.Fatal("the history's bytes were encoded again, not copied from the previous encoding")
	}
}

// checkEncodingBuffer checks the layout of an encoding's buffer: a large
// task after the envelope's room, with room for the envelope's tail after
// it, a small one alone; its capacity clipped; and at most an eighth of the
// task's size (and 256 bytes) unused.
func checkEncodingBuffer(t *testing.T, e *taskEnc) {
	t.Helper()
	n := len(e.b)
	// The rooms depend on the estimate of the size, within an eighth of
	// it.
	room, tail := e.room, 0
	switch {
	case n >= envelopeMin:
		room = envelopeRoom
	case n < envelopeMin-envelopeMin/8:
		room = 0
	}
	if room > 0 {
		tail = envelopeTail
	}
	if e.room != room || len(e.buf) != room+n || &e.buf[room] != &e.b[0] {
		t.Fatalf("the encoding of %d bytes is not the buffer past %d bytes of room, want %d", n, e.room, room)
	}
	if cap(e.b) != n {
		t.Errorf("the encoding's capacity is %d, not its length %d: the store could append into the reply's room", cap(e.b), n)
	}
	unused := cap(e.buf) - len(e.buf)
	if unused < tail {
		t.Errorf("%d bytes left after the task, %d needed for the envelope's tail", unused, tail)
	}
	if unused > n/8+tail+256 {
		t.Errorf("%d bytes unused after a task of %d: the store would keep them", unused, n)
	}
}

// benchLikeText is n bytes of prose, a newline every 100 bytes or so.
func benchLikeText(n int) string {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// TestEncodeTaskAllocatesOnce checks that a large task is encoded into one
// buffer allocated at about its size: the bytes allocated by encodeTask are
// within 1/32 of the encoding's size (and 4 KiB for the ids and the
// head), so the buffer neither grew while the text was encoded nor was
// copied to trim it; and that the next encoding, which copies the history,
// allocates as little.
func TestEncodeTaskAllocatesOnce(t *testing.T) {
	msg := func(id, s string) a2a.Message {
		return a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(s)}}}
	}
	raw := make([]byte, 750_000)
	created := func(m a2a.Message) a2a.Task {
		return a2a.Task{ID: "t", ContextID: "c", Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted}, History: []a2a.Message{m}}
	}
	cases := []struct {
		name string
		task a2a.Task
	}{
		{"1 MB of prose", created(msg("m1", benchLikeText(1_000_000)))},
		{"1 MB of text, a quarter escaped", created(msg("m1", strings.Repeat(`say "hi" \ `, 100_000)))},
		{"1 MB of newlines", created(msg("m1", strings.Repeat("\n", 1_000_000)))},
		{"750 KB raw", created(a2a.Message{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartRaw(raw)}}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var first, next *taskEnc
			firstAlloc := allocatedBy(t, func() {
				var err error
				if first, err = encodeTask(&tc.task, nil); err != nil {
					t.Fatal(err)
				}
			})
			done := tc.task
			done.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2026-12-01T10:00:00Z"}
			nextAlloc := allocatedBy(t, func() {
				var err error
				if next, err = encodeTask(&done, first); err != nil {
					t.Fatal(err)
				}
			})
			for _, c := range []struct {
				what  string
				alloc uint64
				e     *taskEnc
			}{{"created", firstAlloc, first}, {"completed", nextAlloc, next}} {
				n := uint64(len(c.e.b))
				if c.alloc > n+n/32+4096 {
					t.Errorf("%s: %d bytes allocated for an encoding of %d", c.what, c.alloc, n)
				}
			}
		})
	}
}

// allocatedBy returns the bytes the process allocated while f ran, the
// least of three runs (another goroutine may allocate during one).
func allocatedBy(t *testing.T, f func()) uint64 {
	t.Helper()
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestEncodeTaskThroughATurn encodes the snapshots of a turn as the run
// makes them (copy on write: messages appended, artifacts added and grown,
// statuses replaced), each from the previous encoding, and checks each is
// what a2a.Task.AppendJSON makes; the bytes of the messages and artifacts
// an event left alone are copied from the previous encoding (a marked
// previous encoding shows through), those of an artifact whose parts grew
// are encoded again.
func TestEncodeTaskThroughATurn(t *testing.T) {
	msg := func(id, s string) a2a.Message {
		return a2a.Message{MessageID: id, Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText(s)}}}
	}
	text := func(s string) []a2a.Part { return []a2a.Part{{Content: a2a.PartText(s)}} }
	snap := a2a.Task{ID: "t", ContextID: "c", Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted},
		History: []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: text(benchLikeText(300_000)), Metadata: map[string]any{"k": "v"}}}}
	// The events, as run.status and run.artifact apply them.
	status := func(state a2a.TaskState, m *a2a.Message) func(*a2a.Task) {
		return func(t *a2a.Task) {
			t.Status = &a2a.TaskStatus{State: state, Message: m}
			if m != nil {
				t.History = append(slices.Clip(t.History), *m)
			}
		}
	}
	addArtifact := func(a a2a.Artifact) func(*a2a.Task) {
		return func(t *a2a.Task) { t.Artifacts = append(slices.Clip(t.Artifacts), a) }
	}
	growArtifact := func(id string, parts []a2a.Part) func(*a2a.Task) {
		return func(t *a2a.Task) {
			t.Artifacts = slices.Clone(t.Artifacts)
			for i := range t.Artifacts {
				if t.Artifacts[i].ArtifactID == id {
					t.Artifacts[i].Parts = append(slices.Clip(t.Artifacts[i].Parts), parts...)
				}
			}
		}
	}
	working := msg("m2", "working \"on\" it")
	done := msg("m3", "done")
	steps := []struct {
		name  string
		apply func(*a2a.Task)
		// copied and encoded are texts the step's encoding must copy
		// from the previous one, and encode again.
		copied, encoded []string
	}{
		{"working with a message", status(a2a.TaskStateWorking, &working), []string{"m1"}, nil},
		{"an artifact", addArtifact(a2a.Artifact{ArtifactID: "a1", Name: "echo", Parts: text(benchLikeText(200_000)), Metadata: map[string]any{"n": 1.0}}), []string{"m1", "m2"}, nil},
		{"a second artifact", addArtifact(a2a.Artifact{ArtifactID: "a2", Parts: text("second")}), []string{"m1", "m2", "a1"}, nil},
		{"the first artifact grows", growArtifact("a1", text("more")), []string{"m1", "m2"}, []string{"a1", "a2"}},
		{"the second artifact grows by nothing", growArtifact("a2", nil), []string{"m1", "m2", "a1", "a2"}, nil},
		{"completed with a message", status(a2a.TaskStateCompleted, &done), []string{"m1", "m2", "a1", "a2"}, nil},
	}
	prev, err := encodeTask(&snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			next := snap
			st.apply(&next)
			// Mark the previous encoding: an element copied from it shows
			// the mark, one encoded again does not.
			marked := markElements(t, prev)
			got, err := encodeTask(&next, marked)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range st.copied {
				if !bytes.Contains(got.b, []byte(markOf(name))) {
					t.Errorf("%s was encoded again, not copied", name)
				}
			}
			for _, name := range st.encoded {
				if bytes.Contains(got.b, []byte(markOf(name))) {
					t.Errorf("%s was copied, though it changed", name)
				}
			}
			// Unmarked, the same step encodes to AppendJSON's bytes.
			if got, err = encodeTask(&next, prev); err != nil {
				t.Fatal(err)
			}
			want, err := next.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.b, want) {
				t.Fatalf("got  %.300s\nwant %.300s", got.b, want)
			}
			checkEncodingBuffer(t, got)
			snap, prev = next, got
		})
	}
}

// markOf is the mark markElements puts in the element of id.
func markOf(id string) string { return "<" + id + ">" }

// markElements returns a copy of e whose messages and artifacts begin
// with the mark of their id (in place of as many bytes of the element),
// so the elements an encoding copies from it can be told.
func markElements(t *testing.T, e *taskEnc) *taskEnc {
	t.Helper()
	m := &taskEnc{b: bytes.Clone(e.b), hist: e.hist, arts: e.arts}
	mark := func(start int, ends []int, ids []string) {
		for i, id := range ids {
			at := start
			if i > 0 {
				at = ends[i-1] + 1
			}
			if ends[i]-at < len(markOf(id)) {
				t.Fatalf("element %s of %d bytes", id, ends[i]-at)
			}
			copy(m.b[at:], markOf(id))
		}
	}
	ids := make([]string, len(e.hist.list))
	for i := range e.hist.list {
		ids[i] = e.hist.list[i].MessageID
	}
	mark(e.hist.start, e.hist.ends, ids)
	ids = make([]string, len(e.arts.list))
	for i := range e.arts.list {
		ids[i] = e.arts.list[i].ArtifactID
	}
	mark(e.arts.start, e.arts.ends, ids)
	return m
}

// BenchmarkEncodeTask is the encoding of a task a message of 300 B
// created (for the store) and of the same task completed (its history
// copied from the first encoding): the two encodings of a turn that
// completes at once.
func BenchmarkEncodeTask(b *testing.B) {
	line := "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	msg := a2a.Message{MessageID: "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77", ContextID: "6f1c2d9e-8a77-4b6c-9f2a-14f1e4d7b9a5",
		TaskID: "9a55-3f1c-4d7b-8a77-0b6cf2a14f1e", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat(line, 4)[:300])}}}
	created := a2a.Task{ID: msg.TaskID, ContextID: msg.ContextID, History: []a2a.Message{msg},
		Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: "2026-12-02T03:45:33.123456789Z"}}
	done := created
	done.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2026-12-02T03:45:33.123556789Z"}
	first, err := encodeTask(&created, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("created/300B", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeTask(&created, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("completed/300B", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeTask(&done, first); err != nil {
				b.Fatal(err)
			}
		}
	})
}
