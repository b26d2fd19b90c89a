package agent

import (
	"bytes"
	"runtime"
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
		{"a shorter history: encoded again", &done, base, false},
		{"1 MB of plain text", nil, plain, false},
		{"1 MB of text, a quarter escaped", nil, quoted, false},
		{"1 MB of text with a burst of escapes the estimate misses", nil, burst, true},
		{"raw parts", nil, rawParts, false},
		{"several messages, an artifact and metadata", nil, several, false},
		{"several messages, one more copied from the previous", &several, severalMore, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
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

// checkEncodingBuffer checks the layout of an encoding's buffer: the task
// after the envelope's room, its capacity clipped, room for the envelope's
// tail, and at most an eighth of the task's size (and 256 bytes) unused.
func checkEncodingBuffer(t *testing.T, e *taskEnc) {
	t.Helper()
	n := len(e.b)
	if len(e.buf) != envelopeRoom+n || &e.buf[envelopeRoom] != &e.b[0] {
		t.Fatalf("the encoding is not the buffer past its %d bytes of room", envelopeRoom)
	}
	if cap(e.b) != n {
		t.Errorf("the encoding's capacity is %d, not its length %d: the store could append into the reply's room", cap(e.b), n)
	}
	unused := cap(e.buf) - len(e.buf)
	if unused < envelopeTail {
		t.Errorf("%d bytes left after the task, %d needed for the envelope's tail", unused, envelopeTail)
	}
	if unused > n/8+envelopeTail+256 {
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

// allocatedBy returns the bytes the process allocated while f ran.
func allocatedBy(t *testing.T, f func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
