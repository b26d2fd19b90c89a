package taskstore

import (
	"bytes"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/scratch"
)

// TestPackKeepsTheEncodingAtItsSize checks that pack keeps what
// a2a.Task.AppendJSON makes, byte for byte, for small and large tasks
// (plain, escaped, raw, with metadata), and that a large one is encoded
// into one buffer allocated at about its size: the bytes allocated stay
// within 1/32 of the encoding's size and 12 KiB (a large allocation is
// rounded up to 8 KiB pages), and the kept buffer has
// at most an eighth of its size (and 256 bytes) unused.
func TestPackKeepsTheEncodingAtItsSize(t *testing.T) {
	raw := make([]byte, 600_000)
	for i := range raw {
		raw[i] = byte(i)
	}
	task := func(parts ...a2a.Part) a2a.Task {
		return a2a.Task{ID: "t", ContextID: "c", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted},
			History: []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: parts}}, Metadata: map[string]any{"k": "v"}}
	}
	text := func(s string) a2a.Part { return a2a.Part{Content: a2a.PartText(s)} }
	cases := []struct {
		name string
		task a2a.Task
	}{
		{"small", task(text("hello"))},
		{"just past the pooled size", task(text(strings.Repeat("y", scratch.Keep)))},
		{"1 MB of prose", task(text(strings.Repeat("a line of prose, then a newline\n", 31_250)))},
		{"1 MB, a third escaped", task(text(strings.Repeat(`"q" \ `, 166_667)))},
		{"600 KB raw and a caption", task(a2a.Part{Content: a2a.PartRaw(raw)}, text("caption"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tc.task.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			// The least of three runs: another goroutine may allocate
			// during one.
			var p packed
			alloc := uint64(math.MaxUint64)
			for range 3 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				p, err = pack(Record{Task: tc.task, MessageIDs: []string{"m"}})
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatal(err)
				}
				alloc = min(alloc, after.TotalAlloc-before.TotalAlloc)
			}
			if !bytes.Equal(p.task, want) {
				t.Fatalf("packed %.200s\nwant   %.200s", p.task, want)
			}
			n := len(want)
			if unused := cap(p.task) - n; unused > n/8+256 {
				t.Errorf("%d bytes unused beside an encoding of %d", unused, n)
			}
			if n > scratch.Keep && alloc > uint64(n+n/32+12<<10) {
				t.Errorf("%d bytes allocated for an encoding of %d", alloc, n)
			}
		})
	}
}
