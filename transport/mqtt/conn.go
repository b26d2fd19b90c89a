package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
)

// ErrBrokerUnreachable is returned when the first connection to the broker
// cannot be made within the connect timeout. A broker that answers with a
// refusal was reached: NewAgent, NewClient and Watch then fail at once with
// a *ConnectError instead.
var ErrBrokerUnreachable = errors.New("mqtt: broker unreachable")

// ErrStopped is wrapped, together with the refusal that stopped it, by the
// error of every publish an Agent or a Client attempts once its connection
// has stopped for good (see Agent.Done and the package documentation,
// "Reconnects").
var ErrStopped = errors.New("mqtt: connection stopped for good")

// ParseBrokerURL accepts mqtt://host:port and tcp://host:port, and
// mqtts://, ssl:// or tls:// for TLS. A missing port is 1883 (8883 with
// TLS). The URL may carry a user name and password, mqtt://user:pass@host
// (see Connection.Broker); an error quotes the URL with its password
// redacted (RedactBrokerURL).
func ParseBrokerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("mqtt: broker URL %q: want mqtt://host:port", RedactBrokerURL(s))
	}
	tlsScheme := false
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
	case "mqtts", "ssl", "tls":
		tlsScheme = true
	default:
		return nil, fmt.Errorf("mqtt: broker URL %q: scheme %q is not mqtt, tcp, mqtts, ssl or tls", RedactBrokerURL(s), u.Scheme)
	}
	if u.Port() == "" {
		port := "1883"
		if tlsScheme {
			port = "8883"
		}
		u.Host = u.Host + ":" + port
	}
	return u, nil
}

// RedactBrokerURL returns s with the password of its userinfo, if any,
// replaced by "xxxxx", as url.URL.Redacted does; the user name stays. It
// also redacts a string that does not parse as a URL (a password with a
// malformed percent-encoding, say), taking the userinfo to end at the last
// "@" of the authority (RFC 3986 §3.2).
func RedactBrokerURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Opaque == "" && u.Host != "" {
		return u.Redacted()
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(s[start:end], "@")
	if at < 0 {
		return s
	}
	at += start
	user, _, hasPassword := strings.Cut(s[start:at], ":")
	if !hasPassword {
		return s
	}
	return s[:start] + user + ":xxxxx" + s[at:]
}

// urlCredentials fills in the user name and password of the broker URL's
// userinfo (u.User: RFC 3986 §3.2.1, percent-decoded by url.Parse) that c
// leaves unset. A user name in both that differs is an error; a password
// in both is c's.
func (c *connConfig) urlCredentials(u *url.URL) error {
	if u.User == nil {
		return nil
	}
	switch user := u.User.Username(); {
	case c.username == "":
		c.username = user
	case user != "" && user != c.username:
		return fmt.Errorf("mqtt: broker URL %s: its user name %q conflicts with Connection.Username %q: give the user name once",
			RedactBrokerURL(c.broker), user, c.username)
	}
	if p, ok := u.User.Password(); ok && len(c.password) == 0 {
		c.password = []byte(p)
	}
	return nil
}

func isTLS(u *url.URL) bool {
	switch strings.ToLower(u.Scheme) {
	case "mqtts", "ssl", "tls":
		return true
	}
	return false
}

// Connection is what an Agent, a Client and a Watch share about their
// broker connection.
type Connection struct {
	// Broker is the broker URL: mqtt://host:port, tcp://host:port, or
	// mqtts:// / ssl:// / tls:// with TLS (see ParseBrokerURL).
	//
	// It may carry credentials in its userinfo, mqtt://user:pass@host:port
	// (RFC 3986 §3.2.1; percent-encode a reserved character of the user
	// name or password, such as "/" as %2F or "@" as %40): they are
	// percent-decoded and used when Username, respectively Password, is
	// not set. A user name in the URL that differs from Username is an
	// error (NewAgent, NewClient and Watch fail at once, quoting no
	// password); a password in both is Password. The URL is sent to no
	// one: the broker gets the credentials in CONNECT only, the dialer
	// the URL without its userinfo, and every error and log message
	// quotes it with its password redacted (RedactBrokerURL). An Agent
	// Card's interface URL (Interface) should be given the URL without
	// its userinfo.
	Broker string
	// TLS configures TLS connections (optional).
	TLS *tls.Config
	// Username and Password authenticate the connection (optional; see
	// Broker for credentials in the URL).
	Username string
	Password []byte
	// KeepAlive is the MQTT keep-alive (default 30 s); a crashed agent's
	// Will fires about 1.5 × KeepAlive after its last packet.
	KeepAlive time.Duration
	// ConnectTimeout bounds the first connection, its subscriptions and
	// its announce included, and, after every reconnect, the subscriptions
	// and the announce (default 10 s).
	ConnectTimeout time.Duration
	// OnConnectionChange, when set, is told when a connection that was
	// up (its subscriptions granted, its announce acknowledged) is lost,
	// with up false and why when it is known (nil otherwise), and when a
	// reconnect after such a loss is up again, with up true and a nil
	// error. It is not called for the first connection, nor when Close
	// (or Kill) ends the connection. Calls come in order, from the
	// connection's own goroutines: it must return quickly.
	OnConnectionChange func(up bool, err error)
}

