package gen

import (
	"strings"
	"testing"
)

func TestDocCommentsReadAsEnglish(t *testing.T) {
	cases := []struct {
		name, text string
		role       docRole
		want       string
	}{
		{"TaskStateSubmitted", "The task has been submitted and acknowledged.", roleValue, "TaskStateSubmitted means the task has been submitted and acknowledged."},
		{"ContextID", "The context this message belongs to.", roleThing, "ContextID is the context this message belongs to."},
		{"Artifacts", "The output artifacts of the task.", roleThing, "Artifacts are the output artifacts of the task."},
		{"Status", "The current status of the task.", roleThing, "Status is the current status of the task."},
		{"ArtifactID", "Unique identifier (e.g. UUID) of the artifact.", roleThing, "ArtifactID is the unique identifier (e.g. UUID) of the artifact."},
		{"Streaming", "Whether the agent supports streaming responses.", roleThing, "Streaming says whether the agent supports streaming responses."},
		{"Append", "If true, append this content.", roleThing, "If Append is true, append this content."},
		{"Description", "How this agent uses the extension.", roleThing, "Description says how this agent uses the extension."},
		{"Filename", "Optional file name.", roleThing, "Filename is an optional file name."},
		{"Metadata", "Optional metadata sent along with the message.", roleThing, "Metadata is optional metadata sent along with the message."},
		{"CancelTaskRequest", "Parameters of CancelTask.", roleThing, "CancelTaskRequest holds the parameters of CancelTask."},
		{"TokenRequestExpired", "MQTT binding: the request was stale.", roleValue, "TokenRequestExpired (MQTT binding) means the request was stale."},
		{"GuardIsPooled", "The Task.id's first request went to a pool topic.", roleGuard, "GuardIsPooled holds when the Task.id's first request went to a pool topic."},
		{"EventFirstRequest", "The requester publishes the first request.", roleEvent, "EventFirstRequest happens when the requester publishes the first request."},
		{"EventWorking", "A status of TASK_STATE_WORKING.", roleEvent, "EventWorking is a status of TASK_STATE_WORKING."},
		{"OutputPersistRoute", "Persist the route.", roleOutput, "OutputPersistRoute asks the caller to persist the route."},
		{"ModeBinary", "MQTT binary chunks on the reply stream.", roleValue, "ModeBinary means MQTT binary chunks on the reply stream."},
		{"Empty", "", roleThing, "Empty has no description in the schema."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := docAs(tc.name, tc.text, tc.role); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCommentsAreWrapped(t *testing.T) {
	long := strings.Repeat("word ", 40)
	cases := []struct {
		name, text string
		want       []string
	}{
		{"reflowed paragraph", "one two\nthree", []string{"one two three"}},
		{"paragraphs kept apart", "a\n\nb", []string{"a", "", "b"}},
		{"list kept, long item wrapped with a hanging indent", "items:\n  - " + long, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := wrapComment(tc.text, 40)
			for _, l := range got {
				if len(l) > 40 {
					t.Fatalf("line %q is wider than 40", l)
				}
			}
			if tc.want != nil && strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if tc.want == nil && (got[0] != "items:" || !strings.HasPrefix(got[1], "  - word") || !strings.HasPrefix(got[2], "    word")) {
				t.Fatalf("list wrapped as %q", got)
			}
		})
	}
}
