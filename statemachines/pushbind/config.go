package pushbind

import (
	"errors"
	"time"
)

// Config holds the timings of a binding.
type Config struct {
	// Window is the expected transition window: a registered or
	// acknowledged webhook that acknowledges nothing for this long becomes
	// suspect. docs/protocol.md §8.6 gives 120 s.
	Window time.Duration
	// PollInterval is the reconciliation interval while polling is the
	// primary channel (no binding, or a suspect or dead one).
	PollInterval time.Duration
	// ReconcileInterval is the longer reconciliation interval while the
	// webhook is primary. Polling is never switched off. docs/protocol.md
	// §8.6 gives 60 s.
	ReconcileInterval time.Duration
	// Grace is how long a polled status may be ahead of the last push the
	// receiver acknowledged before the push counts as missed (pushes race
	// with polls).
	Grace time.Duration
}

// DefaultConfig returns the timings of docs/protocol.md §8.6: a 120 s
// window, a 60 s reconciliation interval while the webhook is primary, a
// 15 s interval while polling is primary and a 10 s grace.
func DefaultConfig() Config {
	return Config{Window: 120 * time.Second, PollInterval: 15 * time.Second, ReconcileInterval: 60 * time.Second, Grace: 10 * time.Second}
}

// Check reports a configuration that cannot keep the invariant.
func (c Config) Check() error {
	switch {
	case c.Window <= 0 || c.PollInterval <= 0 || c.ReconcileInterval <= 0:
		return errors.New("pushbind: Window, PollInterval and ReconcileInterval must be positive")
	case c.PollInterval > c.ReconcileInterval:
		return errors.New("pushbind: PollInterval must not exceed ReconcileInterval")
	case c.Grace < 0:
		return errors.New("pushbind: Grace must not be negative")
	}
	return nil
}
