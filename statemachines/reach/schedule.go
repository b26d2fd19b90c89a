package reach

import (
	"errors"
	"hash/fnv"
	"time"
)

// Schedule is a published, periodic accept window: every Period, counted
// from the Unix epoch, a window opens Offset into the period and stays open
// for Length.
type Schedule struct {
	// Period is how often a window opens (an hour for hourly_wake).
	Period time.Duration
	// Offset is how far into each period the window opens.
	Offset time.Duration
	// Length is how long each window stays open.
	Length time.Duration
}

// Check reports a schedule that has no window or is open for ever.
func (s Schedule) Check() error {
	switch {
	case s.Period <= 0:
		return errors.New("reach: schedule period must be positive")
	case s.Length <= 0 || s.Length >= s.Period:
		return errors.New("reach: window length must be positive and shorter than the period")
	case s.Offset < 0 || s.Offset >= s.Period:
		return errors.New("reach: window offset must be within the period")
	}
	return nil
}

// phase returns how far now is past the start of the current window's
// period (window opens at phase 0).
func (s Schedule) phase(now time.Time) time.Duration {
	p := time.Duration((now.UnixNano() - int64(s.Offset)) % int64(s.Period))
	if p < 0 {
		p += s.Period
	}
	return p
}

// Open reports whether a window is open at now.
func (s Schedule) Open(now time.Time) bool { return s.phase(now) < s.Length }

// NextOpen returns now when a window is open, otherwise when the next one
// opens.
func (s Schedule) NextOpen(now time.Time) time.Time {
	p := s.phase(now)
	if p < s.Length {
		return now
	}
	return now.Add(s.Period - p)
}

// StableUnit maps an agent id to a number in [0, 1) that is the same on
// every run and every machine (FNV-1a, then the SplitMix64 finalizer so that
// ids differing in their last characters spread evenly): a per-agent jitter
// that can be published, since it never changes.
func StableUnit(agentID string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(agentID))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// Jittered returns the schedule with its windows moved later by u × spread
// (u in [0, 1), for example StableUnit(agentID) or a random draw), wrapped
// within the period.
func (s Schedule) Jittered(u float64, spread time.Duration) Schedule {
	s.Offset = (s.Offset + time.Duration(u*float64(spread))) % s.Period
	return s
}

// HourlyWake returns an hourly_wake schedule for an agent: a window of
// length every hour, opening at a point of the hour that the agent's id
// picks within the first spread. Agents on the same schedule therefore do
// not all wake at once (docs/protocol.md §7.8: wake windows SHOULD be
// jittered across agents).
func HourlyWake(agentID string, length, spread time.Duration) Schedule {
	return Schedule{Period: time.Hour, Length: length}.Jittered(StableUnit(agentID), spread)
}
