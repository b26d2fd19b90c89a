package golden

import (
	"errors"
	"regexp"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/schemaerr"
)

// TestTimestampPatternReadsAsRegexp checks the generated pattern function
// that replaced regexp for the timestamp pattern (TaskStatus.timestamp):
// on valid timestamps and every one-byte deletion, insertion and
// replacement of them, the validator reports a "pattern" violation exactly
// when regexp does not match.
func TestTimestampPatternReadsAsRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?Z$`)
	patternViolation := func(ts string) bool {
		err := (&a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: ts}).Validate()
		var ve *schemaerr.ValidationError
		if !errors.As(err, &ve) {
			return false
		}
		for _, v := range ve.Violations {
			if v.Pointer == "/timestamp" && v.Rule == "pattern" {
				return true
			}
		}
		return false
	}
	seen := 0
	for _, valid := range []string{"2026-12-01T10:00:00Z", "2026-12-01T10:00:59.5Z", "2026-12-01T10:00:00.123456789Z"} {
		var cases []string
		for i := range len(valid) + 1 {
			cases = append(cases, valid[:i], valid[:i]+valid[min(i+1, len(valid)):])
			for _, c := range []byte("09.:-TZz6x") {
				cases = append(cases, valid[:i]+string(c)+valid[i:])
				if i < len(valid) {
					cases = append(cases, valid[:i]+string(c)+valid[i+1:])
				}
			}
		}
		for _, ts := range cases {
			if ts == "" {
				continue // unset: no pattern check
			}
			seen++
			if got, want := patternViolation(ts), !re.MatchString(ts); got != want {
				t.Fatalf("timestamp %q: pattern violation %v, regexp says %v", ts, got, want)
			}
		}
	}
	if seen < 500 {
		t.Fatalf("only %d timestamps checked", seen)
	}
}
