package broker

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// listener is a TCP listener for mochi that, unlike mochi's own, arms a
// deadline for the CONNECT packet and, on Close, closes every connection it
// accepted and waits for the goroutine serving each one.
type listener struct {
	id         string
	ln         net.Listener
	disconnect func()         // disconnects the broker's clients
	served     chan struct{}  // closed when Serve returns
	onServed   func(net.Conn) // called once a connection is served; set before Serve
	// admit, if set, decides whether an accepted connection goes on (it is
	// closed at once if not); wrap, if set, wraps each admitted
	// connection (TLS, limits). Both are set before Serve.
	admit   func(net.Conn) bool
	release func(net.Conn) // undoes admit once the connection is served
	wrap    func(net.Conn) net.Conn

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]chan struct{} // closed when the connection is served
	wg     sync.WaitGroup             // one per accepted connection
}

var _ listeners.Listener = (*listener)(nil)

func newListener(id string, ln net.Listener, disconnect func()) *listener {
	return &listener{
		id:         id,
		ln:         ln,
		disconnect: disconnect,
		served:     make(chan struct{}),
		conns:      make(map[net.Conn]chan struct{}),
	}
}

// Init is part of listeners.Listener; the socket is already bound.
func (l *listener) Init(*slog.Logger) error { return nil }

// ID is part of listeners.Listener.
func (l *listener) ID() string { return l.id }

// Address returns the bound host:port.
func (l *listener) Address() string { return l.ln.Addr().String() }

// Protocol is part of listeners.Listener.
func (l *listener) Protocol() string { return "tcp" }

// Serve accepts connections until Close and hands each to establish in a
// goroutine of its own. mochi runs it in a goroutine.
func (l *listener) Serve(establish listeners.EstablishFn) {
	defer close(l.served)
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		if l.admit != nil && !l.admit(conn) {
			_ = conn.Close()
			continue
		}
		if l.wrap != nil {
			conn = l.wrap(conn)
		}
		if !l.track(conn) {
			_ = conn.Close()
			if w, ok := conn.(interface{ closed() <-chan struct{} }); ok {
				<-w.closed()
			}
			if l.release != nil {
				l.release(conn)
			}
			return
		}
		// mochi replaces the deadline once the CONNECT has arrived (by one
		// of 1.5 keep-alives, or none for keep-alive 0).
		_ = conn.SetDeadline(time.Now().Add(connectTimeout))
		go func() {
			defer l.untrack(conn)
			// The error ends the connection; mochi has logged it.
			_ = establish(l.id, conn)
		}()
	}
}

// track registers conn, or reports false after Close.
func (l *listener) track(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[conn] = make(chan struct{})
	l.wg.Add(1)
	return true
}

func (l *listener) untrack(conn net.Conn) {
	l.mu.Lock()
	done := l.conns[conn]
	delete(l.conns, conn)
	l.mu.Unlock()
	_ = conn.Close()
	// The connection's writer writes what is queued (a DISCONNECT, a
	// refusing CONNACK) before it closes the socket, within
	// closeFlushTimeout.
	if w, ok := conn.(interface{ closed() <-chan struct{} }); ok {
		<-w.closed()
	}
	if l.release != nil {
		l.release(conn)
	}
	if l.onServed != nil {
		l.onServed(conn)
	}
	close(done)
	l.wg.Done()
}

// closedChan is returned for connections already served.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// connDone returns a channel closed once the goroutine serving conn has
// returned.
func (l *listener) connDone(conn net.Conn) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if done, ok := l.conns[conn]; ok {
		return done
	}
	return closedChan
}

// Close disconnects the broker's clients (each gets a DISCONNECT), stops
// accepting, closes what is left (connections that have not finished
// CONNECT) and waits until every connection is served. mochi's
// closeClients is not used: see Broker.disconnectClients.
func (l *listener) Close(listeners.CloseFn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()

	l.disconnect()
	_ = l.ln.Close()

	l.mu.Lock()
	for conn := range l.conns {
		_ = conn.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// wait returns once Serve has returned; only after mochi started it.
func (l *listener) wait() {
	<-l.served
}
