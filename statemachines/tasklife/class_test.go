package tasklife

import (
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		state a2a.TaskState
		want  Class
	}{
		{a2a.TaskStateSubmitted, ClassContinue},
		{a2a.TaskStateWorking, ClassContinue},
		{a2a.TaskStateInputRequired, ClassResumable},
		{a2a.TaskStateAuthRequired, ClassResumable},
		{a2a.TaskStateCompleted, ClassTerminal},
		{a2a.TaskStateFailed, ClassTerminal},
		{a2a.TaskStateCanceled, ClassTerminal},
		{a2a.TaskStateRejected, ClassTerminal},
	} {
		t.Run(string(c.state), func(t *testing.T) {
			got, err := Classify(c.state)
			if err != nil || got != c.want {
				t.Errorf("got %v, %v; want %v", got, err, c.want)
			}
			if got.StreamFinal() != (c.want != ClassContinue) {
				t.Errorf("StreamFinal %v", got.StreamFinal())
			}
		})
	}
	for _, bad := range []a2a.TaskState{a2a.TaskStateUnspecified, "completed", ""} {
		if _, err := Classify(bad); !errors.Is(err, ErrUnknownState) {
			t.Errorf("Classify(%q): got %v, want ErrUnknownState", bad, err)
		}
	}
}
