package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// TestResultHeadAndTailAreEncodeResults checks that AppendResultHead, a
// result's encoding and ResultTail make what EncodeResult makes, that
// ResultHeadLen is the head's length, and that EncodeResultSized makes the
// same bytes whatever the size it is given, for ids of every kind.
func TestResultHeadAndTailAreEncodeResults(t *testing.T) {
	task := &a2a.Task{ID: "t1", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted},
		History: []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat("text \"q\"\n", 10_000))}}}}}
	results := []struct {
		name string
		v    any
	}{
		{"a task", task},
		{"a SendMessageResponse", &a2a.SendMessageResponse{Payload: task}},
		{"empty", &a2a.Empty{}},
		{"a plain Go value", map[string]int{"a": 1}},
	}
	ids := []json.RawMessage{nil, json.RawMessage(`"1"`), json.RawMessage(`42`), json.RawMessage(`null`), json.RawMessage(`"` + strings.Repeat("x", 300) + `"`)}
	for _, r := range results {
		for _, id := range ids {
			t.Run(r.name+"/"+string(nullID(id)[:min(len(nullID(id)), 8)]), func(t *testing.T) {
				want, err := EncodeResult(id, r.v)
				if err != nil {
					t.Fatal(err)
				}
				head := AppendResultHead(nil, id)
				if len(head) != ResultHeadLen(id) {
					t.Errorf("ResultHeadLen %d, head of %d bytes", ResultHeadLen(id), len(head))
				}
				body, err := appendValue(nil, r.v)
				if err != nil {
					t.Fatal(err)
				}
				if got := append(append(head, body...), ResultTail...); !bytes.Equal(got, want) {
					t.Fatalf("head, result and tail:\n got %.120s\nwant %.120s", got, want)
				}
				for _, size := range []int{-1, 0, 10, len(body), 2 * len(body)} {
					got, err := EncodeResultSized(id, r.v, size)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("EncodeResultSized(size %d):\n got %.120s\nwant %.120s", size, got, want)
					}
					if size == len(body) && cap(got) != len(got) {
						t.Errorf("EncodeResultSized with the result's size: capacity %d for %d bytes", cap(got), len(got))
					}
				}
			})
		}
	}
}
