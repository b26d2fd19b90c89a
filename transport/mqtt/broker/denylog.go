package broker

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// The log of refusals is rate-limited: a hostile client can send refused
// packets as fast as the network carries them, and one WARN line each
// would flood the log. Per kind of refusal and per source (the client's
// Client ID for publishes, subscriptions and cards; the source address for
// connections, whose Client ID is only the peer's claim, and for oversized
// packets, each of which costs the sender a connection), the first denialLogBurst refusals of an interval are logged one
// by one, and the rest are counted and logged as one summary line when the
// interval ends (or the broker closes). Broker.Denials counts every
// refusal, logged or not.
const (
	// denialLogBurst is how many refusals of one kind and source are
	// logged one by one per interval.
	denialLogBurst = 5
	// denialLogInterval is the interval.
	denialLogInterval = time.Minute
	// maxDenialKeys bounds the table of kinds and sources; past it,
	// sources that are new share one entry per kind (overflowSource).
	maxDenialKeys = 10000
	// overflowSource names that shared entry in the log.
	overflowSource = "(other sources)"
)

// The kinds of refusal the log rate-limits, as the log names them (they
// follow the fields of Denials).
const (
	denyAuthentication = "authentication"
	denyClientID       = "client_id"
	denyWill           = "will"
	denyPublish        = "publish"
	denySubscribe      = "subscribe"
	denyCard           = "card"
	denyConnections    = "connections"
	denyPacketSize     = "packet_size"
	denyPendingBytes   = "pending_bytes"
)

// denialLog writes the refusal lines, rate-limited. Its methods are safe
// for concurrent use; the zero value is not usable (see newDenialLog).
type denialLog struct {
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	burst    int
	// after arms the sweep (time.AfterFunc; tests replace it).
	after func(time.Duration, func()) *time.Timer

	mu      sync.Mutex
	windows map[denialKey]*denialWindow
	timer   *time.Timer // the armed sweep, nil when none
	closed  bool
}

// denialKey is a kind of refusal and its source.
type denialKey struct {
	kind, source string
}

// denialWindow is one key's current interval.
type denialWindow struct {
	start      time.Time
	logged     int
	suppressed int64
}

func newDenialLog(log *slog.Logger, now func() time.Time) *denialLog {
	if now == nil {
		now = time.Now
	}
	return &denialLog{log: log, now: now, interval: denialLogInterval, burst: denialLogBurst, after: time.AfterFunc,
		windows: make(map[denialKey]*denialWindow)}
}

// summary is a summary line to write, once the lock is released.
type summary struct {
	key        denialKey
	start      time.Time
	suppressed int64
}

// warn logs a refusal of kind from source at WARN on log (msg and args as
// for slog), unless the key has had its burst this interval: it is then
// counted for the interval's summary, which goes to the broker's log.
func (d *denialLog) warn(log *slog.Logger, kind, source, msg string, args ...any) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	now := d.now()
	var due []summary
	k := denialKey{kind, source}
	w := d.windows[k]
	if w != nil && now.Sub(w.start) >= d.interval {
		due = appendSummary(due, k, w)
		delete(d.windows, k)
		w = nil
	}
	if w == nil {
		if len(d.windows) >= maxDenialKeys {
			due = d.expire(now, due)
		}
		if len(d.windows) >= maxDenialKeys {
			k.source = overflowSource
			w = d.windows[k]
		}
		if w == nil {
			w = &denialWindow{start: now}
			d.windows[k] = w
		}
	}
	logIt := w.logged < d.burst
	if logIt {
		w.logged++
		if w.logged == d.burst {
			args = append(args, "further", "counted, and summarised every "+d.interval.String())
		}
	} else {
		w.suppressed++
		if d.timer == nil {
			d.timer = d.after(d.interval-now.Sub(w.start), d.sweep)
		}
	}
	d.mu.Unlock()
	d.write(due)
	if logIt {
		log.Warn(msg, args...)
	}
}

// appendSummary adds w's summary to due when it counted refusals.
func appendSummary(due []summary, k denialKey, w *denialWindow) []summary {
	if w.suppressed > 0 {
		due = append(due, summary{k, w.start, w.suppressed})
	}
	return due
}

// expire forgets the windows whose interval has ended, adding the
// summaries they owe to due.
func (d *denialLog) expire(now time.Time, due []summary) []summary {
	for k, w := range d.windows {
		if now.Sub(w.start) >= d.interval {
			due = appendSummary(due, k, w)
			delete(d.windows, k)
		}
	}
	return due
}

// sweep writes the summaries of the intervals that have ended, and arms
// itself again while some window still counts refusals.
func (d *denialLog) sweep() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.timer = nil
	now := d.now()
	due := d.expire(now, nil)
	var next time.Duration
	for _, w := range d.windows {
		if w.suppressed > 0 {
			if left := d.interval - now.Sub(w.start); next == 0 || left < next {
				next = left
			}
		}
	}
	if next > 0 {
		d.timer = d.after(next, d.sweep)
	}
	d.mu.Unlock()
	d.write(due)
}

// flush writes every summary still owed and stops the sweep; later
// refusals are counted by Denials only, not logged (the broker is
// closing).
func (d *denialLog) flush() {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	var due []summary
	for k, w := range d.windows {
		due = appendSummary(due, k, w)
		w.suppressed = 0
	}
	d.mu.Unlock()
	d.write(due)
}

func (d *denialLog) write(due []summary) {
	for _, s := range due {
		d.log.Warn("broker: refusals not logged one by one", "kind", s.key.kind, "source", s.key.source,
			"refused", s.suppressed, "since", s.start.UTC().Format(time.RFC3339))
	}
}

// hostOf is the IP address of a remote address host:port (the address
// itself when it has no port).
func hostOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
