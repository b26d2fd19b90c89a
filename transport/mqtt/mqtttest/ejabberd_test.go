package mqtttest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// ejPassword is any non-empty password: anonymous login takes it.
const ejPassword = "secret"

// ejConnect connects a paho client with cp (a clean start, KeepAlive 30
// unless cp says otherwise, and with a user name but no password, the
// password ejPassword). It returns the
// CONNACK, and the error of a refused CONNECT, after which the connection
// is closed; an accepted client is disconnected when the test ends.
func ejConnect(t *testing.T, addr string, cp paho.Connect) (*client, *paho.Connack, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &client{t: t, id: cp.ClientID, msgs: make(chan *paho.Publish, 1024)}
	c.pc = paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				c.msgs <- pr.Packet
				return true, nil
			},
		},
	})
	cp.CleanStart = true
	if cp.KeepAlive == 0 {
		cp.KeepAlive = 30
	}
	if cp.Password == nil && cp.Username != "" {
		cp.Password = []byte(ejPassword)
	}
	cp.UsernameFlag, cp.PasswordFlag = cp.Username != "", cp.Password != nil
	ca, err := c.pc.Connect(testContext(t), &cp)
	if err != nil {
		_ = conn.Close()
		return nil, ca, err
	}
	t.Cleanup(c.disconnect)
	return c, ca, nil
}

// ejLogin connects user with the client ID user, failing the test if
// refused.
func ejLogin(t *testing.T, addr, user string) *client {
	t.Helper()
	c, ca, err := ejConnect(t, addr, paho.Connect{ClientID: user, Username: user})
	if err != nil {
		t.Fatalf("%s: CONNECT refused: %v (CONNACK %+v)", user, err, ca)
	}
	return c
}

// refusedWith checks that a CONNECT was refused with reason.
func refusedWith(t *testing.T, what string, ca *paho.Connack, err error, reason byte) {
	t.Helper()
	if err == nil || ca == nil || ca.ReasonCode != reason {
		var got any = "no CONNACK"
		if ca != nil {
			got = ca.ReasonCode
		}
		t.Errorf("%s: CONNACK %#v, err %v; want reason %#x", what, got, err, reason)
	}
}

