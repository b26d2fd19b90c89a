package broker

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Defaults of the broker's resource limits (see Config).
const (
	// DefaultMaxPacketSize is the default of Config.MaxPacketSize: 1 MiB.
	DefaultMaxPacketSize = 1 << 20
	// DefaultConnectionRate is the default of Config.ConnectionRate: new
	// connections per second from one source address, on average.
	DefaultConnectionRate = 50
	// DefaultConnectionBurst is the default of Config.ConnectionBurst: the
	// connections one source address may open at once.
	DefaultConnectionBurst = 500
	// DefaultMaxSessionExpiry is the default of Config.MaxSessionExpiry.
	DefaultMaxSessionExpiry = 24 * time.Hour
	// DefaultMaxConnectionsPerAddress is the default of
	// Config.MaxConnectionsPerAddress.
	DefaultMaxConnectionsPerAddress = 1000

	// maxRateKeys bounds a rate limiter's table; past it, keys whose
	// bucket has refilled are forgotten, else the fullest one.
	maxRateKeys = 10000
)

// rateLimiter is a token bucket per key: burst tokens, refilled at rate
// per second; each allowed event takes one.
type rateLimiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens  float64
	last    time.Time
	limited bool // the last event was refused
}

func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: make(map[string]*bucket)}
}

// allow takes a token of key's bucket, or reports false when it is empty.
func (l *rateLimiter) allow(key string) bool {
	ok, _ := l.take(key)
	return ok
}

// take is allow that also reports whether this refusal is the first since
// the key was last allowed (to log once per episode).
func (l *rateLimiter) take(key string) (ok, firstRefusal bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxRateKeys {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	} else {
		b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		first := !b.limited
		b.limited = true
		return false, first
	}
	b.tokens--
	b.limited = false
	return true, false
}

// prune forgets the buckets that have refilled (they would start full
// anyway); when none has, it forgets the fullest one, so the table never
// holds more than maxRateKeys (that key starts again with a full burst).
func (l *rateLimiter) prune(now time.Time) {
	fullest, most := "", -1.0
	for k, b := range l.buckets {
		tokens := b.tokens + now.Sub(b.last).Seconds()*l.rate
		if tokens >= l.burst {
			delete(l.buckets, k)
			continue
		}
		if tokens > most {
			fullest, most = k, tokens
		}
	}
	if len(l.buckets) >= maxRateKeys {
		delete(l.buckets, fullest)
	}
}

// connLimiter admits new connections: at most ConnectionRate per second
// per source IP address, ConnectionBurst at once, and at most
// MaxConnectionsPerAddress open.
type connLimiter struct {
	rate    *rateLimiter // nil: no rate limit
	perAddr int          // 0: no limit on open connections
	counts  *denials
	log     *slog.Logger
	deny    *denialLog

	mu   sync.Mutex
	open map[string]int // source address → open connections
}

// remoteHost returns the IP address of conn's peer.
func remoteHost(conn net.Conn) string {
	host := conn.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host
}

// admit reports whether conn may go on; a refused connection is closed by
// the caller at once, before any byte is read (the client sees the
// connection closed; it has sent no CONNECT a CONNACK 0x9F could answer).
// An admitted connection is released when it is served.
func (c *connLimiter) admit(conn net.Conn) bool {
	host := remoteHost(conn)
	if c.rate != nil {
		if ok, first := c.rate.take(host); !ok {
			c.counts.connectionRate.Add(1)
			if first {
				c.log.Warn("broker: connection rate exceeded; closing new connections from this address until it slows down",
					"remote", host)
			}
			return false
		}
	}
	if c.perAddr > 0 {
		c.mu.Lock()
		n := c.open[host]
		if n >= c.perAddr {
			c.mu.Unlock()
			c.counts.connectionRate.Add(1)
			c.deny.warn(c.log, denyConnections, host, "broker: too many open connections from this address; closing a new one", "remote", host, "open", n)
			return false
		}
		c.open[host] = n + 1
		c.mu.Unlock()
	}
	return true
}