// dialConfig is the connection's part of a connConfig.
func (c Connection) dialConfig(clientID string, log *slog.Logger, onPublish func(paho.PublishReceived),
	onUp func(context.Context, *autopaho.ConnectionManager, BrokerCapabilities) error) connConfig {
	return connConfig{broker: c.Broker, tls: c.TLS, clientID: clientID, keepAlive: c.KeepAlive,
		connectTimeout: c.ConnectTimeout, username: c.Username, password: c.Password, log: log,
		onPublish: onPublish, onUp: onUp, onChange: c.OnConnectionChange}
}

// connConfig is what dial needs to know about a connection.
type connConfig struct {
	broker         string
	tls            *tls.Config
	clientID       string
	keepAlive      time.Duration
	connectTimeout time.Duration
	username       string
	password       []byte
	log            *slog.Logger
	// will returns the Last Will for each CONNECT (nil for none).
	will func() (*paho.WillMessage, *paho.WillProperties)
	// onUp runs, in its own goroutine, after every connection up, with a
	// context that ends after connectTimeout or with the connection, and
	// the capabilities of its CONNACK: it checks those it needs, subscribes
	// and announces, and returns an error unless every subscription was
	// granted and the announce acknowledged. A connection whose onUp fails
	// is dropped and made again, or, refused for good, stopped (see
	// conn.confirm).
	onUp func(ctx context.Context, cm *autopaho.ConnectionManager, caps BrokerCapabilities) error
	// onPublish receives every publish; it must not block.
	onPublish func(paho.PublishReceived)
	// onChange is Connection.OnConnectionChange.
	onChange func(up bool, err error)
}

// Reconnect pacing. autopaho reconnects at once after a connection goes
// down (then backs off while attempts fail); a connection that goes down
// before it was ready, or soon after, makes the next reconnect wait, longer
// each time in a row, so that a burst of session takeovers (someone else
// connecting with this Client ID) or a duplicate of this client does not
// make it reconnect in a tight loop, and it is back within
// reconnectBackoffMax once the burst stops.
const (
	// stableAfter is how long a connection must stay up, once ready, for
	// the next reconnect to go at once.
	stableAfter = 10 * time.Second
	// reconnectBackoffMin is the first wait after an unstable connection;
	// it doubles with every unstable connection in a row, up to
	// reconnectBackoffMax (each wait is jittered down by up to half).
	reconnectBackoffMin = 100 * time.Millisecond
	reconnectBackoffMax = 2 * time.Second
)

