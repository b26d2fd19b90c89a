package mqtt

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// eventLog logs an event that can repeat in bursts (a session taken over
// again and again) once per burst: the first event at once, then, once no
// event has come for quiet, one line with how many more there were. A
// burst that never pauses gets such a line every period.
type eventLog struct {
	log     *slog.Logger
	level   slog.Level
	msg     string // the first event of a burst
	summary string // the count of the rest
	attrs   []any  // on every line
	quiet   time.Duration
	period  time.Duration

	mu      sync.Mutex
	active  bool      // a burst is on
	more    int       // events since the last line
	start   time.Time // of the burst
	last    time.Time // latest event
	counted time.Time // latest line
	timer   *time.Timer
	closed  bool
}

func newEventLog(log *slog.Logger, level slog.Level, msg, summary string, attrs ...any) *eventLog {
	return &eventLog{log: log, level: level, msg: msg, summary: summary, attrs: attrs,
		quiet: eventQuiet, period: eventPeriod}
}

// Bursts of logged events (eventLog).
const (
	// eventQuiet ends a burst.
	eventQuiet = 5 * time.Second
	// eventPeriod is the most a burst goes without a line.
	eventPeriod = time.Minute
)

// event records one event; extra attributes go on the burst's first line
// only.
func (l *eventLog) event(extra ...any) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	now := time.Now()
	l.last = now
	if !l.active {
		l.active, l.more, l.start, l.counted = true, 0, now, now
		if l.timer == nil {
			l.timer = time.AfterFunc(l.quiet, l.tick)
		} else {
			l.timer.Reset(l.quiet)
		}
		l.mu.Unlock()
		l.log.Log(context.Background(), l.level, l.msg, append(append([]any(nil), l.attrs...), extra...)...)
		return
	}
	l.more++
	var line []any
	if now.Sub(l.counted) >= l.period {
		line = l.countLocked(now)
	}
	l.mu.Unlock()
	if line != nil {
		l.log.Log(context.Background(), l.level, l.summary, line...)
	}
}

// countLocked returns the attributes of a count line and starts a new
// count; l.mu is held.
func (l *eventLog) countLocked(now time.Time) []any {
	line := append(append([]any(nil), l.attrs...), "more", l.more, "burst", now.Sub(l.start).Round(time.Millisecond))
	l.more, l.counted = 0, now
	return line
}

// tick ends the burst once it has been quiet, with a count of the events
// since the last line, if any.
func (l *eventLog) tick() {
	l.mu.Lock()
	if !l.active || l.closed {
		l.mu.Unlock()
		return
	}
	if wait := l.quiet - time.Since(l.last); wait > 0 {
		l.timer.Reset(wait)
		l.mu.Unlock()
		return
	}
	l.active = false
	var line []any
	if l.more > 0 {
		line = l.countLocked(l.last)
	}
	l.mu.Unlock()
	if line != nil {
		l.log.Log(context.Background(), l.level, l.summary, line...)
	}
}

// close stops the log, with the count of a burst in progress.
func (l *eventLog) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	var line []any
	if l.active && l.more > 0 {
		line = l.countLocked(l.last)
	}
	l.mu.Unlock()
	if line != nil {
		l.log.Log(context.Background(), l.level, l.summary, line...)
	}
}
