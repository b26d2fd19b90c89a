package main

import (
	"slices"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// retryProfile: a send's --reply-timeout, --attempts and --retry-backoff
// over the profile's defaults, the backoff doubling for each later retry;
// the rest of the profile is kept.
func TestRetryProfileFlags(t *testing.T) {
	def := mqttbind.DefaultRetryProfile()
	cases := []struct {
		timeout  time.Duration
		attempts int
		backoff  time.Duration
		want     []time.Duration
	}{
		{def.ReplyFirstTimeout, def.MaxAttempts, def.RetryBackoff[0], def.RetryBackoff[:def.MaxAttempts-1]},
		{500 * time.Millisecond, 2, 50 * time.Millisecond, []time.Duration{50 * time.Millisecond}},
		{time.Second, 4, time.Second, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{time.Second, 1, 0, []time.Duration{0}},
	}
	for _, c := range cases {
		p := retryProfile(def, c.timeout, c.attempts, c.backoff)
		if p.ReplyFirstTimeout != c.timeout || p.MaxAttempts != c.attempts || !slices.Equal(p.RetryBackoff, c.want) ||
			p.StreamIdleTimeout != def.StreamIdleTimeout || p.BackoffJitter != def.BackoffJitter {
			t.Errorf("retryProfile(%v, %d, %v) = %+v, want backoff %v", c.timeout, c.attempts, c.backoff, p, c.want)
		}
	}
}
