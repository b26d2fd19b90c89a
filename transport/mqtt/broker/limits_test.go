package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// rawConn is a bare TCP connection that speaks MQTT v5 packet by packet.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(waitLong))
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// connect sends a v5 CONNECT as user (with its password; anonymous when
// user is "") and returns the CONNACK's reason code.
func (c *rawConn) connect(user string) byte {
	c.t.Helper()
	cp := packets.NewControlPacket(packets.CONNECT)
	conn := cp.Content.(*packets.Connect)
	conn.ClientID, conn.KeepAlive, conn.CleanStart = user, 30, true
	if user != "" {
		conn.Username, conn.UsernameFlag = user, true
		conn.Password, conn.PasswordFlag = []byte(password(user)), true
	}
	c.write(cp)
	p := c.read()
	ca, ok := p.Content.(*packets.Connack)
	if !ok {
		c.t.Fatalf("got %s, want CONNACK", p.PacketType())
	}
	return ca.ReasonCode
}

func (c *rawConn) write(cp *packets.ControlPacket) {
	c.t.Helper()
	if _, err := cp.WriteTo(c.conn); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) writeBytes(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) read() *packets.ControlPacket {
	c.t.Helper()
	p, err := packets.ReadPacket(c.r)
	if err != nil {
		c.t.Fatalf("read a packet: %v", err)
	}
	return p
}

// closed fails unless the broker closes the connection with nothing more
// to read.
func (c *rawConn) closed() {
	c.t.Helper()
	if b, err := c.r.ReadByte(); err == nil {
		c.t.Fatalf("read %#x, want the connection closed", b)
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatalf("the connection stayed open: %v", err)
		}
	}
}

// varint encodes an MQTT Variable Byte Integer (MQTT v5 §1.5.5).
func varint(n int) []byte {
	var b []byte
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// TestHugePublishRefused: a client that announces a 64 MB PUBLISH is
// disconnected with 0x95 as soon as the header is read; the broker never
// reads (nor allocates) the body.
func TestHugePublishRefused(t *testing.T) {
	b := startSecure(t, Config{})
	c := dialRaw(t, b.Addr())
	if got := c.connect(userMallory); got != rcSuccess {
		t.Fatalf("CONNACK %#x", got)
	}
	header := append([]byte{0x32}, varint(64<<20)...) // PUBLISH, QoS 1
	c.writeBytes(append(header, 0x00, 0x05, 'a', 'b', 'c'))
	p := c.read()
	d, ok := p.Content.(*packets.Disconnect)
	if !ok || d.ReasonCode != rcPacketTooLarge {
		t.Fatalf("got %s %+v, want DISCONNECT 0x95", p.PacketType(), p.Content)
	}
	c.closed()
	if got := b.Denials().PacketSize; got != 1 {
		t.Errorf("Denials().PacketSize = %d, want 1", got)
	}
}

// TestPacketTooLarge: a PUBLISH over Config.MaxPacketSize ends the
// connection with DISCONNECT 0x95 after the packets before it were
// handled, and the client's Will fires; CONNACK announces the limit.
func TestPacketTooLarge(t *testing.T) {
	const limit = 4096
	b := startSecure(t, Config{MaxPacketSize: limit})
	watcher := connectAs(t, b.Addr(), userReq)
	watcher.subscribe(discoveryFilter(t, "acme", "lab"), 1)
	echo := connectAs(t, b.Addr(), userEcho)
	echo.subscribe(requestTopic(t, "acme", "lab", "echo"), 1)

	disconnected := make(chan *paho.Disconnect, 1)
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	pc := paho.NewClient(paho.ClientConfig{Conn: conn, OnServerDisconnect: func(d *paho.Disconnect) { disconnected <- d }})
	defer func() { _ = conn.Close(); <-pc.Done() }()
	cp := loginAs(userMallory)
	cp.KeepAlive = 30
	lwt := card("mallory", "lwt")
	cp.WillMessage = &paho.WillMessage{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Payload: lwt, QoS: 1, Retain: true}
	cp.WillProperties = &paho.WillProperties{User: statusProps(mqttbind.StatusOffline, mqttbind.StatusSourceLWT)}
	ca, err := pc.Connect(testContext(t), cp)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Properties == nil || ca.Properties.MaximumPacketSize == nil || *ca.Properties.MaximumPacketSize != limit {
		t.Errorf("CONNACK Maximum Packet Size %+v, want %d", ca.Properties, limit)
	}
	// A request just under the limit goes through; the next, over it,
	// ends the connection.
	small := make([]byte, limit-200)
	if _, err := pc.Publish(testContext(t), &paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 0, Payload: small}); err != nil {
		t.Fatal(err)
	}
	_, _ = pc.Publish(testContext(t), &paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 0, Payload: make([]byte, 2*limit)})
	select {
	case d := <-disconnected:
		if d.ReasonCode != rcPacketTooLarge {
			t.Errorf("DISCONNECT %#x, want 0x95", d.ReasonCode)
		}
	case <-testContext(t).Done():
		t.Fatal("no DISCONNECT")
	}
	echo.await("the request under the limit", func(m *paho.Publish) bool { return len(m.Payload) == len(small) })
	watcher.await("mallory's Will", payloadIs(lwt))
	if got := b.Denials().PacketSize; got != 1 {
		t.Errorf("Denials().PacketSize = %d, want 1", got)
	}

	// The default is 1 MiB.
	d := startBroker(t, Config{})
	ca2, err := tryConnect(t, d.Addr(), &paho.Connect{ClientID: "o/u/a", CleanStart: true})
	if err != nil || ca2.Properties.MaximumPacketSize == nil || *ca2.Properties.MaximumPacketSize != DefaultMaxPacketSize {
		t.Errorf("default broker: CONNACK %+v, %v; want Maximum Packet Size %d", ca2, err, DefaultMaxPacketSize)
	}
}

