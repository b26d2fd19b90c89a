package mqtttest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// The users of the secured-broker tests; each one's password is "pw-" +
// name.
const (
	userEcho    = "acme/lab/echo"
	userMallory = "acme/lab/mallory"
	userReq     = "acme/lab/req"
)

func password(user string) string { return "pw-" + user }

// writePasswords writes a password file for users with broker.PasswordFile
// (what a2a passwd writes).
func writePasswords(t testing.TB, users ...string) string {
	t.Helper()
	var f broker.PasswordFile
	for _, u := range users {
		if err := f.Set(u, password(u), 0); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "passwd")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// testCard is a valid Agent Card (the embedded broker validates cards).
func testCard(name, version string) []byte {
	return fmt.Appendf(nil, `{"name":%q,"description":"test agent","version":%q,`+
		`"supportedInterfaces":[{"url":"mqtt://127.0.0.1","protocolBinding":"MQTTv5+JSONRPCv2","protocolVersion":"1.0"}],`+
		`"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"echo","name":"echo","description":"echoes","tags":["echo"]}]}`, name, version)
}

// secureClient is a paho client that logged in (or tried to).
type secureClient struct {
	*client
	conn    net.Conn
	connack *paho.Connack
}

// login connects with user's credentials and Client ID clientID (and the
// Will, if any); the CONNACK is in connack (nil with no answer), and the
// client is usable when its reason code is 0.
func login(t testing.TB, addr, user, clientID string, will *paho.WillMessage) *secureClient {
	t.Helper()
	return loginWith(t, addr, user, password(user), clientID, will)
}

// loginWith is login with a password of the caller's.
func loginWith(t testing.TB, addr, user, pass, clientID string, will *paho.WillMessage) *secureClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &secureClient{client: &client{t: t, id: clientID, msgs: make(chan *paho.Publish, 1024)}, conn: conn}
	c.pc = paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) { c.msgs <- pr.Packet; return true, nil },
	}})
	cp := &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30}
	if user != "" {
		cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = user, true, []byte(pass), true
	}
	if will != nil {
		cp.WillMessage = will
		cp.WillProperties = &paho.WillProperties{User: paho.UserProperties{
			{Key: mqttbind.PropStatus, Value: mqttbind.StatusOffline}, {Key: mqttbind.PropStatusSource, Value: mqttbind.StatusSourceLWT}}}
	}
	c.connack, err = c.pc.Connect(testContext(t), cp)
	if err != nil {
		_ = conn.Close()
		<-c.pc.Done()
		return c
	}
	t.Cleanup(c.disconnect)
	return c
}

// loginOK is login that fails the test unless the CONNACK is a success.
func loginOK(t testing.TB, addr, user string) *secureClient {
	t.Helper()
	c := login(t, addr, user, user, nil)
	if c.connack == nil || c.connack.ReasonCode != 0 {
		t.Fatalf("%s: CONNACK %+v", user, c.connack)
	}
	return c
}

func (c *secureClient) connackCode() int {
	if c.connack == nil {
		return -1
	}
	return int(c.connack.ReasonCode)
}

// publishCode publishes at QoS 1 and returns the PUBACK's reason code.
func (c *secureClient) publishCode(p *paho.Publish) int {
	c.t.Helper()
	p.QoS = 1
	resp, err := c.pc.Publish(testContext(c.t), p)
	if resp == nil {
		c.t.Fatalf("%s: publish %s: no PUBACK: %v", c.id, p.Topic, err)
	}
	return int(resp.ReasonCode)
}