// conn is one managed connection.
type conn struct {
	cm     *autopaho.ConnectionManager
	cancel context.CancelFunc
	ctx    context.Context
	cfg    connConfig
	// killed drops the connection without DISCONNECT.
	killed atomic.Bool
	// disconnecting is set once a normal DISCONNECT is sent: the
	// connection's Close then waits for the broker to close it
	// (lingerClose).
	disconnecting atomic.Bool
	// ready is closed once a connection is confirmed (onUp succeeded).
	ready     chan struct{}
	readyOnce sync.Once
	// refused receives the first connection's onUp error when it is a
	// refusal (a SUBACK or PUBACK reason code of 0x80 or more, a
	// capability the CONNACK does not offer), which dial returns at once.
	refused chan error
	// done is closed once the connection has stopped for good on its own:
	// a later connection's onUp was refused for good (see confirm and
	// stop). stopErr says why.
	done chan struct{}

	// takeovers logs the session taken over by another connection with
	// this Client ID (DISCONNECT 0x8E); disconnects, the broker's other
	// DISCONNECTs; lost, connections lost without DISCONNECT (mosquitto
	// 2.0.11 closes a session taken over without one); failures, the
	// connections dropped because onUp failed; refusedConnects, the
	// reconnects the broker refused (CONNACK).
	takeovers, disconnects, lost, failures, refusedConnects *eventLog

	mu       sync.Mutex
	mgr      *autopaho.ConnectionManager // cm, for autopaho's callbacks
	netc     net.Conn                    // the network connection of the latest attempt
	gen      uint64                      // connections up so far
	up       bool                        // connection gen is up
	upCancel context.CancelFunc          // ends connection gen's onUp
	readyAt  time.Time                   // when connection gen was confirmed (zero: not yet)
	dropped  bool                        // connection gen was dropped by confirm
	unstable int                         // connections in a row that went down before stableAfter
	lastErr  error                       // the latest onUp failure
	stopErr  error                       // the permanent refusal that stops the connection (nil: none)
	closing  bool                        // close has begun
	caps     BrokerCapabilities          // of connection gen's CONNACK
	capsSeen bool                        // caps were logged
	downErr  error                       // why the latest connection went down, when known
	lostUp   bool                        // onChange was told of a loss, not yet of the reconnect
}

