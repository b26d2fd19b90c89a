package mqtt

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

var updateCompat = flag.Bool("update-compat", false,
	"TestCompatibilityTable: rewrite the broker compatibility table in README.md with the one measured")

// The README block TestCompatibilityTable owns.
const (
	compatReadme = "../../README.md"
	compatBegin  = "<!-- compat:begin -->"
	compatEnd    = "<!-- compat:end -->"
)

// compatBroker is one measured column of the table: the brokers of one
// kind started for it, and how a client logs in there.
type compatBroker struct {
	col   int
	short string // subtest names
	name  string // column heading, with the version measured
	// open is the broker as mqtttest starts it; status, the one with
	// broker-managed status (open where the broker has none); secured, the
	// one with the password file of compatUsers (nil: not tried).
	open, status, secured mqtttest.Broker
	// acl names what writes the secured broker's ACL, where something does.
	acl string
	// user and pass log in on open and status (ejabberd needs them).
	user string
	pass []byte
	// config is the configuration mqtttest writes where it sets what the
	// broker would otherwise default: such values are marked "configured".
	config string
	// connack answers a CONNECT with the login asking a Session Expiry
	// Interval of 3,600 s.
	connack *paho.Connack
	// profileRoot is set when the profile's root works there; root is
	// then the zero Root, else a2a/v1: the root of the rows that follow
	// the two roots.
	profileRoot bool
	root        mqttbind.Root
}

// conn is a Connection to broker b with the login.
func (c *compatBroker) conn(b mqtttest.Broker) Connection {
	return Connection{Broker: b.URL(), Username: c.user, Password: c.pass}
}

// configured marks a value mqtttest's configuration sets (setting is its
// line's keyword).
func (c *compatBroker) configured(setting string) string {
	for line := range strings.Lines(c.config) {
		if strings.HasPrefix(line, setting+" ") {
			return " (configured)"
		}
	}
	return ""
}

// compatUsers are the users of the secured brokers' password file; each
// one's password is "pw-" and its name.
var compatUsers = []string{"acme/id/b", "acme/id/a", "acme/val/b"}

// compatRow is a capability the profile uses: how it is measured on a
// broker, and EMQX's cell, as EMQX documents it (compatSources).
type compatRow struct {
	id    string // subtest name
	name  string
	probe func(t *testing.T, b *compatBroker) string
	emqx  string
}

// compatSources are the EMQX documentation pages the EMQX column cites,
// by number.
var compatSources = []string{
	"How A2A over MQTT Works: https://docs.emqx.com/en/emqx/latest/emqx-ai/a2a-over-mqtt/architecture.html",
	"Manage Agents (the A2A Registry): https://docs.emqx.com/en/emqx/latest/emqx-ai/a2a-over-mqtt/manage-agents.html",
	"A2A over MQTT, overview: https://docs.emqx.com/en/emqx/latest/develop/emqx-ai/a2a-over-mqtt/overview.md",
	"MQTT Shared Subscription: https://docs.emqx.com/en/emqx/latest/messaging/mqtt-shared-subscription.md",
	"Authentication: https://docs.emqx.com/en/emqx/latest/guides/access-control/authn/authn.md",
	"MQTT Configuration: https://docs.emqx.com/en/emqx/latest/configuration/mqtt.md",
	"In-flight and Message Queue: https://docs.emqx.com/en/emqx/latest/develop/design/inflight-window-and-message-queue.html; Receive Maximum in CONNACK since 5.6.0: https://github.com/emqx/emqx/pull/12492",
	"Use ACL File: https://docs.emqx.com/en/emqx/latest/access-control/authz/file.html",
}

// The two rows measured first: the root the other rows use follows from
// them.
const (
	compatRowProfileRoot = 0
	compatRowPlainRoot   = 1
)