// subscribeCode subscribes at QoS 1 and returns the SUBACK's reason code.
func (c *secureClient) subscribeCode(filter string) int {
	c.t.Helper()
	sa, err := c.pc.Subscribe(testContext(c.t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if sa == nil || len(sa.Reasons) != 1 {
		c.t.Fatalf("%s: subscribe %s: %v", c.id, filter, err)
	}
	return int(sa.Reasons[0])
}

// next returns the next message, skipping none.
func (c *secureClient) next(what string) *paho.Publish {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-testContext(c.t).Done():
		c.t.Fatalf("%s: waiting for %s: nothing arrived", c.id, what)
		return nil
	}
}

// TestSecuredBrokers: the attacks of the broker security issue, against
// the embedded broker and against mosquitto configured by WithPasswordFile
// (password_file, use_username_as_clientid, and broker.MosquittoACL as
// acl_file). Where mosquitto cannot refuse outright, the test shows what
// it does instead: it grants every subscription and delivers only what
// the ACL lets the subscriber read, it accepts a Will and drops it when
// it fires, and it gives a user its user name as Client ID. Attacks it
// cannot see at all (status properties, card contents, rates) are the
// embedded broker's only; docs/protocol.md §13.4 has the table.
func TestSecuredBrokers(t *testing.T) {
	pw := writePasswords(t, userEcho, userMallory, userReq)
	for _, name := range BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := Start(t, name, WithPasswordFile(pw))
			embedded := b.Name() == NameEmbedded
			echoTopic, _ := mqttbind.DiscoveryTopic("acme", "lab", "echo")
			echoRequests, _ := mqttbind.RequestTopic("acme", "lab", "echo")
			malloryRequests, _ := mqttbind.RequestTopic("acme", "lab", "mallory")

			echo := loginOK(t, b.Addr(), userEcho)
			echoCard := testCard("echo", "1")
			// Success is 0x00, or 0x10 (no matching subscribers) from mosquitto.
			if got := echo.publishCode(&paho.Publish{Topic: echoTopic, Retain: true, Payload: echoCard}); got >= 0x80 {
				t.Fatalf("echo's own card: PUBACK %#x", got)
			}
			if got := echo.subscribeCode(echoRequests); got != 1 {
				t.Fatalf("echo's own request topic: SUBACK %#x", got)
			}

			// Who may connect.
			for _, c := range []struct {
				name, user, clientID string
				embedded, mosquitto  int
			}{
				{"an anonymous client", "", "acme/lab/anon", 0x87, 0x87},
				{"an unknown user", "acme/lab/ghost", "acme/lab/ghost", 0x86, 0x87},
			} {
				got := login(t, b.Addr(), c.user, c.clientID, nil).connackCode()
				want := c.mosquitto
				if embedded {
					want = c.embedded
				}
				if got != want {
					t.Errorf("%s: CONNACK %#x, want %#x", c.name, got, want)
				}
			}
			if got, want := loginWith(t, b.Addr(), userMallory, "guess", userMallory, nil).connackCode(), map[bool]int{true: 0x86, false: 0x87}[embedded]; got != want {
				t.Errorf("a wrong password: CONNACK %#x, want %#x", got, want)
			}
			// A user asking for another agent's Client ID: refused by the
			// embedded broker; mosquitto replaces it by the user name, so
			// the victim's session is not taken over either.
			takeover := login(t, b.Addr(), userMallory, userEcho, nil)
			if want := map[bool]int{true: 0x87, false: 0}[embedded]; takeover.connackCode() != want {
				t.Errorf("a user takes over another agent's session: CONNACK %#x, want %#x", takeover.connackCode(), want)
			}
			if takeover.connackCode() == 0 {
				takeover.disconnect()
			}

			// What may be published.
			mallory := loginOK(t, b.Addr(), userMallory)
			for _, c := range []struct {
				name string
				p    paho.Publish
			}{
				{"a client replaces another agent's card", paho.Publish{Topic: echoTopic, Retain: true, Payload: testCard("echo", "forged")}},
				{"a client deletes another agent's card", paho.Publish{Topic: echoTopic, Retain: true}},
				{"a client marks another agent offline with source=lwt", paho.Publish{Topic: echoTopic, Retain: true, Payload: echoCard,
					Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: mqttbind.PropStatus, Value: "offline"}, {Key: mqttbind.PropStatusSource, Value: "lwt"}}}}},
				{"a client adds a phantom agent", paho.Publish{Topic: "$a2a/v1/discovery/acme/lab/phantom", Retain: true, Payload: testCard("phantom", "1")}},
				{"a client sends a request to another unit", paho.Publish{Topic: "$a2a/v1/request/other/unit/x", Payload: []byte("{}")}},
			} {
				p := c.p
				if got := mallory.publishCode(&p); got != 0x87 {
					t.Errorf("%s: PUBACK %#x, want 0x87", c.name, got)
				}
			}

			// What may be subscribed to: refused by the embedded broker,
			// granted by mosquitto (it checks reads at delivery).
			for _, f := range []string{"$a2a/#", "#", "$a2a/v1/request/#", "$a2a/v1/request/acme/lab/+", echoRequests,
				"$a2a/v1/reply/acme/lab/req/#", "$a2a/v1/discovery/other/unit/+"} {
				got := mallory.subscribeCode(f)
				if embedded && got != 0x87 || !embedded && got != 1 {
					t.Errorf("a subscriber on %s: SUBACK %#x", f, got)
				}
			}
			if got := mallory.subscribeCode(malloryRequests); got != 1 {
				t.Errorf("mallory's own request topic: SUBACK %#x", got)
			}

			// A Will on another agent's card: refused at CONNECT by the
			// embedded broker; mosquitto accepts it and drops it when it
			// fires.
			lwt := login(t, b.Addr(), userMallory, userMallory, &paho.WillMessage{Topic: echoTopic, QoS: 1, Retain: true, Payload: testCard("echo", "lwt-forged")})
			if want := map[bool]int{true: 0x87, false: 0}[embedded]; lwt.connackCode() != want {
				t.Errorf("a Will on another agent's card: CONNACK %#x, want %#x", lwt.connackCode(), want)
			}
			if lwt.connackCode() == 0 {
				_ = lwt.conn.Close() // a crash: the Will fires
				<-lwt.pc.Done()
			}
			mallory = loginOK(t, b.Addr(), userMallory) // took the session over
			mallory.subscribeCode(malloryRequests)

			// Nothing changed: a request reaches echo only, echo's card is
			// its own, there is no phantom.
			req := loginOK(t, b.Addr(), userReq)
			req.publishCode(&paho.Publish{Topic: echoRequests, Payload: []byte("for echo only"),
				Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: mqttbind.PropAuthorization, Value: "Bearer t0k"}}}})
			if m := echo.next("the request"); string(m.Payload) != "for echo only" {
				t.Errorf("echo got %s %q", m.Topic, m.Payload)
			}
			req.publishCode(&paho.Publish{Topic: malloryRequests, Payload: []byte("for mallory")})
			if m := mallory.next("its request"); string(m.Payload) != "for mallory" {
				t.Errorf("mallory got %s %q before its own request", m.Topic, m.Payload)
			}
			watcher := loginOK(t, b.Addr(), userReq)
			watcher.subscribeCode("$a2a/v1/discovery/acme/lab/+")
			watcher.subscribeCode(malloryRequests + "/none") // a round trip after the retained cards
			got := map[string]string{}
			for {
				m := watcher.next("the retained cards")
				got[m.Topic] = string(m.Payload)
				if m.Topic == echoTopic {
					break
				}
			}
			if got[echoTopic] != string(echoCard) {
				t.Errorf("echo's retained card is %.50q, want its own", got[echoTopic])
			}
			if _, ok := got["$a2a/v1/discovery/acme/lab/phantom"]; ok {
				t.Errorf("the phantom agent is registered")
			}
		})
	}
}

