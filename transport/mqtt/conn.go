package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// ErrBrokerUnreachable is returned when the first connection to the broker
// cannot be made within the connect timeout.
var ErrBrokerUnreachable = errors.New("mqtt: broker unreachable")

// ParseBrokerURL accepts mqtt://host:port and tcp://host:port, and
// mqtts://, ssl:// or tls:// for TLS. A missing port is 1883 (8883 with
// TLS).
func ParseBrokerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("mqtt: broker URL %q: want mqtt://host:port", s)
	}
	tlsScheme := false
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
	case "mqtts", "ssl", "tls":
		tlsScheme = true
	default:
		return nil, fmt.Errorf("mqtt: broker URL %q: scheme %q is not mqtt, tcp, mqtts, ssl or tls", s, u.Scheme)
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
	Broker string
	// TLS configures TLS connections (optional).
	TLS *tls.Config
	// Username and Password authenticate the connection (optional).
	Username string
	Password []byte
	// KeepAlive is the MQTT keep-alive (default 30 s); a crashed agent's
	// Will fires about 1.5 × KeepAlive after its last packet.
	KeepAlive time.Duration
	// ConnectTimeout bounds the first connection (default 10 s).
	ConnectTimeout time.Duration
}

// dialConfig is the connection's part of a connConfig.
func (c Connection) dialConfig(clientID string, log *slog.Logger, onPublish func(paho.PublishReceived),
	onUp func(context.Context, *autopaho.ConnectionManager) error) connConfig {
	return connConfig{broker: c.Broker, tls: c.TLS, clientID: clientID, keepAlive: c.KeepAlive,
		connectTimeout: c.ConnectTimeout, username: c.Username, password: c.Password, log: log,
		onPublish: onPublish, onUp: onUp}
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
	// onUp runs, in its own goroutine, after every connection up: it
	// subscribes and announces. dial returns the error of its first run; a
	// later failure (after a reconnect) is logged.
	onUp func(ctx context.Context, cm *autopaho.ConnectionManager) error
	// onPublish receives every publish; it must not block.
	onPublish func(paho.PublishReceived)
}

// conn is one managed connection.
type conn struct {
	cm     *autopaho.ConnectionManager
	cancel context.CancelFunc
	ctx    context.Context
	ups    chan struct{}
	// killed drops the connection without DISCONNECT.
	killed atomic.Bool
	netMu  sync.Mutex
	netc   net.Conn
}

// dial starts a managed connection and waits for the first CONNACK.
func dial(ctx context.Context, c connConfig) (*conn, error) {
	u, err := ParseBrokerURL(c.broker)
	if err != nil {
		return nil, err
	}
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
	cn := &conn{cancel: cancel, ctx: runCtx, ups: make(chan struct{}, 1)}
	connectErr := make(chan error, 1)
	ready := make(chan error, 1)
	cfg := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		TlsCfg:                        c.tls,
		KeepAlive:                     uint16(c.keepAlive / time.Second),
		CleanStartOnInitialConnection: true,
		// autopaho waits ReconnectBackoff(n) before attempt n (from 0): the
		// first attempt after a start or a drop goes at once.
		ReconnectBackoff: func(attempt int) time.Duration {
			return min(time.Duration(attempt)*500*time.Millisecond, 5*time.Second)
		},
		ConnectTimeout:  c.connectTimeout,
		ConnectUsername: c.username,
		ConnectPassword: c.password,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			select {
			case cn.ups <- struct{}{}:
			default:
			}
			if c.onUp == nil {
				select {
				case ready <- nil:
				default:
				}
				return
			}
			go func() {
				err := c.onUp(runCtx, cm)
				if err != nil {
					c.log.Error("mqtt: after connect", "client", c.clientID, "err", err)
				}
				select {
				case ready <- err:
				default:
				}
			}()
		},
		OnConnectError: func(err error) {
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
			cn.netMu.Lock()
			cn.netc = nc
			cn.netMu.Unlock()
			if tc, ok := nc.(*net.TCPConn); ok {
				return newBufferedTCP(tc), nil
			}
			return nc, nil
		},
		OnConnectionDown: func() bool { return !cn.killed.Load() },
		DisconnectPacketBuilder: func() *paho.Disconnect {
			if cn.killed.Load() {
				return nil
			}
			return &paho.Disconnect{ReasonCode: 0}
		},
		ClientConfig: paho.ClientConfig{ClientID: c.clientID, Session: newSession()},
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
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	cn.cm = cm
	waitCtx, waitCancel := context.WithTimeout(ctx, c.connectTimeout)
	defer waitCancel()
	if err := cm.AwaitConnection(waitCtx); err != nil {
		cancel()
		<-cm.Done()
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
	case err = <-ready:
	case <-waitCtx.Done():
		err = waitCtx.Err()
	}
	if err != nil {
		cn.kill()
		return nil, err
	}
	return cn, nil
}

// close disconnects normally (no Will) and stops reconnecting.
func (c *conn) close(ctx context.Context) error {
	err := c.cm.Disconnect(ctx)
	c.cancel()
	select {
	case <-c.cm.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if errors.Is(err, autopaho.ConnectionDownError) {
		return nil
	}
	return err
}

// kill drops the network connection without DISCONNECT, so the broker fires
// the Will, and stops reconnecting. Tests use it to simulate a crash.
func (c *conn) kill() {
	c.killed.Store(true)
	c.netMu.Lock()
	if c.netc != nil {
		c.netc.Close()
	}
	c.netMu.Unlock()
	c.cancel()
	<-c.cm.Done()
}

// publish sends one QoS 1 message and reports a refused publish (a PUBACK
// reason code of 0x80 or more) as an error.
func (c *conn) publish(ctx context.Context, p *paho.Publish) error {
	return publishVia(ctx, c.cm, p)
}

func publishVia(ctx context.Context, cm *autopaho.ConnectionManager, p *paho.Publish) error {
	resp, err := cm.Publish(ctx, p)
	if err != nil {
		return err
	}
	if resp != nil && resp.ReasonCode >= 0x80 {
		return &PublishError{Topic: p.Topic, ReasonCode: resp.ReasonCode, Reason: resp.Properties.ReasonString}
	}
	return nil
}

// PublishError reports a publish the broker refused.
type PublishError struct {
	Topic      string
	ReasonCode byte
	Reason     string
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("mqtt: publish to %s refused: reason code 0x%02x %s", e.Topic, e.ReasonCode, e.Reason)
}

// subscribe makes QoS 1 subscriptions and reports a refused one.
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
		if err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		inUse := false
		for i, rc := range sa.Reasons {
			switch {
			case rc == 0x91 && attempt < 4:
				inUse = true
			case rc >= 0x80 && i < len(filters):
				return fmt.Errorf("subscribe %s refused: reason code 0x%02x", filters[i], rc)
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