// TestOversizedConnect: a CONNECT over the limit is closed unanswered.
func TestOversizedConnect(t *testing.T) {
	b := startBroker(t, Config{MaxPacketSize: 1024})
	c := dialRaw(t, b.Addr())
	c.writeBytes(append(append([]byte{0x10}, varint(2048)...), make([]byte, 64)...))
	c.closed()
	if got := b.Denials().PacketSize; got != 1 {
		t.Errorf("Denials().PacketSize = %d, want 1", got)
	}
}

// TestConnectionRate: past its burst, a source address gets its new
// connections closed until tokens come back.
func TestConnectionRate(t *testing.T) {
	clock := newFakeClock()
	b := startBroker(t, Config{ConnectionRate: 1, ConnectionBurst: 2, now: clock.Now})
	connect(t, b.Addr(), "o/u/a")
	connect(t, b.Addr(), "o/u/b")
	if ca, err := tryConnect(t, b.Addr(), &paho.Connect{ClientID: "o/u/c", CleanStart: true}); err == nil || ca != nil {
		t.Errorf("third connection: CONNACK %+v, %v; want it closed", ca, err)
	}
	if got := b.Denials().ConnectionRate; got != 1 {
		t.Errorf("Denials().ConnectionRate = %d, want 1", got)
	}
	clock.Advance(time.Second)
	connect(t, b.Addr(), "o/u/c")

	// A negative rate turns the limit off.
	u := startBroker(t, Config{ConnectionRate: -1, ConnectionBurst: 1, now: clock.Now})
	for _, id := range []string{"o/u/a", "o/u/b", "o/u/c"} {
		connect(t, u.Addr(), id)
	}
}

// TestConnectionsPerAddress: past MaxConnectionsPerAddress open
// connections, a new one from the same address is closed; once one is
// gone, there is room again.
func TestConnectionsPerAddress(t *testing.T) {
	b := startBroker(t, Config{ConnectionRate: -1, MaxConnectionsPerAddress: 2})
	a := connect(t, b.Addr(), "o/u/a")
	connect(t, b.Addr(), "o/u/b")
	if ca, err := tryConnect(t, b.Addr(), &paho.Connect{ClientID: "o/u/c", CleanStart: true}); err == nil || ca != nil {
		t.Errorf("third connection: CONNACK %+v, %v; want it closed", ca, err)
	}
	if got := b.Denials().ConnectionRate; got != 1 {
		t.Errorf("Denials().ConnectionRate = %d, want 1", got)
	}
	a.disconnect()
	// The broker releases a's slot once it has served the connection:
	// until then, attempts are refused.
	ctx := testContext(t)
	for {
		if ca, err := tryConnect(t, b.Addr(), &paho.Connect{ClientID: "o/u/c", CleanStart: true}); err == nil && ca.ReasonCode == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no room after a connection ended")
		}
	}
}

// TestSessionExpiryBounded: a client asking for a session that never
// expires is told the broker's bound in CONNACK.
func TestSessionExpiryBounded(t *testing.T) {
	b := startBroker(t, Config{})
	forever := uint32(0xFFFFFFFF)
	ca, err := tryConnect(t, b.Addr(), &paho.Connect{ClientID: "o/u/a", CleanStart: true,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &forever}})
	if err != nil {
		t.Fatal(err)
	}
	if ca.Properties == nil || ca.Properties.SessionExpiryInterval == nil ||
		*ca.Properties.SessionExpiryInterval != uint32(DefaultMaxSessionExpiry/time.Second) {
		t.Errorf("CONNACK %+v, want Session Expiry Interval %d", ca.Properties, DefaultMaxSessionExpiry/time.Second)
	}
}