// release forgets an admitted connection once it is served.
func (c *connLimiter) release(conn net.Conn) {
	if c.perAddr <= 0 {
		return
	}
	host := remoteHost(conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[host] <= 1 {
		delete(c.open, host)
	} else {
		c.open[host]--
	}
}

// errPacketTooLarge ends the read side of a connection that announced a
// packet over the limit.
var errPacketTooLarge = errors.New("broker: packet larger than the maximum packet size")

// limitConn is a connection as mochi sees it (over TLS, the decrypted
// side). It follows the MQTT fixed headers of what the client sends
// (MQTT v5 §2.1) and, when a packet announces more than max bytes in all,
// hands mochi the bytes before it, then (on mochi's next read) disconnects
// the client with DISCONNECT 0x95 once its session is established (MQTT
// v5 §3.1.2.25, §4.13) and fails the read, so the packet is never read
// into memory. (mochi v2.7.9 checks the same limit, but closes the
// connection without DISCONNECT.) A connection whose CONNECT is too large
// is closed without CONNACK.
type limitConn struct {
	net.Conn
	max        uint32
	disconnect func(*mqtt.Client) // sends DISCONNECT 0x95
	counts     *denials
	client     atomic.Pointer[mqtt.Client] // set when the session is established

	// Read-side state, used by the reading goroutine only.
	state    uint8  // stType, stLength, stBody
	length   uint32 // Remaining Length so far
	lenBytes int    // its bytes so far
	body     uint64 // body bytes still to come
	opaque   bool   // a malformed header: stop following (mochi refuses it)
	tooLarge bool   // the bytes before the oversized packet were handed over

	// send is the write side (sendbuf.go).
	send sendQueue
}

const (
	stType = iota
	stLength
	stBody
)

// Read reads and follows packet boundaries.
func (c *limitConn) Read(p []byte) (int, error) {
	if c.tooLarge {
		return 0, c.fail()
	}
	if c.send.stopRead.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if c.send.stopRead.Load() {
		// Closed while reading: what was read is dropped (sendbuf.go).
		return 0, net.ErrClosed
	}
	if c.opaque || n == 0 {
		return n, err
	}
	start := 0 // where the current packet's header starts in p
	for i := 0; i < n; {
		switch c.state {
		case stType:
			start = i
			c.state, c.length, c.lenBytes = stLength, 0, 0
			i++
		case stLength:
			b := p[i]
			i++
			c.length |= uint32(b&0x7f) << (7 * c.lenBytes)
			c.lenBytes++
			if b&0x80 != 0 {
				if c.lenBytes == 4 {
					c.opaque = true // malformed Remaining Length (MQTT v5 §1.5.5)
					return n, err
				}
				continue
			}
			if size := 1 + uint64(c.lenBytes) + uint64(c.length); size > uint64(c.max) {
				if start > 0 {
					c.tooLarge = true
					return start, nil
				}
				return 0, c.fail()
			}
			c.body = uint64(c.length)
			c.state = stBody
			if c.body == 0 {
				c.state = stType
			}
		case stBody:
			k := min(c.body, uint64(n-i))
			i += int(k)
			c.body -= k
			if c.body == 0 {
				c.state = stType
			}
		}
	}
	return n, err
}

// fail disconnects the client (if its session is up) and returns the read
// error; mochi then sends the Will and closes the connection.
func (c *limitConn) fail() error {
	c.counts.packetSize.Add(1)
	if cl := c.client.Load(); cl != nil && c.disconnect != nil {
		c.disconnect(cl)
	}
	return errPacketTooLarge
}

// tlsState reports the TLS state of a connection served over TLS.
func (c *limitConn) tlsState() (tls.ConnectionState, bool) {
	if t, ok := c.Conn.(*tls.Conn); ok {
		return t.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// limitsHook announces the maximum packet size in CONNACK (MQTT v5
// §3.2.2.3.6; mochi announces none) and tells each connection its client
// once the session is established.
type limitsHook struct {
	mqtt.HookBase
	maxPacketSize uint32
}

// ID names the hook in mochi's log.
func (*limitsHook) ID() string { return "a2a-limits" }

// Provides reports the events the hook handles; its part of
// OnPacketEncode (encode) runs in packetEncoder.
func (*limitsHook) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablished
}

// encode sets Maximum Packet Size on a successful CONNACK.
func (h *limitsHook) encode(pk *packets.Packet) {
	if pk.FixedHeader.Type == packets.Connack && pk.ReasonCode == packets.CodeSuccess.Code {
		pk.Properties.MaximumPacketSize = h.maxPacketSize
	}
}

// OnSessionEstablished lets the connection disconnect the client with
// 0x95 from now on; mochi reads nothing between CONNACK and this.
func (h *limitsHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if c, ok := cl.Net.Conn.(*limitConn); ok {
		c.client.Store(cl)
	}
}

// connGate returns the listener's admission check and its release of an
// admitted connection (the connection limits; nil without any), and its
// wrapping of each admitted connection (TLS, then limitConn).
func connGate(cfg *Config, opts *mqtt.Options, srv *mqtt.Server, counts *denials, deny *denialLog) (admit func(net.Conn) bool, release func(net.Conn), wrap func(net.Conn) net.Conn) {
	l := &connLimiter{perAddr: max(0, orDefault(cfg.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress)),
		counts: counts, log: opts.Logger, deny: deny, open: make(map[string]int)}
	if rate := orDefault(cfg.ConnectionRate, DefaultConnectionRate); rate > 0 {
		l.rate = newRateLimiter(rate, orDefault(cfg.ConnectionBurst, DefaultConnectionBurst), cfg.now)
	}
	if l.rate != nil || l.perAddr > 0 {
		admit, release = l.admit, l.release
	}
	maxSize := opts.Capabilities.MaximumPacketSize
	maxPending := cfg.maxPendingBytes(maxSize)
	overflowed := func(c *limitConn) {
		counts.pendingBytes.Add(1)
		host, args := remoteHost(c), []any{"max", maxPending}
		if cl := c.client.Load(); cl != nil {
			args = append(args, "client", cl.ID, "user", string(cl.Properties.Username))
		}
		deny.warn(opts.Logger, denyPendingBytes, host, "broker: client leaves more than MaxPendingBytes unread; disconnecting (0x97)",
			append(args, "remote", host)...)
	}
	disconnect := func(cl *mqtt.Client) {
		deny.warn(opts.Logger, denyPacketSize, hostOf(cl.Net.Remote), "broker: packet larger than the maximum packet size; disconnecting (0x95)",
			"client", cl.ID, "user", string(cl.Properties.Username), "max", maxSize)
		// The error is the code the client is disconnected with.
		_ = srv.DisconnectClient(cl, packets.ErrPacketTooLarge)
	}
	tlsConfig := cfg.TLS
	wrap = func(c net.Conn) net.Conn {
		if tlsConfig != nil {
			c = tls.Server(c, tlsConfig)
		}
		lc := &limitConn{Conn: c, max: maxSize, disconnect: disconnect, counts: counts}
		lc.startWriter(maxPending, orDefault(cfg.closeFlush, closeFlushTimeout), overflowed)
		return lc
	}
	return admit, release, wrap
}