// dial starts a managed connection and waits until it is up and confirmed:
// the first CONNACK, then onUp (subscriptions and announce) succeeded.
// Within the connect timeout a connection whose onUp fails is made again;
// a CONNECT refused by the broker (*ConnectError) and an onUp refused
// (isRefusal) fail dial at once.
func dial(ctx context.Context, c connConfig) (*conn, error) {
	u, err := ParseBrokerURL(c.broker)
	if err != nil {
		return nil, err
	}
	if err := c.urlCredentials(u); err != nil {
		return nil, err
	}
	// autopaho ignores the userinfo of its server URLs, but quotes them
	// in its errors: it gets the URL without, and every message of this
	// connection quotes it redacted.
	u.User = nil
	c.broker = RedactBrokerURL(c.broker)
	if c.keepAlive == 0 {
		c.keepAlive = 30 * time.Second
	}
	if c.connectTimeout == 0 {
		c.connectTimeout = 10 * time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cn := &conn{cancel: cancel, ctx: runCtx, cfg: c, ready: make(chan struct{}), refused: make(chan error, 1),
		done: make(chan struct{}),
		takeovers: newEventLog(c.log, slog.LevelWarn,
			"mqtt: session taken over: another connection uses this client id (DISCONNECT 0x8E); reconnecting",
			"mqtt: session taken over again", "client", c.clientID),
		disconnects: newEventLog(c.log, slog.LevelWarn, "mqtt: disconnected by the broker; reconnecting",
			"mqtt: disconnected by the broker again", "client", c.clientID),
		lost: newEventLog(c.log, slog.LevelWarn, "mqtt: connection lost; reconnecting",
			"mqtt: connection lost again", "client", c.clientID),
		failures: newEventLog(c.log, slog.LevelError,
			"mqtt: subscriptions or announce failed after connect; reconnecting",
			"mqtt: subscriptions or announce failed again after connect", "client", c.clientID),
		refusedConnects: newEventLog(c.log, slog.LevelError, "mqtt: the broker refused a reconnect (CONNACK); reconnecting",
			"mqtt: the broker refused reconnects again", "client", c.clientID),
	}
	connectErr := make(chan error, 1)
	// The first connection waits for waitCtx; a CONNACK refusal ends the
	// wait at once, with the *ConnectError as its cause.
	waitCtx, waitCancel := context.WithTimeout(ctx, c.connectTimeout)
	defer waitCancel()
	awaitCtx, refuse := context.WithCancelCause(waitCtx)
	defer refuse(nil)
	cfg := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		TlsCfg:                        c.tls,
		KeepAlive:                     uint16(c.keepAlive / time.Second),
		CleanStartOnInitialConnection: true,
		// autopaho waits ReconnectBackoff(n) before attempt n (from 0): the
		// first attempt after a start or a drop goes at once unless the
		// connection dropped was unstable.
		ReconnectBackoff: func(attempt int) time.Duration {
			if attempt == 0 {
				return cn.reconnectDelay()
			}
			return min(time.Duration(attempt)*500*time.Millisecond, 5*time.Second)
		},
		ConnectTimeout:  c.connectTimeout,
		ConnectUsername: c.username,
		ConnectPassword: c.password,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, ca *paho.Connack) {
			cn.connectionUp(cm, ca)
		},
		OnConnectError: func(err error) {
			var ca *autopaho.ConnackError
			if errors.As(err, &ca) {
				cn.connectRefused(&ConnectError{Broker: c.broker, ReasonCode: ca.ReasonCode, Reason: ca.Reason}, refuse)
				return
			}
			c.log.Debug("mqtt: connect attempt failed", "broker", c.broker, "err", err)
			select {
			case connectErr <- err:
			default:
			}
		},
		AttemptConnection: func(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
			var d net.Dialer
			var nc net.Conn
			var err error
			if isTLS(u) {
				nc, err = (&tls.Dialer{NetDialer: &d, Config: c.tls}).DialContext(ctx, "tcp", u.Host)
			} else {
				nc, err = d.DialContext(ctx, "tcp", u.Host)
			}
			if err != nil {
				return nil, err
			}
			cn.mu.Lock()
			cn.netc = nc
			cn.mu.Unlock()
			if tc, ok := nc.(*net.TCPConn); ok {
				return newBufferedTCP(tc, &cn.disconnecting), nil
			}
			return &lingeringConn{Conn: nc, graceful: &cn.disconnecting}, nil
		},
		OnConnectionDown: cn.connectionDown,
		DisconnectPacketBuilder: func() *paho.Disconnect {
			if cn.killed.Load() {
				return nil
			}
			cn.disconnecting.Store(true)
			return &paho.Disconnect{ReasonCode: 0}
		},
		ClientConfig: paho.ClientConfig{ClientID: c.clientID, Session: newSession(),
			OnServerDisconnect: cn.serverDisconnect, OnClientError: cn.clientError},
	}
	if c.username != "" {
		cfg.ConnectUsername = c.username
	}
	if c.will != nil {
		cfg.ConnectPacketBuilder = func(p *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			p.WillMessage, p.WillProperties = c.will()
			return p, nil
		}
	}
	if c.onPublish != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				c.onPublish(pr)
				return true, nil
			},
		}
	}
	cm, err := autopaho.NewConnection(runCtx, cfg)
	if err != nil {
		cancel()
		cn.closeLogs()
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	cn.cm = cm
	cn.mu.Lock()
	cn.mgr = cm
	cn.mu.Unlock()
	if err := cm.AwaitConnection(awaitCtx); err != nil {
		cancel()
		<-cm.Done()
		cn.closeLogs()
		var refused *ConnectError
		if errors.As(context.Cause(awaitCtx), &refused) {
			return nil, refused
		}
		var last error
		select {
		case last = <-connectErr:
		default:
		}
		if last == nil && ctx.Err() != nil {
			last = ctx.Err()
		}
		if last != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBrokerUnreachable, c.broker, last)
		}
		return nil, fmt.Errorf("%w: %s", ErrBrokerUnreachable, c.broker)
	}
	select {
	case <-cn.ready:
		return cn, nil
	case err = <-cn.refused:
	case <-waitCtx.Done():
		cn.mu.Lock()
		err = cn.lastErr
		cn.mu.Unlock()
		if err == nil {
			err = waitCtx.Err()
		}
	}
	cn.kill()
	return nil, err
}

// connectionUp starts confirming a connection that has just come up, and
// keeps the capabilities of its CONNACK, logged at Info the first time and
// whenever they change.
func (c *conn) connectionUp(cm *autopaho.ConnectionManager, ca *paho.Connack) {
	caps := capabilitiesOf(ca)
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.up, c.readyAt, c.dropped, c.downErr = true, time.Time{}, false, nil
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.connectTimeout)
	c.upCancel = cancel
	changed := !c.capsSeen || caps != c.caps
	c.caps, c.capsSeen = caps, true
	c.mu.Unlock()
	if changed {
		logCapabilities(c.cfg.log, c.cfg.clientID, c.cfg.broker, caps)
	}
	go c.confirm(ctx, cancel, gen, cm, caps)
}