// TestMQTT311RefusedWhenSecured: the secured broker speaks MQTT v5 only
// (the profile's version); a 3.1.1 CONNECT gets 3.1.1's "unacceptable
// protocol version". An open broker still accepts it.
func TestMQTT311RefusedWhenSecured(t *testing.T) {
	// CONNECT, protocol name MQTT, level 4, clean session, keep-alive 60,
	// Client ID "o/u/a".
	connect311 := []byte{0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60, 0, 5, 'o', '/', 'u', '/', 'a'}
	for _, c := range []struct {
		name string
		cfg  Config
		want byte
	}{
		{"secured", Config{PasswordFile: writePasswordFile(t, userEcho)}, 0x01},
		{"validating", Config{ValidateCards: true}, 0x01},
		{"open", Config{}, 0x00},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := startBroker(t, c.cfg)
			r := dialRaw(t, b.Addr())
			r.writeBytes(connect311)
			var ack [4]byte
			if _, err := io.ReadFull(r.r, ack[:]); err != nil {
				t.Fatal(err)
			}
			if ack[0] != 0x20 || ack[3] != c.want {
				t.Errorf("CONNACK % x, want return code %#x", ack, c.want)
			}
		})
	}
}

// TestRefusedSubscriptionNotPersisted: with a data directory, a refused
// subscription is not stored (mochi's bolt hook stores every filter of a
// SUBSCRIBE) and so not granted after a restart.
func TestRefusedSubscriptionNotPersisted(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswordFile(t, secureUsers...)
	b, err := Start(testContext(t), Config{PasswordFile: pw, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	expiry := uint32(3600)
	cp := loginAs(userMallory)
	cp.CleanStart = false
	cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &expiry}
	m := dial(t, b.Addr(), cp, nil)
	if got := m.subscribeCode("$a2a/#"); got != rcNotAuthorized {
		t.Errorf("SUBACK %#x, want 0x87", got)
	}
	m.subscribe(requestTopic(t, "acme", "lab", "mallory"), 1)
	m.disconnect()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, Config{PasswordFile: pw, DataDir: dir})
	cl, ok := b2.srv.Clients.Get(userMallory)
	if !ok {
		t.Fatal("mallory's session was not restored")
	}
	var filters []string
	for f := range cl.State.Subscriptions.GetAll() {
		filters = append(filters, f)
	}
	if len(filters) != 1 || filters[0] != requestTopic(t, "acme", "lab", "mallory") {
		t.Errorf("restored subscriptions %q, want only mallory's request topic", filters)
	}
}

// TestTopicAliasRefused: the broker offers no topic aliases, so a client
// that hides a topic behind one (to publish where the alias's first
// topic was allowed) is disconnected with 0x94 (topic alias invalid) and
// nothing is forwarded.
func TestTopicAliasRefused(t *testing.T) {
	b := startSecure(t, Config{})
	echo := connectAs(t, b.Addr(), userEcho)
	echo.subscribe(requestTopic(t, "acme", "lab", "echo"), 1)
	c := dialRaw(t, b.Addr())
	if got := c.connect(userMallory); got != rcSuccess {
		t.Fatalf("CONNACK %#x", got)
	}
	cp := packets.NewControlPacket(packets.PUBLISH)
	p := cp.Content.(*packets.Publish)
	alias := uint16(1)
	p.Topic, p.QoS, p.PacketID, p.Payload = requestTopic(t, "acme", "lab", "echo"), 1, 1, []byte("aliased")
	p.Properties.TopicAlias = &alias
	c.write(cp)
	got := c.read()
	if d, ok := got.Content.(*packets.Disconnect); !ok || d.ReasonCode != 0x94 {
		t.Fatalf("got %s %+v, want DISCONNECT 0x94", got.PacketType(), got.Content)
	}
	// The sentinel arrives; the aliased publish never did.
	req := connectAs(t, b.Addr(), userReq)
	req.publish(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 1, Payload: []byte("sentinel")})
	echo.await("the sentinel", func(m *paho.Publish) bool {
		if string(m.Payload) == "aliased" {
			t.Errorf("the aliased publish was forwarded")
		}
		return string(m.Payload) == "sentinel"
	})
}

// TestRateLimiterTableBounded: keys that never refill (each refused at
// once: a burst of 1, no time passing) still leave at most maxRateKeys
// buckets, the fullest forgotten first.
func TestRateLimiterTableBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newRateLimiter(0.001, 1, func() time.Time { return now })
	for i := range maxRateKeys + 500 {
		l.allow(fmt.Sprintf("198.51.100.%d", i))
	}
	if n := len(l.buckets); n > maxRateKeys {
		t.Fatalf("%d buckets, want at most %d", n, maxRateKeys)
	}
	// The last key's bucket is kept: it is still limited.
	if l.allow(fmt.Sprintf("198.51.100.%d", maxRateKeys+499)) {
		t.Fatal("the newest key's empty bucket was forgotten")
	}
}
