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

// A small message of text parts is sized from its strings' lengths: the
// buffer holds the request without growing when its texts escape no more
// than an eighth of their bytes (prose, with its line breaks and quotes),
// and the bytes are the same when they escape more (the buffer grows);
// a message with anything else, or larger, is estimated by its contents.
func TestEncodeRequestSizesSmallTexts(t *testing.T) {
	msg := func(parts ...a2a.Part) *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "8a1f3c4e-5d6b-4a7c-9e8f-0a1b2c3d4e5f",
			ContextID: "ctx-1", TaskID: "task-1", Role: a2a.RoleUser, Parts: parts}}
	}
	text := func(s string) a2a.Part { return a2a.Part{Content: a2a.PartText(s)} }
	prose := strings.Repeat("The warehouse in Lyon reports 40 pallets \"ready\".\n", 6)
	cases := []struct {
		name      string
		params    *a2a.SendMessageRequest
		small     bool // sized from the lengths alone
		fitsFirst bool // encoded without growing the buffer
	}{
		{"300 B of prose", msg(text(prose)), true, true},
		{"three parts with filename and media type", msg(text(prose), a2a.Part{Content: a2a.PartText("x"), Filename: "a.txt", MediaType: "text/plain"}, text("")), true, true},
		{"no parts", msg(), true, true},
		{"300 B of control characters", msg(text(strings.Repeat("\x01", 300))), true, false},
		{"2 KB of text", msg(text(strings.Repeat("a", 2048))), false, true},
		{"a data part", msg(a2a.Part{Content: a2a.PartData{Value: map[string]any{"k": "v"}}}), false, true},
		{"part metadata", msg(a2a.Part{Content: a2a.PartText("x"), Metadata: map[string]any{"k": "v"}}), false, true},
		{"request metadata", &a2a.SendMessageRequest{Message: msg(text("x")).Message, Metadata: map[string]any{"k": "v"}}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := json.RawMessage(`"id-1"`)
			_, small := smallTextSize(c.params.Message)
			if small = small && c.params.Metadata == nil; small != c.small {
				t.Fatalf("sized from the lengths: %v, want %v", small, c.small)
			}
			got, err := EncodeRequest(id, a2a.MethodSendMessage, c.params)
			if err != nil {
				t.Fatal(err)
			}
			want := []byte(`{"jsonrpc":"2.0","id":"id-1","method":"SendMessage","params":`)
			if want, err = appendValue(want, c.params); err != nil {
				t.Fatal(err)
			}
			want = append(want, '}')
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from the grown buffer's:\n%s\n%s", got, want)
			}
			if first := 256 + len(id) + paramsSize(c.params); (cap(got) == first) != c.fitsFirst {
				t.Fatalf("capacity %d for %d bytes, first buffer %d: fits %v, want %v", cap(got), len(got), first, cap(got) == first, c.fitsFirst)
			}
		})
	}
}