// connectRefused handles a CONNACK refusal (MQTT v5 §3.2.2.2). Until the
// first connection is ready, dial is waiting: the refusal ends its wait
// (refuse before any connection came up, the refused channel after). Once
// the connection was ready, a refusal that retrying cannot change
// (isPermanentRefusal) stops the connection for good; any other is
// logged, once per burst, and autopaho tries again with its backoff. It
// runs on autopaho's connecting goroutine, so the stop runs on its own.
func (c *conn) connectRefused(err *ConnectError, refuse context.CancelCauseFunc) {
	c.mu.Lock()
	first := c.gen == 0
	c.lastErr = err
	if first {
		c.mu.Unlock()
		refuse(err)
		return
	}
	wasReady := false
	select {
	case <-c.ready:
		wasReady = true
	default:
	}
	if wasReady && isPermanentRefusal(err) && c.stopErr == nil && !c.closing && c.ctx.Err() == nil {
		c.stopErr = err
		c.killed.Store(true)
		cm := c.mgr
		c.mu.Unlock()
		go c.stop(cm, nil, err)
		return
	}
	c.mu.Unlock()
	if !wasReady {
		// dial is still waiting (its first connection failed to
		// confirm): it returns the refusal.
		select {
		case c.refused <- err:
		default:
		}
		return
	}
	c.refusedConnects.event("reason_code", fmt.Sprintf("0x%02x", err.ReasonCode), "reason_name", ReasonName(err.ReasonCode), "err", err)
}

// confirm checks that connection gen's broker offers QoS 1, then runs onUp
// for it. If either fails while the connection is still up (a capability
// missing, a subscription or the announce refused, or not acknowledged in
// time), the connection is no use: it is dropped (the network
// connection closed, so the broker publishes the Will, as for any
// connection lost) and autopaho makes it again, after a backoff; but a
// refusal that retrying cannot change (isPermanentRefusal), once the
// connection was ready before, stops it for good (see stop). A failure
// because the connection went down needs nothing: the next connection
// confirms itself.
func (c *conn) confirm(ctx context.Context, cancel context.CancelFunc, gen uint64, cm *autopaho.ConnectionManager, caps BrokerCapabilities) {
	defer cancel()
	err := caps.checkQoS()
	if err == nil && c.cfg.onUp != nil {
		err = c.cfg.onUp(ctx, cm, caps)
	}
	c.mu.Lock()
	if gen != c.gen || !c.up || c.ctx.Err() != nil || c.closing || c.stopErr != nil {
		c.mu.Unlock()
		return
	}
	if err == nil {
		c.readyAt = time.Now()
		back := c.lostUp
		c.lostUp = false
		if back && c.cfg.onChange != nil {
			// Under c.mu, so that a loss that follows is told after.
			c.cfg.onChange(true, nil)
		}
		c.mu.Unlock()
		c.readyOnce.Do(func() { close(c.ready) })
		return
	}
	c.lastErr, c.dropped = err, true
	nc := c.netc
	wasReady := false
	select {
	case <-c.ready:
		wasReady = true
	default:
	}
	if wasReady && isPermanentRefusal(err) {
		// Under c.mu, so that connectionDown, which reports whether to
		// reconnect, sees killed set once it sees this connection up.
		c.stopErr = err
		c.killed.Store(true)
		c.mu.Unlock()
		c.stop(cm, nc, err)
		return
	}
	c.mu.Unlock()
	switch {
	case wasReady && connectionGone(err):
		// The connection went down under the subscriptions (a takeover,
		// a broker that closed it): the lost connection is logged as such,
		// and the reconnect subscribes again.
	case wasReady:
		c.failures.event("err", err)
	default:
		// dial is waiting: it returns a refusal, and the last error if the
		// connect timeout passes; nothing to log.
		if isRefusal(err) {
			select {
			case c.refused <- err:
			default:
			}
			return
		}
	}
	if nc != nil {
		nc.Close()
	}
}

// isConnectionDown reports whether err says there was no connection to
// send on, or that it went down before the acknowledgement.
func isConnectionDown(err error) bool {
	return errors.Is(err, autopaho.ConnectionDownError) || errors.Is(err, session.ErrNoConnection) ||
		errors.Is(err, paho.ErrConnectionLost)
}