// TestEjabberd measures Debian's ejabberd 23.01 (mod_mqtt, configured by
// EjabberdConfig) on the points docs/protocol.md §12 records, which the
// library will rely on. The subtests share one node (startup takes a
// second, stopping as much); they use distinct topics and clients.
func TestEjabberd(t *testing.T) {
	e := StartEjabberd(t)
	if e.Name() != NameEjabberd || e.URL() != "mqtt://"+e.Addr() || !strings.HasPrefix(e.Addr(), "127.0.0.1:") {
		t.Errorf("Name %q, URL %q, Addr %q", e.Name(), e.URL(), e.Addr())
	}
	addr := e.Addr()

	t.Run("private node without epmd", func(t *testing.T) {
		cmdline := nodeCmdlines(t, e.Node())
		if len(cmdline) == 0 {
			t.Fatalf("no process runs node %s", e.Node())
		}
		for _, c := range cmdline {
			if strings.Contains(c, "beam") && !strings.Contains(c, " -start_epmd false ") {
				t.Errorf("the node may start epmd: %s", c)
			}
		}
	})

	t.Run("password required", func(t *testing.T) {
		_, ca, err := ejConnect(t, addr, paho.Connect{ClientID: "nopass", Username: "nopass", Password: []byte{}})
		refusedWith(t, "empty password", ca, err, 0x87)
		_, ca, err = ejConnect(t, addr, paho.Connect{ClientID: "nouser"})
		refusedWith(t, "no user name nor password", ca, err, 0x87)
		ejLogin(t, addr, "alice")
		// A second client of the same user is another session.
		c, ca, err := ejConnect(t, addr, paho.Connect{ClientID: "alice-2", Username: "alice"})
		if err != nil {
			t.Fatalf("second client of alice: %v (%+v)", err, ca)
		}
		c.disconnect()
		// The binding's user names, {o}/{u}/{a} (docs/protocol.md §13.1),
		// are refused.
		_, ca, err = ejConnect(t, addr, paho.Connect{ClientID: "o/u/a", Username: "o/u/a"})
		refusedWith(t, "user name o/u/a", ca, err, 0x86)
	})

	t.Run("CONNACK properties", func(t *testing.T) {
		expiry := uint32(3600)
		_, ca, err := ejConnect(t, addr, paho.Connect{ClientID: "props", Username: "props",
			Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
		if err != nil {
			t.Fatal(err)
		}
		p := ca.Properties
		if p == nil {
			t.Fatal("CONNACK without properties")
		}
		t.Logf("CONNACK properties: %s", connackString(p))
		// Absent means MQTT v5 §3.2.2.3's default: Receive Maximum 65,535,
		// Maximum QoS 2, no Maximum Packet Size; the booleans absent are
		// true (paho fills them in).
		if p.SharedSubAvailable {
			t.Errorf("Shared Subscription Available: true")
		}
		if !p.RetainAvailable || !p.WildcardSubAvailable || !p.SubIDAvailable {
			t.Errorf("Retain %v, Wildcard %v, Subscription Identifiers %v Available; want all true",
				p.RetainAvailable, p.WildcardSubAvailable, p.SubIDAvailable)
		}
		if p.MaximumQoS != nil || p.ReceiveMaximum != nil || p.MaximumPacketSize != nil {
			t.Errorf("Maximum QoS %v, Receive Maximum %v, Maximum Packet Size %v; want all absent",
				ptr(p.MaximumQoS), ptr(p.ReceiveMaximum), ptr(p.MaximumPacketSize))
		}
		if p.TopicAliasMaximum == nil || *p.TopicAliasMaximum != 100 {
			t.Errorf("Topic Alias Maximum %v, want 100", ptr(p.TopicAliasMaximum))
		}
		if p.SessionExpiryInterval == nil || *p.SessionExpiryInterval != 300 {
			t.Errorf("Session Expiry Interval %v for 3600 asked, want 300", ptr(p.SessionExpiryInterval))
		}
		if p.ServerKeepAlive == nil || *p.ServerKeepAlive != 30 {
			t.Errorf("Server Keep Alive %v for 30 asked, want 30", ptr(p.ServerKeepAlive))
		}
	})

	t.Run("dollar topics refused", func(t *testing.T) {
		c := ejLogin(t, addr, "dollar")
		// Subscribing is granted, publishing is not.
		if sa := c.subscribe("$a2a/v1/#", 1); len(sa.Reasons) != 1 || sa.Reasons[0] != 1 {
			t.Errorf("SUBACK for $a2a/v1/#: %v", sa.Reasons)
		}
		for _, topic := range []string{"$a2a/v1/x", "$SYS/x"} {
			resp, err := c.pc.Publish(testContext(t), &paho.Publish{Topic: topic, QoS: 1, Payload: []byte("x")})
			if resp == nil || resp.ReasonCode != 0x90 || err == nil {
				t.Errorf("publish to %s: %+v, %v; want PUBACK 0x90", topic, resp, err)
			}
		}
		// A Will on a $ topic refuses the CONNECT.
		_, ca, err := ejConnect(t, addr, paho.Connect{ClientID: "will-dollar", Username: "will-dollar",
			WillMessage: &paho.WillMessage{Topic: "$a2a/v1/discovery/o/u/a", QoS: 1, Payload: []byte("{}")}})
		refusedWith(t, "Will on $a2a/v1/discovery/o/u/a", ca, err, 0x90)
	})

	t.Run("plain topics delivered", func(t *testing.T) {
		sub := ejLogin(t, addr, "plain-sub")
		sub.subscribe("a2a/v1/x", 1)
		pub := ejLogin(t, addr, "plain-pub")
		if resp := pub.publish(&paho.Publish{Topic: "a2a/v1/x", QoS: 1, Payload: []byte("hello"),
			Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "k", Value: "v"}}}}); resp.ReasonCode != 0 {
			t.Errorf("PUBACK reason %#x", resp.ReasonCode)
		}
		if m := sub.await("a2a/v1/x"); string(m.Payload) != "hello" || m.Properties == nil || m.Properties.User.Get("k") != "v" {
			t.Errorf("received %q with properties %+v", m.Payload, m.Properties)
		}
		// Nobody subscribed: 0x10, a success (MQTT v5 §3.4.2.1).
		if resp := pub.publish(&paho.Publish{Topic: "a2a/v1/nobody", QoS: 1, Payload: []byte("x")}); resp.ReasonCode != 0x10 {
			t.Errorf("publish without subscribers: PUBACK %#x, want 0x10", resp.ReasonCode)
		}
		// No Maximum Packet Size: 2 MiB pass.
		big := bytes.Repeat([]byte("x"), 2<<20)
		if resp := pub.publish(&paho.Publish{Topic: "a2a/v1/x", QoS: 1, Payload: big}); resp.ReasonCode != 0 {
			t.Errorf("2 MiB publish: PUBACK %#x", resp.ReasonCode)
		}
		if m := sub.await("a2a/v1/x"); len(m.Payload) != len(big) {
			t.Errorf("2 MiB publish: received %d bytes", len(m.Payload))
		}
	})

	t.Run("topic filters of 8 levels at most", func(t *testing.T) {
		c := ejLogin(t, addr, "depth")
		if sa := c.subscribe("a2a/v1/3/4/5/6/7/+", 1); len(sa.Reasons) != 1 || sa.Reasons[0] != 1 {
			t.Errorf("SUBACK for 8 levels: %v", sa.Reasons)
		}
		sa, err := c.pc.Subscribe(testContext(t), &paho.Subscribe{
			Subscriptions: []paho.SubscribeOptions{{Topic: "a2a/v1/3/4/5/6/7/8/+", QoS: 1}}})
		if sa == nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 0x8F {
			t.Errorf("SUBACK for 9 levels: %+v, %v; want 0x8f", sa, err)
		}
	})

	t.Run("Will on a plain topic", func(t *testing.T) {
		sub := ejLogin(t, addr, "will-sub")
		sub.subscribe("a2a/v1/will", 1)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		pc := paho.NewClient(paho.ClientConfig{Conn: conn})
		if _, err := pc.Connect(testContext(t), &paho.Connect{ClientID: "willer", CleanStart: true, KeepAlive: 30,
			Username: "willer", UsernameFlag: true, Password: []byte(ejPassword), PasswordFlag: true,
			WillMessage: &paho.WillMessage{Topic: "a2a/v1/will", QoS: 1, Payload: []byte("gone")}}); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close() // no DISCONNECT: the Will is published
		<-pc.Done()
		if m := sub.await("a2a/v1/will"); string(m.Payload) != "gone" {
			t.Errorf("Will: %q", m.Payload)
		}
	})

	t.Run("shared subscription ends the session", func(t *testing.T) {
		// paho refuses it itself, having read the CONNACK.
		c := ejLogin(t, addr, "shared-paho")
		_, err := c.pc.Subscribe(testContext(t), &paho.Subscribe{
			Subscriptions: []paho.SubscribeOptions{{Topic: "$share/g/a2a/v1/x", QoS: 1}}})
		if !errors.Is(err, paho.ErrInvalidArguments) {
			t.Errorf("paho subscribing to $share/g/a2a/v1/x: %v", err)
		}
		// Sent anyway, it gets no SUBACK but a DISCONNECT 0x9E.
		packet := rawSubscribe(t, addr, "$share/g/a2a/v1/x")
		d, ok := packet.(*packets.Disconnect)
		if !ok || d.ReasonCode != 0x9E {
			t.Errorf("answer to SUBSCRIBE $share/g/a2a/v1/x: %#v; want DISCONNECT 0x9e", packet)
		}
	})

	t.Run("retained", func(t *testing.T) {
		pub := ejLogin(t, addr, "retain-pub")
		pub.publish(&paho.Publish{Topic: "a2a/v1/card", QoS: 1, Retain: true, Payload: []byte(`{"name":"a"}`)})
		pub.disconnect()
		late := ejLogin(t, addr, "retain-late")
		late.subscribe("a2a/v1/+", 1)
		if m := late.await("a2a/v1/card"); string(m.Payload) != `{"name":"a"}` || !m.Retain {
			t.Errorf("retained: %q, retain %v", m.Payload, m.Retain)
		}
	})

	t.Run("Restart keeps retained", func(t *testing.T) {
		url := e.URL()
		e.Restart()
		if e.URL() != url {
			t.Errorf("URL after Restart %q, want %q", e.URL(), url)
		}
		c := ejLogin(t, addr, "after-restart")
		c.subscribe("a2a/v1/card", 1)
		if m := c.await("a2a/v1/card"); string(m.Payload) != `{"name":"a"}` {
			t.Errorf("retained after Restart: %q", m.Payload)
		}
		c.disconnect()
	})

	t.Run("Stop leaves nothing", func(t *testing.T) {
		e.Stop()
		if left := nodeCmdlines(t, e.Node()); len(left) != 0 {
			t.Errorf("left running after Stop: %q", left)
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("%s still accepts after Stop", addr)
		}
	})
}

