package retry

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Jitter returns a number in [0, 1). Backoff delays are spread by it; tests
// inject a fixed or seeded one.
type Jitter func() float64

// DefaultJitter draws from math/rand/v2's global source.
func DefaultJitter() float64 { return rand.Float64() }

// CheckProfile reports a profile that cannot run: fewer than one attempt,
// a negative timeout, a negative backoff, or a jitter ratio outside [0, 1).
// A zero ReplyFirstTimeout or StreamIdleTimeout means no deadline: an
// attempt waits for its first reply, or a stream for its next item, as long
// as the caller's context allows. The MQTT profile's defaults set both; a
// transport whose attempt is bounded by the call itself (an HTTP request)
// may leave the first-reply timeout out.
func CheckProfile(p mqttbind.RetryProfile) error {
	switch {
	case p.MaxAttempts < 1:
		return errors.New("retry: MaxAttempts must be at least 1")
	case p.ReplyFirstTimeout < 0 || p.StreamIdleTimeout < 0:
		return errors.New("retry: ReplyFirstTimeout and StreamIdleTimeout must not be negative (zero means no deadline)")
	case p.BackoffJitter < 0 || p.BackoffJitter >= 1:
		return errors.New("retry: BackoffJitter must be in [0, 1)")
	}
	for _, d := range p.RetryBackoff {
		if d < 0 {
			return errors.New("retry: RetryBackoff delays must not be negative")
		}
	}
	return nil
}

// Backoff returns the delay before retry number n (1 for the first retry,
// that is before the second attempt): RetryBackoff[n-1], or its last value
// past the end, spread uniformly over ±BackoffJitter by u in [0, 1).
func Backoff(p mqttbind.RetryProfile, n int, u float64) time.Duration {
	if len(p.RetryBackoff) == 0 || n < 1 {
		return 0
	}
	base := p.RetryBackoff[min(n, len(p.RetryBackoff))-1]
	return time.Duration(float64(base) * (1 + p.BackoffJitter*(2*u-1)))
}
