package retry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// TestErrorReplyReadsTheOfflineProfilesData: an error reply's token and
// responder pass through; the offline profile's data.queued and
// data.retryAfterSec are read when present and of the right type, and
// ignored otherwise.
func TestErrorReplyReadsTheOfflineProfilesData(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name       string
		data       any
		queued     bool
		retryAfter time.Duration
	}{
		{"no data", nil, false, 0},
		{"stored, next window in 90 s", decode(`{"error":"agent_asleep","queued":true,"retryAfterSec":90}`), true, 90 * time.Second},
		{"not stored, no window", decode(`{"error":"agent_asleep","queued":false}`), false, 0},
		{"members of the wrong type", decode(`{"error":"agent_asleep","queued":"yes","retryAfterSec":"90"}`), false, 0},
		{"data of another shape", decode(`[{"reason":"AGENT_ASLEEP"}]`), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ErrorReply(&a2a.Error{Token: a2a.TokenAgentAsleep, Data: tc.data}, "b-1")
			want := Reply{Kind: ReplyError, Token: a2a.TokenAgentAsleep, Responder: "b-1", Queued: tc.queued, RetryAfter: tc.retryAfter}
			if r != want {
				t.Fatalf("ErrorReply = %+v, want %+v", r, want)
			}
		})
	}
}