// TestSecuredBrokersHugePublish: both brokers disconnect a client that
// announces a 64 MB PUBLISH with 0x95 (mosquitto through max_packet_size
// in MosquittoConfig, the embedded broker by default).
func TestSecuredBrokersHugePublish(t *testing.T) {
	pw := writePasswords(t, userMallory)
	for _, name := range BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := Start(t, name, WithPasswordFile(pw))
			conn, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(waitLong))
			cp := packets.NewControlPacket(packets.CONNECT)
			c := cp.Content.(*packets.Connect)
			c.ClientID, c.KeepAlive, c.CleanStart = userMallory, 30, true
			c.Username, c.UsernameFlag, c.Password, c.PasswordFlag = userMallory, true, []byte(password(userMallory)), true
			if _, err := cp.WriteTo(conn); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(conn)
			if p, err := packets.ReadPacket(r); err != nil || p.Content.(*packets.Connack).ReasonCode != 0 {
				t.Fatalf("CONNACK %v, %v", p, err)
			}
			// PUBLISH QoS 1, Remaining Length 64 MiB (0x80 0x80 0x80 0x20).
			if _, err := conn.Write([]byte{0x32, 0x80, 0x80, 0x80, 0x20, 0x00, 0x03, 'a', '/', 'b'}); err != nil {
				t.Fatal(err)
			}
			p, err := packets.ReadPacket(r)
			if err != nil {
				t.Fatalf("no DISCONNECT: %v", err)
			}
			if d, ok := p.Content.(*packets.Disconnect); !ok || d.ReasonCode != 0x95 {
				t.Errorf("got %s %+v, want DISCONNECT 0x95", p.PacketType(), p.Content)
			}
		})
	}
}

// TestMosquittoSecurityConfig: the lines WithPasswordFile adds, and the
// acl_file it writes.
func TestMosquittoSecurityConfig(t *testing.T) {
	pw := writePasswords(t, userEcho)
	extra := filepath.Join(t.TempDir(), "extra.acl")
	if err := os.WriteFile(extra, []byte("user acme/lab/echo\ntopic read $SYS/#\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := StartMosquitto(t, WithPasswordFile(pw), WithACLFile(extra))
	conf, err := os.ReadFile(m.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"allow_anonymous false\n", "password_file " + pw + "\n", "use_username_as_clientid true\n", "acl_file "} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("configuration lacks %q:\n%s", want, conf)
		}
	}
	acl, err := os.ReadFile(filepath.Join(filepath.Dir(m.Config()), "acl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pattern write $a2a/v1/discovery/%c\n", "user acme/lab/echo\n", "topic read $SYS/#\n"} {
		if !strings.Contains(string(acl), want) {
			t.Errorf("acl_file lacks %q:\n%s", want, acl)
		}
	}
}