// stop ends a connection refused for good: its network connection is
// closed without DISCONNECT (killed is set), so the broker publishes the
// Will as for any connection lost, autopaho stops reconnecting, the
// refusal is logged once, and done is closed.
func (c *conn) stop(cm *autopaho.ConnectionManager, nc net.Conn, err error) {
	if nc != nil {
		nc.Close()
	}
	c.cancel()
	<-cm.Done()
	c.closeLogs()
	attrs := []any{"client", c.cfg.clientID, "broker", c.cfg.broker}
	if code, ok := reasonCode(err); ok {
		attrs = append(attrs, "reason_code", fmt.Sprintf("0x%02x", code), "reason_name", ReasonName(code))
	}
	c.cfg.log.Error("mqtt: refused by the broker for good after a reconnect; stopped, no more reconnects", append(attrs, "err", err)...)
	close(c.done)
}

// err returns why the connection stopped for good once done is closed,
// else nil.
func (c *conn) err() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// stoppedError returns, once the connection is stopping or has stopped for
// good, an error wrapping ErrStopped and the refusal; else nil.
func (c *conn) stoppedError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopErr == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrStopped, c.stopErr)
}

// connectionDown ends the confirmation of the connection gone and counts
// it as unstable unless it stayed up stableAfter once ready. It reports
// whether autopaho should reconnect.
func (c *conn) connectionDown() bool {
	c.mu.Lock()
	if c.upCancel != nil {
		c.upCancel()
		c.upCancel = nil
	}
	if c.up && !c.readyAt.IsZero() && time.Since(c.readyAt) >= stableAfter {
		c.unstable = 0
	} else {
		c.unstable++
	}
	if c.up && !c.readyAt.IsZero() && !c.lostUp && !c.closing && !c.killed.Load() && c.ctx.Err() == nil && c.cfg.onChange != nil {
		c.lostUp = true
		c.cfg.onChange(false, c.downErr)
	}
	c.downErr = nil
	c.up = false
	c.mu.Unlock()
	return !c.killed.Load()
}