// rawSubscribe connects with packets (no client-side checks), subscribes
// to filter and returns the broker's first answer (nil if the connection
// closed without one).
func rawSubscribe(t *testing.T, addr, filter string) any {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(waitLong)); err != nil {
		t.Fatal(err)
	}
	cp := &packets.Connect{ProtocolName: "MQTT", ProtocolVersion: 5, ClientID: "raw", CleanStart: true, KeepAlive: 30,
		UsernameFlag: true, Username: "raw", PasswordFlag: true, Password: []byte(ejPassword), Properties: &packets.Properties{}}
	if _, err := cp.WriteTo(conn); err != nil {
		t.Fatal(err)
	}
	if p, err := packets.ReadPacket(conn); err != nil {
		t.Fatal(err)
	} else if ca, ok := p.Content.(*packets.Connack); !ok || ca.ReasonCode != 0 {
		t.Fatalf("raw CONNECT: %#v", p.Content)
	}
	sp := &packets.Subscribe{PacketID: 1, Properties: &packets.Properties{},
		Subscriptions: []packets.SubOptions{{Topic: filter, QoS: 1}}}
	if _, err := sp.WriteTo(conn); err != nil {
		t.Fatal(err)
	}
	p, err := packets.ReadPacket(conn)
	if err != nil {
		return nil
	}
	return p.Content
}

