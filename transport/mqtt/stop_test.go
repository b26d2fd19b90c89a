package mqtt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/presence"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestIsPermanentRefusal: the SUBACK and PUBACK reason codes that retrying
// cannot change stop a connection; every other refusal, and every error
// that is not a refusal, is retried.
func TestIsPermanentRefusal(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"PUBACK 0x87 not authorized", &PublishError{ReasonCode: 0x87}, true},
		{"SUBACK 0x87 not authorized", &SubscribeError{ReasonCode: 0x87}, true},
		{"SUBACK 0x8F topic filter invalid", &SubscribeError{ReasonCode: 0x8F}, true},
		{"PUBACK 0x90 topic name invalid", &PublishError{ReasonCode: 0x90}, true},
		{"PUBACK 0x99 payload format invalid", &PublishError{ReasonCode: 0x99}, true},
		{"SUBACK 0x9E shared subscriptions not supported", &SubscribeError{ReasonCode: 0x9E}, true},
		{"SUBACK 0xA1 subscription identifiers not supported", &SubscribeError{ReasonCode: 0xA1}, true},
		{"SUBACK 0xA2 wildcard subscriptions not supported", &SubscribeError{ReasonCode: 0xA2}, true},
		{"a wrapped permanent refusal", fmt.Errorf("announce: %w", &PublishError{ReasonCode: 0x99}), true},
		{"PUBACK 0x80 unspecified error", &PublishError{ReasonCode: 0x80}, false},
		{"SUBACK 0x83 implementation specific error", &SubscribeError{ReasonCode: 0x83}, false},
		{"PUBACK 0x97 quota exceeded", &PublishError{ReasonCode: 0x97}, false},
		{"SUBACK 0x97 quota exceeded", &SubscribeError{ReasonCode: 0x97}, false},
		{"SUBACK 0x91 packet identifier in use", &SubscribeError{ReasonCode: 0x91}, false},
		{"no acknowledgement in time", context.DeadlineExceeded, false},
		{"connection lost", paho.ErrConnectionLost, false},
		{"no error", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isPermanentRefusal(c.err); got != c.want {
				t.Errorf("isPermanentRefusal(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// switchProxy forwards TCP connections to a broker it can switch: a
// switch cuts every connection, as a broker restart does, and the next
// ones go to the new broker. It counts the connections it accepted: every
// connection attempt of a client behind it.
type switchProxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	target   string
	accepted int
	open     map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *switchProxy) URL() string { return "mqtt://" + p.ln.Addr().String() }

func (p *switchProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.target != target {
			// Switched meanwhile: this connection is cut too.
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.open[c], p.open[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies one way, then closes both ends: a client that goes away
// without DISCONNECT is, for the broker, a connection lost (its Will fires).
func (p *switchProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.open, dst)
	delete(p.open, src)
	p.mu.Unlock()
}

// cut closes every forwarded connection.
func (p *switchProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.open {
		c.Close()
	}
}

// switchTo sends the next connections to target and cuts the current
// ones.
func (p *switchProxy) switchTo(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.cut()
}

func (p *switchProxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// The users of the tests on secured brokers; each one's password is
// "pw-" + name.
const (
	stopAgent    = "acme/lab/echo"
	stopClient   = "acme/lab/req"
	stopWatch    = "acme/lab/watch"
	stopObserver = "acme/lab/obs"
)

func userConnection(brokerURL, user string) Connection {
	return Connection{Broker: brokerURL, Username: user, Password: []byte("pw-" + user)}
}

// writeUsers writes a password file of the users.
func writeUsers(t *testing.T, users ...string) string {
	t.Helper()
	var f broker.PasswordFile
	for _, u := range users {
		if err := f.Set(u, "pw-"+u, 101); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "passwd")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// stoppable is what an Agent, a Client and a Watcher have in common about
// a connection that stops for good.
type stoppable interface {
	Done() <-chan struct{}
	Err() error
	Close(context.Context) error
}

// TestStopsWhenRefusedForGood: a connection that was ready, and whose
// subscriptions or card the broker refuses for good after a reconnect (the
// broker now runs with an ACL that denies them: a restart with a new ACL
// file, played by a proxy that switches brokers), stops: Done is closed,
// Err is the refusal with its reason code, it makes no connection after
// the refused one, the refusal is logged once at ERROR, the broker
// publishes the agent's Will (where its ACL lets it), and Close then
// returns nil at once.
func TestStopsWhenRefusedForGood(t *testing.T) {
	t.Parallel()
	pw := writeUsers(t, stopAgent, stopClient, stopWatch, stopObserver)
	embedded := func(t *testing.T, opts ...mqtttest.Option) mqtttest.Broker { return mqtttest.StartEmbedded(t, opts...) }
	mosquitto := func(t *testing.T, opts ...mqtttest.Option) mqtttest.Broker {
		return mqtttest.StartMosquitto(t, opts...)
	}
	startAgentAs := func(t *testing.T, c Connection, log *slog.Logger) (stoppable, error) {
		return NewAgent(testCtx(t), AgentConfig{Connection: c, Org: "acme", Unit: "lab", ID: "echo",
			Card: testCard("Echo"), Server: echoServer(t), Logger: log})
	}
	// An agent stopped publishes nothing more.
	updateCardFails := func(t *testing.T, s stoppable) {
		err := s.(*Agent).UpdateCard(testCtx(t), testCard("Echo 2"))
		if !errors.Is(err, ErrStopped) || !errors.Is(err, s.Err()) {
			t.Errorf("UpdateCard after the stop: %v, want ErrStopped and the refusal", err)
		}
	}
	for _, c := range []struct {
		name   string
		broker func(*testing.T, ...mqtttest.Option) mqtttest.Broker
		user   string
		// deny is the ACL file of the broker after the switch.
		deny  string
		start func(*testing.T, Connection, *slog.Logger) (stoppable, error)
		// subscribe: the refusal is a SUBACK's (else the card's PUBACK).
		subscribe bool
		// will: the broker publishes the agent's Will (mosquitto drops a
		// Will its ACL does not let the client publish).
		will bool
		// stopped checks what the stopped connection still does.
		stopped func(*testing.T, stoppable)
	}{
		{name: "agent whose request topic the embedded broker no longer lets it subscribe (SUBACK 0x87)",
			broker: embedded, user: stopAgent, deny: "user acme/lab/echo\ntopic deny $a2a/v1/request/acme/lab/echo\n",
			start: startAgentAs, subscribe: true, will: true, stopped: updateCardFails},
		{name: "agent whose card mosquitto no longer takes (PUBACK 0x87)",
			broker: mosquitto, user: stopAgent, deny: "user acme/lab/echo\ntopic deny $a2a/v1/discovery/acme/lab/echo\n",
			start: startAgentAs, stopped: updateCardFails},
		{name: "client whose reply topic the embedded broker no longer lets it subscribe (SUBACK 0x87)",
			broker: embedded, user: stopClient, deny: "user acme/lab/req\ntopic deny $a2a/v1/reply/acme/lab/req/#\n",
			start: func(t *testing.T, c Connection, log *slog.Logger) (stoppable, error) {
				return NewClient(testCtx(t), ClientConfig{Connection: c, Org: "acme", Unit: "lab", ID: "req",
					Requester: requester.Config{Logger: log, Retry: mqttbind.RetryProfile{ReplyFirstTimeout: time.Second,
						StreamIdleTimeout: time.Second, MaxAttempts: 2, RetryBackoff: []time.Duration{10 * time.Millisecond}}}})
			}, subscribe: true,
			// Its requests fail, every attempt refused.
			stopped: func(t *testing.T, s stoppable) {
				_, err := s.(*Client).SendMessage(testCtx(t), requester.TextMessage("hello", "", ""),
					requester.To(requester.Target{Agent: "echo"}))
				if !errors.Is(err, ErrStopped) || !errors.Is(err, requester.ErrUnreachable) {
					t.Errorf("a request after the stop: %v, want ErrUnreachable and ErrStopped", err)
				}
			}},
		{name: "watch whose discovery filter the embedded broker no longer lets it subscribe (SUBACK 0x87)",
			broker: embedded, user: stopWatch, deny: "user acme/lab/watch\ntopic deny $a2a/v1/discovery/acme/lab/+\n",
			start: func(t *testing.T, c Connection, log *slog.Logger) (stoppable, error) {
				return Watch(testCtx(t), WatchConfig{Connection: c, Org: "acme", Unit: "lab", ClientID: stopWatch, Logger: log})
			}, subscribe: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := c.broker(t, mqtttest.WithPasswordFile(pw))
			acl := filepath.Join(t.TempDir(), "acl")
			if err := os.WriteFile(acl, []byte(c.deny), 0o600); err != nil {
				t.Fatal(err)
			}
			after := c.broker(t, mqtttest.WithPasswordFile(pw), mqtttest.WithACLFile(acl))
			proxy := startProxy(t, before.Addr())
			logged := &recordLog{min: slog.LevelDebug}
			s, err := c.start(t, userConnection(proxy.URL(), c.user), slog.New(logged))
			if err != nil {
				t.Fatalf("the first connection: %v", err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			var observer *Watcher
			if c.will {
				observer, err = Watch(testCtx(t), WatchConfig{Connection: userConnection(after.URL(), stopObserver),
					Org: "acme", Unit: "lab", ClientID: stopObserver})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { observer.Close(context.Background()) })
			}

			proxy.switchTo(after.Addr())
			select {
			case <-s.Done():
			case <-testCtx(t).Done():
				t.Fatalf("not stopped; the log: %+v", logged.matching(""))
			}
			var code byte
			var se *SubscribeError
			var pe *PublishError
			switch {
			case c.subscribe && errors.As(s.Err(), &se):
				code = se.ReasonCode
			case !c.subscribe && errors.As(s.Err(), &pe):
				code = pe.ReasonCode
			default:
				t.Fatalf("Err() = %v, want the broker's refusal (subscribe: %v)", s.Err(), c.subscribe)
			}
			if code != 0x87 {
				t.Errorf("refused with 0x%02x, want 0x87", code)
			}
			// Done is closed once autopaho has ended: the connection to the
			// first broker and the refused one are all there will be.
			if n := proxy.connections(); n != 2 {
				t.Errorf("%d connections, want 2: the first, and the refused one", n)
			}
			if recs := logged.matching("refused by the broker for good"); len(recs) != 1 || recs[0].level != slog.LevelError {
				t.Errorf("the stop was logged as %+v, want one error line", recs)
			}
			if recs := logged.matching("failed after connect; reconnecting"); len(recs) != 0 {
				t.Errorf("the refusal logged as retried: %+v", recs)
			}
			if c.will {
				eventually(t, "the agent offline (its Will)", 20*time.Second, func() bool {
					e, ok := observer.Lookup("echo")
					return ok && e.Status() == presence.StatusOffline && e.Source() == presence.SourceLWT
				})
			}
			if c.stopped != nil {
				c.stopped(t, s)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close after the stop: %v", err)
			}
			if s.Err() == nil {
				t.Error("Err is nil after Close: it says why the connection stopped")
			}
			if n := proxy.connections(); n != 2 {
				t.Errorf("%d connections after Close, want 2", n)
			}
		})
	}
}

// TestNotStoppedByClose: Close does not close Done, and Err stays nil.
func TestNotStoppedByClose(t *testing.T) {
	b := startBroker(t, false)
	a := startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "echo",
		Card: testCard("Echo"), Server: echoServer(t)})
	if err := a.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
		t.Error("Done closed by Close")
	default:
	}
	if err := a.Err(); err != nil {
		t.Errorf("Err after Close: %v", err)
	}
}

// TestKeepsReconnectingWhileRefusedForNow: a card refused after a
// reconnect with a reason that may pass (0x97, card updates too frequent
// for the embedded broker's registry) makes the agent reconnect, with the
// backoff, until the broker takes it; it never stops.
func TestKeepsReconnectingWhileRefusedForNow(t *testing.T) {
	t.Parallel()
	// One card a minute: the agent's own first card takes the minute's
	// update.
	strict, err := broker.Start(testCtx(t), broker.Config{ValidateCards: true, CardUpdatesPerMinute: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { strict.Close() })
	// The same broker once the limit is lifted: a broker restarted without
	// it, which the proxy plays by switching.
	lifted, err := broker.Start(testCtx(t), broker.Config{ValidateCards: true, CardUpdatesPerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lifted.Close() })
	proxy := startProxy(t, strict.Addr())
	logged := &recordLog{min: slog.LevelDebug}
	a := startAgent(t, AgentConfig{Connection: Connection{Broker: proxy.URL()}, Org: "acme", Unit: "lab", ID: "echo",
		Card: testCard("Echo"), Server: echoServer(t), Logger: slog.New(logged)})

	// A second card within the minute is refused (UpdateCard says so); the
	// agent keeps it, to announce on every reconnect.
	second := testCard("Echo, second edition")
	var pe *PublishError
	if err := a.UpdateCard(testCtx(t), second); !errors.As(err, &pe) || pe.ReasonCode != 0x97 {
		t.Fatalf("UpdateCard within the minute: %v, want PUBACK 0x97", err)
	}
	proxy.cut()
	eventually(t, "three announces refused after reconnects", 30*time.Second, func() bool {
		return strict.Denials().CardRate >= 4 // UpdateCard's and three announces
	})
	select {
	case <-a.Done():
		t.Fatalf("stopped on a refusal that may pass: %v", a.Err())
	default:
	}
	if n := proxy.connections(); n < 4 {
		t.Errorf("%d connections for three refused announces", n)
	}

	watch, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: lifted.URL()}, Org: "acme", Unit: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close(context.Background()) })
	proxy.switchTo(lifted.Addr())
	eventually(t, "the second card online once the broker takes it", 30*time.Second, func() bool {
		e, ok := watch.Lookup("echo")
		return ok && e.Status() == presence.StatusOnline && e.Card != nil && e.Card.Name == second.Name
	})
	eventually(t, "ready", 30*time.Second, func() bool {
		a.conn.mu.Lock()
		defer a.conn.mu.Unlock()
		return a.conn.up && !a.conn.readyAt.IsZero()
	})
	select {
	case <-a.Done():
		t.Fatalf("stopped: %v", a.Err())
	default:
	}
	if err := a.Err(); err != nil {
		t.Errorf("Err while running: %v", err)
	}
	if recs := logged.matching("failed after connect; reconnecting"); len(recs) == 0 || recs[0].level != slog.LevelError {
		t.Errorf("the refusals were logged as %+v, want an error line for the burst", recs)
	}
	if recs := logged.matching("for good"); len(recs) != 0 {
		t.Errorf("logged as a stop: %+v", recs)
	}
}