var compatRows = []compatRow{
	{"profile-root", "topic root `$a2a/v1` (the profile's): card, Will, request",
		func(t *testing.T, b *compatBroker) string { return compatProbeRoot(t, b, mqttbind.Root{}) },
		"yes: the A2A Registry's topics [1]"},
	{"plain-root", "topic root `a2a/v1` (docs/protocol.md §1.5)",
		func(t *testing.T, b *compatBroker) string { return compatProbeRoot(t, b, plainRoot(t)) },
		"ordinary topics: not indexed, validated nor given a status by the A2A Registry [3]"},
	{"retained", "retained card, sent to a later subscriber", compatProbeRetained, "yes [2]"},
	{"watch", "wildcard watch `{root}/discovery/{org}/{unit}/+`", compatProbeWatch, "yes [2]"},
	{"will", "Will: a killed agent's card offline, `a2a-status-source` `lwt`", compatProbeWill, "yes [1]"},
	{"qos1", "QoS 1", compatProbeQoS, "yes [2]"},
	{"pool-profile", "pool (shared subscription) under `$a2a/v1`",
		func(t *testing.T, b *compatBroker) string { return compatProbePool(t, b, mqttbind.Root{}) },
		"yes: `$a2a/v1/request/{org}/{unit}/pool/{pool}` [1]"},
	{"pool-plain", "pool (shared subscription) under `a2a/v1`",
		func(t *testing.T, b *compatBroker) string { return compatProbePool(t, b, plainRoot(t)) },
		"yes: `$share/{group}/` (and `$queue/`) [4]"},
	{"status", "broker-managed status (`a2a-status-source` `broker`)", compatProbeStatus,
		"yes, with the A2A Registry on (off by default) [2]"},
	{"anonymous", "anonymous client (no user name, no password)", compatProbeAnonymous,
		"yes: no authentication by default [5]"},
	{"identity", "Client ID `{org}/{unit}/{agent}` as the user name", compatProbeIdentity,
		"not documented (the Client ID must be `{org}/{unit}/{agent}` [1])"},
	{"registry", "cards checked at the broker (another agent's card, an invalid card)", compatProbeRegistry,
		"A2A Registry on: schema, size and rate checks [2]; authorization rules [8]"},
	{"max-packet", "Maximum Packet Size (CONNACK)", compatProbeMaxPacket, "1 MiB (`max_packet_size` default) [6]"},
	{"receive-max", "Receive Maximum (CONNACK)", compatProbeReceiveMax, "at most `max_inflight` (32 by default) [7]"},
	{"alias-max", "Topic Alias Maximum (CONNACK)", compatProbeAliasMax, "65,535 (`max_topic_alias` default) [6]"},
	{"session-expiry", "Session Expiry Interval of 3,600 s honoured", compatProbeSessionExpiry,
		"not documented for MQTT v5 (`session_expiry_interval`, 2 h, is for older clients [6])"},
}

// TestCompatibilityTable measures the capabilities the profile uses on
// the embedded broker, mosquitto and ejabberd, as mqtttest starts them,
// through the library (and bare paho or packets where the library refuses
// to try), and compares the table with the block of README.md between
// compatBegin and compatEnd; -update-compat rewrites the block. The EMQX
// column is not measured: it is what EMQX's documentation says, each cell
// citing its page (compatSources) or saying "not documented". One broker
// of each kind serves every row, beside the embedded broker with
// broker-managed status and the embedded broker and mosquitto with a
// password file; the probes run in parallel, each on a unit of its own.
func TestCompatibilityTable(t *testing.T) {
	brokers := compatStart(t)
	cells := make([][]string, len(compatRows))
	for r := range cells {
		cells[r] = make([]string, len(brokers))
	}
	var mu sync.Mutex
	measure := func(t *testing.T, rows ...int) {
		for _, r := range rows {
			for _, b := range brokers {
				t.Run(b.short+"/"+compatRows[r].id, func(t *testing.T) {
					t.Parallel()
					cell := compatRows[r].probe(t, b)
					mu.Lock()
					cells[r][b.col] = cell
					mu.Unlock()
				})
			}
		}
	}
	t.Run("roots", func(t *testing.T) { measure(t, compatRowProfileRoot, compatRowPlainRoot) })
	if t.Failed() {
		return
	}
	for _, b := range brokers {
		if !b.profileRoot {
			b.root = plainRoot(t)
		}
	}
	var rest []int
	for r := range compatRows {
		if r != compatRowProfileRoot && r != compatRowPlainRoot {
			rest = append(rest, r)
		}
	}
	t.Run("rows", func(t *testing.T) {
		measure(t, rest...)
		for _, b := range brokers {
			t.Run(b.short+"/library-capabilities", func(t *testing.T) {
				t.Parallel()
				compatCheckCapabilities(t, b)
			})
		}
	})
	if t.Failed() {
		return
	}
	compatCompare(t, compatRender(brokers, cells))
}