// reconnectDelay is the wait before the first attempt to reconnect: none
// after a stable connection, else reconnectBackoffMin doubled for every
// unstable connection in a row but the first, up to reconnectBackoffMax,
// jittered down by up to half.
func (c *conn) reconnectDelay() time.Duration {
	c.mu.Lock()
	n := c.unstable
	c.mu.Unlock()
	if n == 0 {
		return 0
	}
	d := reconnectBackoffMax
	if n <= 5 {
		d = min(reconnectBackoffMin<<(n-1), reconnectBackoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// serverDisconnect logs a DISCONNECT from the broker: a session taken over
// (0x8E, MQTT v5 §3.1.4) once per burst, any other reason likewise, with
// its name (§3.14.2.1). Before the first connection is ready it is also
// the failure dial reports if the connect timeout passes.
func (c *conn) serverDisconnect(d *paho.Disconnect) {
	var reason string
	if d.Properties != nil {
		reason = d.Properties.ReasonString
	}
	de := &DisconnectError{ReasonCode: d.ReasonCode, Reason: reason}
	c.mu.Lock()
	c.downErr = de
	c.mu.Unlock()
	select {
	case <-c.ready:
	default:
		c.mu.Lock()
		c.lastErr = de
		c.mu.Unlock()
	}
	if d.ReasonCode == 0x8E {
		c.takeovers.event()
		return
	}
	c.disconnects.event("reason_code", fmt.Sprintf("0x%02x", d.ReasonCode), "reason_name", ReasonName(d.ReasonCode),
		"reason", reason, "err", de)
}

// clientError logs a connection lost without DISCONNECT (autopaho reports
// the first error of each connection), unless confirm dropped it or the
// connection is being closed.
func (c *conn) clientError(err error) {
	if c.killed.Load() || c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	dropped := c.dropped
	if c.downErr == nil {
		c.downErr = err
	}
	c.mu.Unlock()
	if !dropped {
		c.lost.event("err", err)
	}
}

func (c *conn) closeLogs() {
	c.takeovers.close()
	c.disconnects.close()
	c.lost.close()
	c.failures.close()
	c.refusedConnects.close()
}

// close disconnects normally (no Will) and stops reconnecting. After the
// connection stopped for good (or while it stops) there is nothing to
// disconnect: close waits for the stop to end and returns nil.
func (c *conn) close(ctx context.Context) error {
	c.mu.Lock()
	c.closing = true
	stopping := c.stopErr != nil
	c.mu.Unlock()
	if stopping {
		select {
		case <-c.done:
			return nil
		default:
		}
		select {
		case <-c.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := c.cm.Disconnect(ctx)
	c.cancel()
	select {
	case <-c.cm.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	c.closeLogs()
	if errors.Is(err, autopaho.ConnectionDownError) {
		return nil
	}
	return err
}

// kill drops the network connection without DISCONNECT, so the broker fires
// the Will, and stops reconnecting. Tests use it to simulate a crash.
func (c *conn) kill() {
	c.killed.Store(true)
	c.mu.Lock()
	if c.netc != nil {
		c.netc.Close()
	}
	c.mu.Unlock()
	c.cancel()
	<-c.cm.Done()
	c.closeLogs()
}

// capabilities returns the capabilities of the latest connection's
// CONNACK.
func (c *conn) capabilities() BrokerCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// publish sends one QoS 1 message and reports a refused publish (a PUBACK
// reason code of 0x80 or more) as a *PublishError, as it does a
// connection stopped for good (see stoppedError) and, without sending it,
// a packet over the broker's maximum size (*PacketTooLargeError).
func (c *conn) publish(ctx context.Context, p *paho.Publish) error {
	c.mu.Lock()
	stopErr, caps := c.stopErr, c.caps
	c.mu.Unlock()
	if stopErr != nil {
		return fmt.Errorf("%w: %w", ErrStopped, stopErr)
	}
	return publishVia(ctx, c.cm, caps, p)
}

// publishVia publishes on cm, whose CONNACK said caps.
func publishVia(ctx context.Context, cm *autopaho.ConnectionManager, caps BrokerCapabilities, p *paho.Publish) error {
	if err := caps.checkSize(p); err != nil {
		return err
	}
	resp, err := cm.Publish(ctx, p)
	// paho also returns an error for a refused publish: the PUBACK says why.
	if resp != nil && resp.ReasonCode >= 0x80 {
		var reason string
		if resp.Properties != nil {
			reason = resp.Properties.ReasonString
		}
		return &PublishError{Topic: p.Topic, ReasonCode: resp.ReasonCode, Reason: reason}
	}
	return err
}

// subscribe makes QoS 1 subscriptions and reports a refused one as a
// *SubscribeError: it returns nil only once the broker granted every
// filter.
// connectionGone reports whether err says the connection closed under a
// request, rather than the broker answering it.
func connectionGone(err error) bool {
	return errors.Is(err, paho.ErrConnectionLost) || errors.Is(err, autopaho.ConnectionDownError) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
}

func subscribe(ctx context.Context, cm *autopaho.ConnectionManager, filters ...string) error {
	subs := make([]paho.SubscribeOptions, len(filters))
	for i, f := range filters {
		subs[i] = paho.SubscribeOptions{Topic: f, QoS: 1}
	}
	// A broker may refuse a SUBSCRIBE with 0x91 (packet identifier in use)
	// when its identifier collides with a delivery not yet acknowledged
	// (mochi keeps one table for both directions): try again.
	for attempt := 0; ; attempt++ {
		sa, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs})
		if sa == nil {
			if err == nil {
				err = errors.New("no SUBACK")
			}
			return fmt.Errorf("subscribe: %w", err)
		}
		// paho also returns an error for a SUBACK that refuses a filter:
		// its reason codes (one per filter, MQTT v5 §3.9.3) say which.
		if len(sa.Reasons) != len(filters) {
			return fmt.Errorf("subscribe: SUBACK has %d reason codes for %d filters", len(sa.Reasons), len(filters))
		}
		inUse := false
		for i, rc := range sa.Reasons {
			switch {
			case rc == 0x91 && attempt < 4:
				inUse = true
			case rc >= 0x80:
				var reason string
				if sa.Properties != nil {
					reason = sa.Properties.ReasonString
				}
				return &SubscribeError{Filter: filters[i], ReasonCode: rc, Reason: reason}
			}
		}
		if !inUse {
			return nil
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
