package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// A request is encoded into a buffer sized from its params: a large text
// costs about its own size in allocations, not a buffer grown by copying,
// and the bytes are the ones a buffer grown from nothing would hold.
func TestEncodeRequestSizesItsBuffer(t *testing.T) {
	line := "a line of text with \"quotes\", a tab\tand a newline\n"
	cases := []struct {
		name   string
		params any
	}{
		{"1 MB text", &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m1", Role: a2a.RoleUser,
			Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat(line, 1_000_000/len(line)))}}}}},
		// (Free JSON, a data part or metadata, is encoded through
		// encoding/json, whose own buffers are not this buffer's.)
		{"text and raw parts", &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m2", Role: a2a.RoleUser,
			Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat("é", 50_000))}, {Content: a2a.PartRaw(bytes.Repeat([]byte{0xff}, 30_000))}}},
			Metadata: map[string]any{"trace": "t"}}},
		{"other params", &a2a.GetTaskRequest{ID: "task-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := EncodeRequest(json.RawMessage(`"id-1"`), a2a.MethodSendMessage, c.params)
			if err != nil {
				t.Fatal(err)
			}
			want := []byte(`{"jsonrpc":"2.0","id":"id-1","method":"SendMessage","params":`)
			if want, err = appendValue(want, c.params); err != nil {
				t.Fatal(err)
			}
			want = append(want, '}')
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from the grown buffer's (%d and %d bytes)", len(got), len(want))
			}
			// The least of three runs of five, so that another test's
			// allocations cannot count.
			least := uint64(math.MaxUint64)
			for range 3 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 5 {
					if _, err := EncodeRequest(json.RawMessage(`"id-1"`), a2a.MethodSendMessage, c.params); err != nil {
						t.Fatal(err)
					}
				}
				runtime.ReadMemStats(&after)
				least = min(least, (after.TotalAlloc-before.TotalAlloc)/5)
			}
			if limit := uint64(len(got) + len(got)/16 + 4096); least > limit {
				t.Errorf("%d bytes allocated for a %d-byte request, want at most %d", least, len(got), limit)
			}
		})
	}
}