// nodeCmdlines returns the command lines of the processes that name node.
func nodeCmdlines(t *testing.T, node string) []string {
	t.Helper()
	var found []string
	for _, c := range nodeProcesses(node) {
		found = append(found, c)
	}
	return found
}

func ptr[T any](p *T) any {
	if p == nil {
		return "absent"
	}
	return *p
}

func connackString(p *paho.ConnackProperties) string {
	return fmt.Sprintf("SharedSub=%v Retain=%v Wildcard=%v SubID=%v MaximumQoS=%v MaximumPacketSize=%v "+
		"ReceiveMaximum=%v TopicAliasMaximum=%v SessionExpiry=%v ServerKeepAlive=%v",
		p.SharedSubAvailable, p.RetainAvailable, p.WildcardSubAvailable, p.SubIDAvailable,
		ptr(p.MaximumQoS), ptr(p.MaximumPacketSize), ptr(p.ReceiveMaximum), ptr(p.TopicAliasMaximum),
		ptr(p.SessionExpiryInterval), ptr(p.ServerKeepAlive))
}

func TestEjabberdConfig(t *testing.T) {
	conf := EjabberdConfig("127.0.0.1:18831")
	for _, want := range []string{
		"hosts:\n  - localhost\n",
		"auth_method: anonymous\n",
		"anonymous_protocol: login_anon\n",
		"    port: 18831\n    ip: \"127.0.0.1\"\n    module: mod_mqtt\n",
		"modules:\n  mod_mqtt: {}\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("ejabberd.yml lacks %q:\n%s", want, conf)
		}
	}
	ctl := EjabberdctlConfig("/tmp/d", "n@localhost", "18832")
	for _, want := range []string{
		"ERLANG_NODE=n@localhost\n",
		"INET_DIST_INTERFACE=127.0.0.1\n",
		"ERL_DIST_PORT=18832\n",
		"EJABBERD_PID_PATH=/tmp/d/ejabberd.pid\n",
		"EXEC_CMD=as_current_user\n",
	} {
		if !strings.Contains(ctl, want) {
			t.Errorf("ejabberdctl.cfg lacks %q:\n%s", want, ctl)
		}
	}
}

// TestStartEjabberdFails: a missing ejabberdctl fails the test (never
// skips) with the install command.
func TestStartEjabberdFails(t *testing.T) {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		startEjabberd(f, "/nonexistent/ejabberdctl")
	}()
	<-done
	if f.skipped || !strings.Contains(f.msg, "apt-get install -y ejabberd") {
		t.Errorf("StartEjabberd: skipped=%v, failure %q; want a failure saying how to install ejabberd", f.skipped, f.msg)
	}
}