// compatStart starts the brokers (failing the test when mosquitto or
// ejabberd is missing) and reads their versions and CONNACKs.
func compatStart(t *testing.T) []*compatBroker {
	pw := writeUsers(t, compatUsers...)
	ej := mqtttest.StartEjabberd(t)
	emb := mqtttest.StartEmbedded(t)
	mos := mqtttest.StartMosquitto(t)
	brokers := []*compatBroker{
		{short: mqtttest.NameEmbedded, name: "embedded (mochi-mqtt " + compatMochiVersion(t) + ")",
			open: emb, status: mqtttest.StartEmbedded(t, mqtttest.WithBrokerStatus()),
			secured: mqtttest.StartEmbedded(t, mqtttest.WithPasswordFile(pw))},
		{short: mqtttest.NameMosquitto, name: "mosquitto " + compatMosquittoVersion(t),
			open: mos, status: mos, secured: mqtttest.StartMosquitto(t, mqtttest.WithPasswordFile(pw)), acl: "`broker.MosquittoACL`",
			config: mqtttest.MosquittoConfig(mos.Addr(), "")},
		{short: mqtttest.NameEjabberd, name: "ejabberd " + compatEjabberdVersion(t, ej),
			open: ej, status: ej, user: mqtttest.EjabberdUsername, pass: []byte(mqtttest.EjabberdPassword)},
	}
	expiry := uint32(3600)
	for i, b := range brokers {
		b.col = i
		c, ca, err := compatDial(t, b.open.Addr(), paho.Connect{ClientID: "acme/caps/connack", Username: b.user, Password: b.pass,
			Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
		if err != nil {
			t.Fatalf("%s: CONNECT: %v", b.short, err)
		}
		c.close()
		b.connack = ca
	}
	return brokers
}

// compatMochiVersion is the version of mochi-mqtt go.mod requires.
func compatMochiVersion(t *testing.T) string {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/mochi-mqtt/server/v2 (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod requires no github.com/mochi-mqtt/server/v2")
	}
	return string(m[1])
}

// compatMosquittoVersion asks the mosquitto that mqtttest runs (on PATH,
// else Debian's /usr/sbin/mosquitto) for its version.
func compatMosquittoVersion(t *testing.T) string {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		bin = "/usr/sbin/mosquitto"
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput() // -h exits non-zero
	m := regexp.MustCompile(`mosquitto version (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s -h prints no version:\n%s", bin, out)
	}
	return string(m[1])
}

// compatEjabberdVersion reads the version the node logs once started
// ("ejabberd 23.01-1 is started"; the Debian revision is left out), from
// its private log directory (see mqtttest.Ejabberd), waiting for the line.
func compatEjabberdVersion(t *testing.T, e *mqtttest.Ejabberd) string {
	re := regexp.MustCompile(`ejabberd (\d+\.\d+)\S* is started`)
	logs := filepath.Join(filepath.Dir(e.Config()), "logs")
	ctx := testCtx(t)
	for {
		paths, _ := filepath.Glob(filepath.Join(logs, "*.log"))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				if m := re.FindSubmatch(b); m != nil {
					return string(m[1])
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ejabberd logged no version in %s", logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// compatConn is a bare paho client on one network connection: the
// broker's answers (CONNACK, SUBACK, PUBACK) are read as they are.
type compatConn struct {
	pc   *paho.Client
	msgs chan *paho.Publish
	once sync.Once
}

// compatDial connects with cp (a clean start, keep-alive 30 s). A refused
// CONNECT returns its CONNACK and error, its connection closed; an
// accepted one is disconnected when the test ends.
func compatDial(t *testing.T, addr string, cp paho.Connect) (*compatConn, *paho.Connack, error) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &compatConn{msgs: make(chan *paho.Publish, 64)}
	c.pc = paho.NewClient(paho.ClientConfig{Conn: nc, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			select {
			case c.msgs <- pr.Packet:
			default:
			}
			return true, nil
		}}})
	cp.CleanStart, cp.KeepAlive = true, 30
	cp.UsernameFlag, cp.PasswordFlag = cp.Username != "", cp.Password != nil
	ca, err := c.pc.Connect(testCtx(t), &cp)
	if err != nil {
		_ = nc.Close()
		return nil, ca, err
	}
	t.Cleanup(c.close)
	return c, ca, nil
}

// compatLogin connects as b's login (cid the Client ID), failing the test
// if refused.
func compatLogin(t *testing.T, b *compatBroker, to mqtttest.Broker, cid string) *compatConn {
	t.Helper()
	c, _, err := compatDial(t, to.Addr(), paho.Connect{ClientID: cid, Username: b.user, Password: b.pass})
	if err != nil {
		t.Fatalf("%s: CONNECT %s: %v", b.short, cid, err)
	}
	return c
}

func (c *compatConn) close() {
	c.once.Do(func() {
		_ = c.pc.Disconnect(&paho.Disconnect{})
		<-c.pc.Done()
	})
}

// subscribe subscribes filter at QoS 1 and returns the SUBACK's reason.
func (c *compatConn) subscribe(t *testing.T, filter string) byte {
	t.Helper()
	sa, err := c.pc.Subscribe(testCtx(t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if sa == nil || len(sa.Reasons) != 1 {
		t.Fatalf("SUBSCRIBE %s: %+v, %v", filter, sa, err)
	}
	return sa.Reasons[0]
}

// publish publishes p at QoS 1 and returns the PUBACK's reason.
func (c *compatConn) publish(t *testing.T, p *paho.Publish) byte {
	t.Helper()
	p.QoS = 1
	resp, err := c.pc.Publish(testCtx(t), p)
	if resp == nil {
		t.Fatalf("PUBLISH %s: %v", p.Topic, err)
	}
	return resp.ReasonCode
}

// next returns the next message on topic that match accepts.
func (c *compatConn) next(t *testing.T, topic string, match func(*paho.Publish) bool) *paho.Publish {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case p := <-c.msgs:
			if p.Topic == topic && match(p) {
				return p
			}
		case <-ctx.Done():
			t.Fatalf("no such message on %s", topic)
		}
	}
}

// compatRawSubscribe connects as clientID and sends SUBSCRIBE filter with
// packets, which checks nothing (paho refuses a shared subscription the
// CONNACK rules out), and returns the broker's answer: "SUBACK 0x01",
// "DISCONNECT 0x9E", or "the connection closed".
func compatRawSubscribe(t *testing.T, b *compatBroker, clientID, filter string) string {
	t.Helper()
	nc, err := net.Dial("tcp", b.open.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	cp := &packets.Connect{ProtocolName: "MQTT", ProtocolVersion: 5, ClientID: clientID, CleanStart: true, KeepAlive: 30,
		UsernameFlag: b.user != "", Username: b.user, PasswordFlag: b.pass != nil, Password: b.pass, Properties: &packets.Properties{}}
	if _, err := cp.WriteTo(nc); err != nil {
		t.Fatal(err)
	}
	if p, err := packets.ReadPacket(nc); err != nil {
		t.Fatal(err)
	} else if ca, ok := p.Content.(*packets.Connack); !ok || ca.ReasonCode != 0 {
		t.Fatalf("raw CONNECT: %#v", p.Content)
	}
	sp := &packets.Subscribe{PacketID: 1, Properties: &packets.Properties{},
		Subscriptions: []packets.SubOptions{{Topic: filter, QoS: 1}}}
	if _, err := sp.WriteTo(nc); err != nil {
		t.Fatal(err)
	}
	p, err := packets.ReadPacket(nc)
	if err != nil {
		return "the connection closed"
	}
	switch c := p.Content.(type) {
	case *packets.Suback:
		return fmt.Sprintf("SUBACK %s", compatCodes(c.Reasons...))
	case *packets.Disconnect:
		return fmt.Sprintf("DISCONNECT 0x%02X", c.ReasonCode)
	}
	return fmt.Sprintf("%T", p.Content)
}

func compatCodes(codes ...byte) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = fmt.Sprintf("0x%02X", c)
	}
	return strings.Join(s, ", ")
}

// compatAgent starts an echo agent {unit}/b under root with a card.
func compatAgent(t *testing.T, conn Connection, root mqttbind.Root, unit string) (*Agent, error) {
	t.Helper()
	a, err := NewAgent(testCtx(t), AgentConfig{Connection: conn, Root: root, Org: "acme", Unit: unit, ID: "b",
		Card: testCard("B"), Server: echoServer(t)})
	if err == nil {
		t.Cleanup(func() { a.Close(context.Background()) })
	}
	return a, err
}

// compatAsk sends "hi" to target from a new client {unit}/a under root:
// nil when it is answered (completed).
func compatAsk(t *testing.T, conn Connection, root mqttbind.Root, unit string, target requester.Target) error {
	t.Helper()
	c, err := NewClient(testCtx(t), ClientConfig{Connection: conn, Root: root, Org: "acme", Unit: unit, ID: "a",
		Requester: requester.Config{Retry: fastProfile()}})
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}},
		requester.To(target))
	if err == nil && (res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted) {
		t.Fatalf("answered %+v", res)
	}
	return err
}

// compatCardPayload is testCard's JSON.
func compatCardPayload(t *testing.T) []byte {
	b, err := testCard("B").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compatProbeRoot: an agent with a card (so a Will) under root, asked by a
// client. Where the broker refuses, it says what it refused: the Will
// (CONNACK), a card published raw (PUBACK) and the client's request
// (PUBACK).
func compatProbeRoot(t *testing.T, b *compatBroker, root mqttbind.Root) string {
	unit := map[bool]string{true: "rootprofile", false: "rootplain"}[root == mqttbind.Root{}]
	conn := b.conn(b.open)
	_, err := compatAgent(t, conn, root, unit)
	if err == nil {
		if err := compatAsk(t, conn, root, unit, requester.Target{Agent: "b"}); err != nil {
			t.Fatalf("the agent started under %s but was not answered: %v", root, err)
		}
		if root == (mqttbind.Root{}) {
			b.profileRoot = true
		}
		return "yes"
	}
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("agent under %s: %v, want it started or a *ConnectError", root, err)
	}
	refused := []string{fmt.Sprintf("CONNACK 0x%02X (Will)", ce.ReasonCode)}
	topic, _ := root.DiscoveryTopic("acme", unit, "c")
	card := compatLogin(t, b, b.open, "acme/"+unit+"/c").publish(t, &paho.Publish{Topic: topic, Retain: true, Payload: compatCardPayload(t)})
	err = compatAsk(t, conn, root, unit, requester.Target{Agent: "b"})
	var pe *PublishError
	if !errors.As(err, &pe) {
		t.Fatalf("request under %s: %v, want a *PublishError", root, err)
	}
	if card == pe.ReasonCode {
		refused = append(refused, fmt.Sprintf("PUBACK 0x%02X (card, request)", card))
	} else {
		refused = append(refused, fmt.Sprintf("PUBACK 0x%02X (card), 0x%02X (request)", card, pe.ReasonCode))
	}
	return "no: " + strings.Join(refused, ", ")
}

// compatProbeRetained: the card of an agent running, to a subscriber that
// comes later, with RETAIN set.
func compatProbeRetained(t *testing.T, b *compatBroker) string {
	if _, err := compatAgent(t, b.conn(b.open), b.root, "retained"); err != nil {
		t.Fatal(err)
	}
	topic, _ := b.root.DiscoveryTopic("acme", "retained", "b")
	late := compatLogin(t, b, b.open, "acme/retained/late")
	if code := late.subscribe(t, topic); code >= 0x80 {
		return fmt.Sprintf("no: SUBACK 0x%02X", code)
	}
	m := late.next(t, topic, func(*paho.Publish) bool { return true })
	if !m.Retain {
		return "no: sent without RETAIN"
	}
	return "yes"
}

// compatProbeWatch: a Watch (its wildcard subscription) started after an
// agent sees it.
func compatProbeWatch(t *testing.T, b *compatBroker) string {
	if _, err := compatAgent(t, b.conn(b.open), b.root, "watch"); err != nil {
		t.Fatal(err)
	}
	w, err := Watch(testCtx(t), WatchConfig{Connection: b.conn(b.open), Root: b.root, Org: "acme", Unit: "watch"})
	if err != nil {
		var ke *CapabilityError
		if errors.As(err, &ke) {
			return "no: " + ke.Capability
		}
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for {
		if _, ok := w.Lookup("b"); ok {
			return "yes"
		}
		select {
		case <-w.Changes():
		case <-testCtx(t).Done():
			t.Fatal("the watch never saw the agent")
		}
	}
}

// compatProbeWill: an agent killed (no DISCONNECT) is marked offline by
// its Will, as the library sets it.
func compatProbeWill(t *testing.T, b *compatBroker) string {
	topic, _ := b.root.DiscoveryTopic("acme", "will", "b")
	sub := compatLogin(t, b, b.open, "acme/will/sub")
	sub.subscribe(t, topic)
	a, err := compatAgent(t, b.conn(b.open), b.root, "will")
	if err != nil {
		t.Fatal(err)
	}
	sub.next(t, topic, func(*paho.Publish) bool { return true }) // the card online
	a.Kill()
	sub.next(t, topic, func(p *paho.Publish) bool {
		return p.Properties != nil && p.Properties.User.Get(mqttbind.PropStatus) == mqttbind.StatusOffline &&
			p.Properties.User.Get(mqttbind.PropStatusSource) == mqttbind.StatusSourceLWT
	})
	return "yes"
}

// compatProbeQoS: a QoS 1 subscription is granted QoS 1 and a QoS 1
// publish acknowledged; the CONNACK's Maximum QoS says the rest.
func compatProbeQoS(t *testing.T, b *compatBroker) string {
	c := compatLogin(t, b, b.open, "acme/qos/a")
	topic := b.root.String() + "/compat/qos"
	if code := c.subscribe(t, topic); code != 1 {
		return fmt.Sprintf("no: SUBACK 0x%02X", code)
	}
	if code := c.publish(t, &paho.Publish{Topic: topic, Payload: []byte("x")}); code >= 0x80 {
		return fmt.Sprintf("no: PUBACK 0x%02X", code)
	}
	c.next(t, topic, func(p *paho.Publish) bool { return p.QoS == 1 })
	if q := b.connack.Properties.MaximumQoS; q != nil {
		return fmt.Sprintf("yes (Maximum QoS %d)", *q)
	}
	return "yes (Maximum QoS absent: 2)"
}

// compatProbePool: two pool members without cards (so without Wills: the
// row is about the pool) under root, asked through the pool. A broker
// whose CONNACK offers no shared subscriptions has the library refuse;
// bare packets then show what the broker does with one. A pool that
// starts but is never answered shows what a raw publish to its topic is
// told.
func compatProbePool(t *testing.T, b *compatBroker, root mqttbind.Root) string {
	unit := map[bool]string{true: "poolprofile", false: "poolplain"}[root == mqttbind.Root{}]
	conn := b.conn(b.open)
	for _, id := range []string{"w1", "w2"} {
		a, err := NewAgent(testCtx(t), AgentConfig{Connection: conn, Root: root, Org: "acme", Unit: unit, ID: id, Pool: "p", Server: echoServer(t)})
		if err != nil {
			var ke *CapabilityError
			if !errors.As(err, &ke) {
				t.Fatalf("pool member under %s: %v", root, err)
			}
			filter, _ := root.PoolSubscriptionTopic("g", "acme", unit, "p")
			return fmt.Sprintf("no: Shared Subscription Available 0; SUBSCRIBE `$share/…` gets %s", compatRawSubscribe(t, b, "acme/"+unit+"/raw", filter))
		}
		t.Cleanup(func() { a.Close(context.Background()) })
	}
	err := compatAsk(t, conn, root, unit, requester.Target{Pool: "p"})
	if err == nil {
		return "yes"
	}
	if !errors.Is(err, requester.ErrUnreachable) {
		t.Fatalf("pool under %s: %v", root, err)
	}
	topic, _ := root.PoolRequestTopic("acme", unit, "p")
	code := compatLogin(t, b, b.open, "acme/"+unit+"/raw").publish(t, &paho.Publish{Topic: topic, Payload: []byte("{}")})
	return fmt.Sprintf("no: never delivered (PUBACK 0x%02X %s)", code, ReasonName(code))
}

// compatProbeStatus: who sets the status of a card as a subscriber gets
// it, on the broker with broker-managed status where there is one.
func compatProbeStatus(t *testing.T, b *compatBroker) string {
	if _, err := compatAgent(t, b.conn(b.status), b.root, "status"); err != nil {
		t.Fatal(err)
	}
	topic, _ := b.root.DiscoveryTopic("acme", "status", "b")
	sub := compatLogin(t, b, b.status, "acme/status/sub")
	sub.subscribe(t, topic)
	m := sub.next(t, topic, func(*paho.Publish) bool { return true })
	var source string
	if m.Properties != nil {
		source = m.Properties.User.Get(mqttbind.PropStatusSource)
	}
	switch source {
	case mqttbind.StatusSourceBroker:
		return "yes, with `Status` on (`a2a broker --status`)"
	case mqttbind.StatusSourceAgent:
		return "no (Will only)"
	}
	t.Fatalf("card with a2a-status-source %q", source)
	return ""
}

// compatProbeAnonymous: a CONNECT without user name and password; where
// refused, one with an empty password and one with a password.
func compatProbeAnonymous(t *testing.T, b *compatBroker) string {
	_, ca, err := compatDial(t, b.open.Addr(), paho.Connect{ClientID: "acme/anon/a"})
	if err == nil {
		return "yes" + b.configured("allow_anonymous")
	}
	if ca == nil {
		t.Fatal(err)
	}
	cell := fmt.Sprintf("no: CONNACK 0x%02X", ca.ReasonCode)
	anonymous := ca.ReasonCode
	_, ca, err = compatDial(t, b.open.Addr(), paho.Connect{ClientID: "acme/anon/b", Username: "anon", Password: []byte{}})
	switch {
	case err == nil:
		return cell + "; a user name without a password passes"
	case ca != nil && ca.ReasonCode == anonymous:
		cell += ", also with an empty password"
	case ca != nil:
		cell += fmt.Sprintf(", 0x%02X with an empty password", ca.ReasonCode)
	}
	if _, _, err := compatDial(t, b.open.Addr(), paho.Connect{ClientID: "acme/anon/c", Username: "anon", Password: []byte("x")}); err == nil {
		cell += "; a user name and a password pass"
	}
	return cell
}

// compatProbeIdentity: an agent and a client logged in with their Client
// IDs as user names, on the broker with the password file where there is
// one.
func compatProbeIdentity(t *testing.T, b *compatBroker) string {
	to, how := b.secured, " (password file)"
	if to == nil {
		to, how = b.open, ""
	}
	login := func(user string) Connection {
		return Connection{Broker: to.URL(), Username: user, Password: []byte("pw-" + user)}
	}
	if _, err := compatAgent(t, login("acme/id/b"), b.root, "id"); err != nil {
		var ce *ConnectError
		if !errors.As(err, &ce) {
			t.Fatal(err)
		}
		return fmt.Sprintf("no: CONNACK 0x%02X", ce.ReasonCode)
	}
	if err := compatAsk(t, login("acme/id/a"), b.root, "id", requester.Target{Agent: "b"}); err != nil {
		t.Fatal(err)
	}
	return "yes" + how
}

// compatProbeRegistry: on the broker with the password file, acme/val/b
// publishes a card on another agent's topic and an invalid card on its
// own.
func compatProbeRegistry(t *testing.T, b *compatBroker) string {
	if b.secured == nil {
		return "not tried"
	}
	const user = "acme/val/b"
	c, _, err := compatDial(t, b.secured.Addr(), paho.Connect{ClientID: user, Username: user, Password: []byte("pw-" + user)})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := mqttbind.Root{}.DiscoveryTopic("acme", "val", "c")
	own, _ := mqttbind.Root{}.DiscoveryTopic("acme", "val", "b")
	another := c.publish(t, &paho.Publish{Topic: other, Retain: true, Payload: compatCardPayload(t)})
	invalid := c.publish(t, &paho.Publish{Topic: own, Retain: true, Payload: []byte(`{"name":"B"}`)})
	var parts []string
	if another >= 0x80 {
		parts = append(parts, fmt.Sprintf("another's card PUBACK 0x%02X", another))
	} else {
		parts = append(parts, "another's card accepted")
	}
	if invalid >= 0x80 {
		parts = append(parts, fmt.Sprintf("an invalid one 0x%02X", invalid))
	} else {
		parts = append(parts, "an invalid one accepted")
	}
	verdict := "yes"
	switch {
	case another < 0x80 && invalid < 0x80:
		verdict = "no"
	case invalid < 0x80:
		verdict = "ACL only"
		if b.acl != "" {
			verdict += " (" + b.acl + ")"
		}
	}
	return verdict + ": " + strings.Join(parts, ", ")
}

func compatProbeMaxPacket(t *testing.T, b *compatBroker) string {
	p := b.connack.Properties.MaximumPacketSize
	if p == nil {
		return "absent (no limit)"
	}
	if *p%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB%s", *p>>20, b.configured("max_packet_size"))
	}
	return compatNumber(uint64(*p)) + " bytes" + b.configured("max_packet_size")
}

func compatProbeReceiveMax(t *testing.T, b *compatBroker) string {
	if p := b.connack.Properties.ReceiveMaximum; p != nil {
		return compatNumber(uint64(*p)) + b.configured("max_inflight_messages")
	}
	return "absent (65,535)"
}

func compatProbeAliasMax(t *testing.T, b *compatBroker) string {
	if p := b.connack.Properties.TopicAliasMaximum; p != nil {
		return compatNumber(uint64(*p)) + b.configured("max_topic_alias")
	}
	return "absent (0: none)"
}

func compatProbeSessionExpiry(t *testing.T, b *compatBroker) string {
	p := b.connack.Properties.SessionExpiryInterval
	switch {
	case p == nil || *p == 3600:
		return "yes"
	case *p < 3600:
		return fmt.Sprintf("no: %s s", compatNumber(uint64(*p)))
	}
	return fmt.Sprintf("longer: %s s", compatNumber(uint64(*p)))
}

// compatCheckCapabilities: a Client's BrokerCapabilities read the
// CONNACK as a bare client gets it.
func compatCheckCapabilities(t *testing.T, b *compatBroker) {
	c, err := NewClient(testCtx(t), ClientConfig{Connection: b.conn(b.open), Root: b.root, Org: "acme", Unit: "caps", ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	got := c.BrokerCapabilities()
	p := b.connack.Properties
	want := BrokerCapabilities{MaximumQoS: 2, RetainAvailable: p.RetainAvailable, WildcardSubscriptionAvailable: p.WildcardSubAvailable,
		SharedSubscriptionAvailable: p.SharedSubAvailable, SubscriptionIdentifiersAvailable: p.SubIDAvailable, ReceiveMaximum: 65535}
	if p.MaximumQoS != nil {
		want.MaximumQoS = *p.MaximumQoS
	}
	if p.MaximumPacketSize != nil {
		want.MaximumPacketSize = *p.MaximumPacketSize
	}
	if p.ReceiveMaximum != nil {
		want.ReceiveMaximum = *p.ReceiveMaximum
	}
	if p.TopicAliasMaximum != nil {
		want.TopicAliasMaximum = *p.TopicAliasMaximum
	}
	if p.ServerKeepAlive != nil {
		want.ServerKeepAlive = *p.ServerKeepAlive
	}
	if got != want {
		t.Errorf("BrokerCapabilities %+v, the CONNACK says %+v", got, want)
	}
}

// compatNumber writes n with thousands separators: 65,535.
func compatNumber(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// compatRender writes the table, its notes and the EMQX sources.
func compatRender(brokers []*compatBroker, cells [][]string) string {
	var w bytes.Buffer
	w.WriteString("| capability |")
	for _, b := range brokers {
		w.WriteString(" " + b.name + " |")
	}
	w.WriteString(" EMQX (as documented) |\n|")
	for range len(brokers) + 2 {
		w.WriteString(" --- |")
	}
	w.WriteString("\n")
	for r, row := range compatRows {
		w.WriteString("| " + row.name + " |")
		for _, c := range cells[r] {
			w.WriteString(" " + c + " |")
		}
		w.WriteString(" " + row.emqx + " |\n")
	}
	byRoot := map[string][]string{}
	var roots []string
	for _, b := range brokers {
		r := b.root.String()
		if byRoot[r] == nil {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], b.short)
	}
	var under []string
	for _, r := range roots {
		under = append(under, "`"+r+"` on "+strings.Join(byRoot[r], " and "))
	}
	fmt.Fprintf(&w, "\nThe rows after the two topic roots are measured under %s. "+
		"Each broker runs as `mqtttest` starts it (`mqtttest.MosquittoConfig`; `mqtttest.EjabberdConfig`: anonymous login, "+
		"mod_mqtt's defaults); \"configured\" marks a value that configuration sets instead of the broker's default, "+
		"\"password file\" a broker started with `mqtttest.WithPasswordFile`. EMQX, as its documentation says:\n\n",
		strings.Join(under, ", "))
	for i, s := range compatSources {
		fmt.Fprintf(&w, "- [%d] %s\n", i+1, s)
	}
	return w.String()
}

// compatCompare compares table with README.md's block, or writes it there
// with -update-compat.
func compatCompare(t *testing.T, table string) {
	readme, err := os.ReadFile(compatReadme)
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, compatBegin), strings.Index(s, compatEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s ... %s block; the table measured:\n%s", compatBegin, compatEnd, table)
	}
	have := s[i+len(compatBegin) : j]
	want := "\n\n" + table + "\n"
	if have == want {
		return
	}
	if *updateCompat {
		s = s[:i+len(compatBegin)] + want + s[j:]
		if err := os.WriteFile(compatReadme, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("README.md: broker compatibility table updated")
		return
	}
	t.Errorf("README.md's broker compatibility table is not the one measured "+
		"(update it: go test ./transport/mqtt/ -run TestCompatibilityTable -update-compat)\n%s",
		compatDiff(strings.TrimSpace(have), strings.TrimSpace(table)))
}

// compatDiff lists the lines of have missing from want ("- ") and those of
// want missing from have ("+ ").
func compatDiff(have, want string) string {
	in := func(lines []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	hs, ws := in(h), in(w)
	var d strings.Builder
	for _, l := range h {
		if !ws[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range w {
		if !hs[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}
