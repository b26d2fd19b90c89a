package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// TestEncodeTaskIsAppendJSON checks that encodeTask makes what
// a2a.Task.AppendJSON makes, byte for byte, with and without a previous
// encoding to copy the history's messages from.
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
	cases := []struct {
		name string
		prev *a2a.Task
		t    a2a.Task
	}{
		{"no history", nil, a2a.Task{ID: "t0", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}},
		{"empty history", nil, a2a.Task{ID: "t0", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}, History: []a2a.Message{}}},
		{"created", nil, base},
		{"completed, history, artifacts and metadata", nil, done},
		{"completed after created: history copied", &base, done},
		{"same history: all copied", &done, done},
		{"a different history: encoded again", &base, other},
		{"a shorter history: encoded again", &done, base},
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
