package pginbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The delays before the listener connects again: listenRetryMin after a
// connection that was lost, doubling after each attempt that fails, up to
// listenRetryMax.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 10 * time.Second
)

// Notify returns a channel that receives a value when records may have
// been added to the queue since the last value was received: an Enqueue,
// or an Untake that put records back, committed by this Store or any other
// sharing the queue. Values do not accumulate (the channel holds one):
// after receiving, read the queue (Next) until it is empty, then wait
// again. The channel is the same for every call, and is never closed.
//
// The first call starts a listener: a connection of its own (made from
// the pool's configuration, outside the pool) on which the store runs
// LISTEN for the queue's channel (PostgreSQL's LISTEN and NOTIFY). Once it
// listens, the channel receives a value, as records may have been added
// before; and again each time the connection was lost (the server
// restarted, the session was ended, the network failed) and the listener
// made a new one, which it does after listenRetryMin, then at growing
// intervals up to listenRetryMax while it cannot (logged at Warn). A
// notification sent while no connection listened is not received: the
// value sent on reconnecting stands for it. Close stops the listener.
//
// An agent's delivery loop selects on Notify alongside its timers, and so
// learns of a record enqueued through another instance without polling.
// inbox.Store has no such method: a caller finds it on the stores that
// have one, as an interface{ Notify() <-chan struct{} }.
func (s *Store) Notify() <-chan struct{} {
	if !s.closed.Load() {
		s.lis.start()
	}
	return s.lis.wake
}

// listener holds the connection LISTENing for a queue's notifications.
type listener struct {
	cfg     *pgx.ConnConfig
	channel string
	log     *slog.Logger
	wake    chan struct{}

	once   sync.Once
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns; nil until started

	// For tests: listens counts the connections that ran LISTEN, pid is
	// the server process of the current one, and heard, when not nil,
	// receives the payload of each notification once it is signalled.
	listens atomic.Int64
	pid     atomic.Uint32
	heard   chan string
}

func newListener(cfg *pgx.ConnConfig, channel string, log *slog.Logger) *listener {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &listener{cfg: cfg, channel: channel, log: log, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// start starts the listener, once, unless it was stopped.
func (l *listener) start() {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ctx.Err() != nil {
			return
		}
		l.done = make(chan struct{})
		go l.run()
	})
}

// stop stops the listener and waits for it.
func (l *listener) stop() {
	l.mu.Lock()
	l.cancel()
	done := l.done
	l.mu.Unlock()
	if done != nil {
		<-done
	}
}

// signal sends a wake, unless one is waiting already.
func (l *listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run connects, listens and signals each notification, and connects again
// when the connection is lost, until stopped.
func (l *listener) run() {
	defer close(l.done)
	delay := listenRetryMin
	for {
		err := l.listen()
		if l.ctx.Err() != nil {
			return
		}
		if err == errLost {
			delay = listenRetryMin
		} else {
			l.log.Warn("pginbox: cannot listen for the offline queue's notifications; retrying", "channel", l.channel, "retry_in", delay, "err", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			return
		}
		if err != errLost {
			delay = min(2*delay, listenRetryMax)
		}
	}
}

// errLost reports a listening connection that was lost (after it had
// listened).
var errLost = errors.New("the listening connection was lost")

// listen makes a connection, listens on it and signals each notification
// until the connection fails (errLost) or the listener stops. An error
// before it listens is returned.
func (l *listener) listen() error {
	conn, err := pgx.ConnectConfig(l.ctx, l.cfg)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(ctx)
	}()
	if _, err := conn.Exec(l.ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return err
	}
	l.pid.Store(conn.PgConn().PID())
	l.listens.Add(1)
	l.signal()
	for {
		n, err := conn.WaitForNotification(l.ctx)
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Warn("pginbox: the connection listening for the offline queue's notifications was lost; reconnecting", "channel", l.channel, "err", err)
			}
			return errLost
		}
		l.signal()
		if l.heard != nil {
			select {
			case l.heard <- n.Payload:
			case <-l.ctx.Done():
			}
		}
	}
}
