package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// Reason codes the tests expect (MQTT v5 §2.4).
const (
	rcSuccess          = 0x00
	rcGrantedQoS1      = 0x01
	rcBadUserPassword  = 0x86
	rcNotAuthorized    = 0x87
	rcTopicNameInvalid = 0x90
	rcPacketTooLarge   = 0x95
	rcQuotaExceeded    = 0x97
	rcPayloadInvalid   = 0x99
)

func requestTopic(t testing.TB, org, unit, agent string) string {
	t.Helper()
	topic, err := mqttbind.RequestTopic(org, unit, agent)
	if err != nil {
		t.Fatal(err)
	}
	return topic
}

// TestConnectRefusals: with a password file, a CONNECT is refused without
// credentials, with wrong ones, and with a Client ID that is not the user
// name (a session takeover of another agent); the refused connection takes
// nothing over.
func TestConnectRefusals(t *testing.T) {
	b := startSecure(t, Config{})
	echo := connectAs(t, b.Addr(), userEcho)
	echo.subscribe(requestTopic(t, "acme", "lab", "echo"), 1)

	login := func(user, pw, clientID string) *paho.Connect {
		cp := &paho.Connect{ClientID: clientID, CleanStart: true}
		if user != "" {
			cp.Username, cp.UsernameFlag = user, true
		}
		if pw != "" {
			cp.Password, cp.PasswordFlag = []byte(pw), true
		}
		return cp
	}
	for _, c := range []struct {
		name    string
		cp      *paho.Connect
		want    byte
		counter func(Denials) int64
	}{
		{"an anonymous client", login("", "", "acme/lab/anon"), rcNotAuthorized, func(d Denials) int64 { return d.Authentication }},
		{"an anonymous client with the victim's Client ID", login("", "", userEcho), rcNotAuthorized, func(d Denials) int64 { return d.Authentication }},
		{"a wrong password", login(userMallory, "guess", userMallory), rcBadUserPassword, func(d Denials) int64 { return d.Authentication }},
		{"a user name without password", login(userMallory, "", userMallory), rcBadUserPassword, func(d Denials) int64 { return d.Authentication }},
		{"an unknown user", login("acme/lab/ghost", "pw-acme/lab/ghost", "acme/lab/ghost"), rcBadUserPassword, func(d Denials) int64 { return d.Authentication }},
		{"another user's password", login(userMallory, password(userEcho), userMallory), rcBadUserPassword, func(d Denials) int64 { return d.Authentication }},
		{"a user takes over another agent's session", login(userMallory, password(userMallory), userEcho), rcNotAuthorized, func(d Denials) int64 { return d.ClientID }},
		{"a user connects as a phantom agent", login(userMallory, password(userMallory), "acme/lab/phantom"), rcNotAuthorized, func(d Denials) int64 { return d.ClientID }},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.counter(b.Denials())
			if got := connackCode(t, b.Addr(), c.cp); got != c.want {
				t.Errorf("CONNACK %#x, want %#x", got, c.want)
			}
			if got := c.counter(b.Denials()) - before; got != 1 {
				t.Errorf("counted %d refusals, want 1", got)
			}
		})
	}

	// The victim kept its session: a request still reaches it.
	req := connectAs(t, b.Addr(), userReq)
	req.publish(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 1, Payload: []byte("still there?")})
	echo.await("the request after the attempts", payloadIs([]byte("still there?")))

	// An empty Client ID is assigned the user name (as mosquitto's
	// use_username_as_clientid).
	cp := loginAs(userMember)
	cp.ClientID = ""
	ca, err := tryConnect(t, b.Addr(), cp)
	if err != nil || ca.Properties == nil || ca.Properties.AssignedClientID != userMember {
		t.Errorf("empty Client ID: CONNACK %+v, %v; want the user name assigned", ca, err)
	}
}

// TestAttacksRefused: what a hostile client of the same unit (mallory) or
// of another unit (eve) tries, each refused with its reason code, counted,
// and without effect: the victim's retained card is unchanged and no
// request reaches anyone but its addressee.
func TestAttacksRefused(t *testing.T) {
	b := startSecure(t, Config{CardUpdatesPerMinute: -1})
	echo := connectAs(t, b.Addr(), userEcho)
	echoCard := cardOf(t, echo, userEcho, "1")
	echoTopic := discoveryTopic(t, "acme", "lab", "echo")
	mallory := connectAs(t, b.Addr(), userMallory)
	eve := connectAs(t, b.Addr(), userEve)

	withStatus := func(status, source string) *paho.PublishProperties {
		return &paho.PublishProperties{User: statusProps(status, source)}
	}
	publishes := []struct {
		name    string
		by      *client
		p       paho.Publish
		want    byte
		counter func(Denials) int64
	}{
		{"a client replaces another agent's card", mallory,
			paho.Publish{Topic: echoTopic, Retain: true, Payload: card("echo", "forged"), Properties: withStatus("online", "agent")},
			rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client deletes another agent's card", mallory,
			paho.Publish{Topic: echoTopic, Retain: true}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client marks another agent offline with source=lwt", mallory,
			paho.Publish{Topic: echoTopic, Retain: true, Payload: card("echo", "1"), Properties: withStatus("offline", "lwt")},
			rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client of another unit replaces the card", eve,
			paho.Publish{Topic: echoTopic, Retain: true, Payload: card("echo", "forged")}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client adds a phantom agent", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "phantom"), Retain: true, Payload: card("phantom", "1")},
			rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client publishes its own card with source=lwt", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Retain: true, Payload: card("mallory", "1"), Properties: withStatus("offline", "lwt")},
			rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a client fakes source=broker", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Retain: true, Payload: card("mallory", "1"), Properties: withStatus("online", "broker")},
			rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a client publishes two statuses", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Retain: true, Payload: card("mallory", "1"),
				Properties: &paho.PublishProperties{User: statusProps("online", "agent", mqttbind.PropStatus, "offline")}},
			rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
		{"a client publishes a card that is not a card", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Retain: true, Payload: []byte(`{"name":"x"}`)},
			rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
		{"a client publishes below its discovery topic", mallory,
			paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory") + "/extra", Retain: true, Payload: card("mallory", "1")},
			rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client sends a request to another unit", mallory,
			paho.Publish{Topic: requestTopic(t, "other", "unit", "eve"), Payload: []byte(`{}`)}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client sends a reply into another unit", mallory,
			paho.Publish{Topic: "$a2a/v1/reply/other/unit/eve/x", Payload: []byte(`{}`)}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client publishes another agent's events", mallory,
			paho.Publish{Topic: "$a2a/v1/event/acme/lab/echo", Payload: []byte(`{}`)}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
		{"a client publishes outside $a2a", mallory,
			paho.Publish{Topic: "acme/lab/echo", Payload: []byte(`{}`)}, rcNotAuthorized, func(d Denials) int64 { return d.Publish }},
	}
	for _, c := range publishes {
		t.Run(c.name, func(t *testing.T) {
			before := c.counter(b.Denials())
			p := c.p
			if got := c.by.publishCode(&p); got != c.want {
				t.Errorf("PUBACK %#x, want %#x", got, c.want)
			}
			if got := c.counter(b.Denials()) - before; got != 1 {
				t.Errorf("counted %d refusals, want 1", got)
			}
		})
	}

	subscribes := []struct {
		name   string
		by     *client
		filter string
	}{
		{"a subscriber on $a2a/#", mallory, "$a2a/#"},
		{"a subscriber on #", mallory, "#"},
		{"a subscriber on every request", mallory, "$a2a/v1/request/#"},
		{"a subscriber on every request of its unit", mallory, "$a2a/v1/request/acme/lab/#"},
		{"a wildcard in the agent level of request topics", mallory, "$a2a/v1/request/acme/lab/+"},
		{"a wildcard in the unit level", mallory, "$a2a/v1/request/acme/+/echo"},
		{"another agent's request topic", mallory, requestTopic(t, "acme", "lab", "echo")},
		{"another agent's request topic through $share", mallory, "$share/g/" + requestTopic(t, "acme", "lab", "echo")},
		{"a pool without $share", mallory, "$a2a/v1/request/acme/lab/pool/p"},
		{"every pool without $share", mallory, "$a2a/v1/request/acme/lab/pool/+"},
		{"another unit's pool through $share", eve, "$share/g/$a2a/v1/request/acme/lab/pool/p"},
		{"another requester's reply tree", mallory, "$a2a/v1/reply/acme/lab/req/#"},
		{"every reply of the unit", mallory, "$a2a/v1/reply/acme/lab/+/#"},
		{"every reply", mallory, "$a2a/v1/reply/#"},
		{"the discovery of another unit", eve, "$a2a/v1/discovery/acme/lab/+"},
		{"discovery # below the unit", mallory, "$a2a/v1/discovery/acme/lab/#"},
		{"every discovery topic", mallory, "$a2a/v1/discovery/#"},
		{"the events of another unit", eve, "$a2a/v1/event/acme/lab/+"},
		{"$SYS", mallory, "$SYS/#"},
		{"outside $a2a", mallory, "acme/lab/#"},
		{"a wildcard inside a level", mallory, "$a2a/v1/discovery/acme/lab/x#"},
	}
	for _, c := range subscribes {
		t.Run(c.name, func(t *testing.T) {
			before := b.Denials().Subscribe
			if got := c.by.subscribeCode(c.filter); got != rcNotAuthorized {
				t.Errorf("SUBACK %#x for %s, want %#x", got, c.filter, rcNotAuthorized)
			}
			if got := b.Denials().Subscribe - before; got != 1 {
				t.Errorf("counted %d refusals, want 1", got)
			}
		})
	}

	t.Run("nothing changed", func(t *testing.T) {
		if got := retained(t, b.Addr(), userReq, echoTopic); string(got) != string(echoCard) {
			t.Errorf("echo's retained card is %q, want its own %q", got, echoCard)
		}
		if got := retained(t, b.Addr(), userReq, discoveryTopic(t, "acme", "lab", "phantom")); got != nil {
			t.Errorf("the phantom agent is registered: %q", got)
		}
		// A request reaches its addressee only; mallory subscribed to all
		// it may and to what it may not (refused above).
		echo.subscribe(requestTopic(t, "acme", "lab", "echo"), 1)
		mallory.subscribe(discoveryFilter(t, "acme", "lab"), 1)
		mallory.subscribe("$a2a/v1/reply/acme/lab/mallory/#", 1)
		mallory.subscribe(requestTopic(t, "acme", "lab", "mallory"), 1)
		req := connectAs(t, b.Addr(), userReq)
		secret := secretProps()
		req.publish(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 1, Payload: []byte("for echo only"),
			Properties: &paho.PublishProperties{User: secret}})
		echo.await("the request", payloadIs([]byte("for echo only")))
		// mallory's own request topic is the sentinel: it gets this one,
		// and nothing of echo's before it.
		req.publish(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "mallory"), QoS: 1, Payload: []byte("for mallory")})
		mallory.await("its own request", func(m *paho.Publish) bool {
			if strings.Contains(string(m.Payload), "for echo only") || props(m).Get(mqttbind.PropAuthorization) != "" {
				t.Errorf("mallory received echo's request on %s", m.Topic)
			}
			return string(m.Payload) == "for mallory"
		})
	})
}

// TestBindingFlowsAllowed: with authentication and the identity rules,
// everything the binding does still works: an agent registers, updates
// and unregisters its card, a requester finds it, sends a request, gets
// the reply on its reply topic; a pool member takes pooled requests
// through $share; events reach the unit.
func TestBindingFlowsAllowed(t *testing.T) {
	b := startSecure(t, Config{})
	echo := connectAs(t, b.Addr(), userEcho)
	req := connectAs(t, b.Addr(), userReq)
	member := connectAs(t, b.Addr(), userMember)

	for _, s := range []struct {
		c      *client
		filter string
	}{
		{echo, requestTopic(t, "acme", "lab", "echo")},
		{echo, "$a2a/v1/reply/acme/lab/echo/#"},
		{req, "$a2a/v1/reply/acme/lab/req/7f7a"},
		{req, discoveryFilter(t, "acme", "lab")},
		{req, discoveryTopic(t, "acme", "lab", "echo")},
		{req, "$a2a/v1/event/acme/lab/+"},
		{member, "$share/a2a.acme.lab.p/$a2a/v1/request/acme/lab/pool/p"},
		{member, "$share/g/$a2a/v1/request/acme/lab/pool/+"},
	} {
		if got := s.c.subscribeCode(s.filter); got != rcGrantedQoS1 {
			t.Errorf("%s: SUBACK %#x for %s, want granted", s.c.id, got, s.filter)
		}
	}
	card1 := cardOf(t, echo, userEcho, "1")
	req.await("echo's card", payloadIs(card1))
	card2 := cardOf(t, echo, userEcho, "2")
	req.await("echo's updated card", payloadIs(card2))

	if got := req.publishCode(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), Payload: []byte("request"),
		Properties: &paho.PublishProperties{ResponseTopic: "$a2a/v1/reply/acme/lab/req/7f7a", User: secretProps()}}); got != rcSuccess {
		t.Fatalf("request: PUBACK %#x", got)
	}
	m := echo.await("the request", payloadIs([]byte("request")))
	if got := echo.publishCode(&paho.Publish{Topic: m.Properties.ResponseTopic, Payload: []byte("reply")}); got != rcSuccess {
		t.Fatalf("reply: PUBACK %#x", got)
	}
	req.await("the reply", payloadIs([]byte("reply")))

	if got := req.publishCode(&paho.Publish{Topic: "$a2a/v1/request/acme/lab/pool/p", Payload: []byte("pooled")}); got != rcSuccess {
		t.Fatalf("pooled request: PUBACK %#x", got)
	}
	member.await("the pooled request", payloadIs([]byte("pooled")))

	if got := echo.publishCode(&paho.Publish{Topic: "$a2a/v1/event/acme/lab/echo", Payload: []byte("event")}); got != rcSuccess {
		t.Fatalf("event: PUBACK %#x", got)
	}
	req.await("the event", payloadIs([]byte("event")))

	// Graceful stop: the card republished offline by the agent itself,
	// then the unregistration.
	if got := echo.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "echo"), Retain: true, Payload: card2,
		Properties: &paho.PublishProperties{User: statusProps(mqttbind.StatusOffline, mqttbind.StatusSourceAgent)}}); got != rcSuccess {
		t.Fatalf("offline card: PUBACK %#x", got)
	}
	if got := echo.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "echo"), Retain: true}); got != rcSuccess {
		t.Fatalf("unregistration: PUBACK %#x", got)
	}
	req.await("the unregistration", func(m *paho.Publish) bool {
		return m.Topic == discoveryTopic(t, "acme", "lab", "echo") && len(m.Payload) == 0
	})
	if d := b.Denials(); d != (Denials{}) {
		t.Errorf("refusals counted in the allowed flows: %+v", d)
	}
}

// TestWillRefusals: a Will is checked at CONNECT like a publish, and a
// CONNECT with a refused Will is refused (nothing is left to fire later).
func TestWillRefusals(t *testing.T) {
	b := startSecure(t, Config{MaxCardSize: 2048})
	will := func(user, topic string, payload []byte, status, source string) *paho.Connect {
		cp := loginAs(user)
		cp.WillMessage = &paho.WillMessage{Topic: topic, Payload: payload, QoS: 1, Retain: true}
		cp.WillProperties = &paho.WillProperties{User: statusProps(status, source)}
		return cp
	}
	own := discoveryTopic(t, "acme", "lab", "mallory")
	for _, c := range []struct {
		name string
		cp   *paho.Connect
		want byte
	}{
		{"a Will on another agent's card", will(userMallory, discoveryTopic(t, "acme", "lab", "echo"), card("echo", "1"), "offline", "lwt"), rcNotAuthorized},
		{"a Will on another unit's request topic", will(userMallory, requestTopic(t, "other", "unit", "eve"), []byte("x"), "offline", "lwt"), rcNotAuthorized},
		{"a Will that claims source=broker", will(userMallory, own, card("mallory", "1"), "offline", "broker"), rcNotAuthorized},
		{"a Will that claims source=agent", will(userMallory, own, card("mallory", "1"), "offline", "agent"), rcNotAuthorized},
		{"a Will that says online", will(userMallory, own, card("mallory", "1"), "online", "lwt"), rcPayloadInvalid},
		{"a Will whose card is not a card", will(userMallory, own, []byte(`{"name":1}`), "offline", "lwt"), rcPayloadInvalid},
		{"a Will whose card is too large", will(userMallory, own, []byte(strings.Repeat(" ", 4096)), "offline", "lwt"), rcPacketTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := b.Denials().Will
			if got := connackCode(t, b.Addr(), c.cp); got != c.want {
				t.Errorf("CONNACK %#x, want %#x", got, c.want)
			}
			if got := b.Denials().Will - before; got != 1 {
				t.Errorf("counted %d refusals, want 1", got)
			}
		})
	}
	// mochi refuses a Will with an empty payload before any hook sees it
	// (0x82, protocol error), so a Will cannot unregister a card either.
	if got := connackCode(t, b.Addr(), will(userMallory, discoveryTopic(t, "acme", "lab", "echo"), nil, "offline", "lwt")); got != 0x82 {
		t.Errorf("a Will deleting another agent's card: CONNACK %#x, want mochi's 0x82", got)
	}
	if got := connackCode(t, b.Addr(), will(userMallory, own, card("mallory", "1"), "offline", "lwt")); got != rcSuccess {
		t.Errorf("the agent's own LWT card: CONNACK %#x", got)
	}
}

// TestACLFileRules: the ACL file widens the identity rules (a user may
// read more, publish more, use more Client IDs), and deny lines narrow
// them, also inside a granted subscription (the denied topics are never
// delivered).
func TestACLFileRules(t *testing.T) {
	b := startSecure(t, Config{},
		"# operators",
		"user admin",
		"topic read $a2a/v1/discovery/#",
		"topic deny $a2a/v1/discovery/acme/lab/echo",
		"topic write $a2a/v1/discovery/acme/lab/registrar",
		"clientid ops/console/*",
		"user acme/lab/req",
		"clientid acme/lab/watch-*",
		"pattern deny $a2a/v1/event/%c",
		"pattern read $SYS/broker/uptime",
	)
	login := func(user, clientID string) *paho.Connect {
		cp := loginAs(user)
		cp.ClientID = clientID
		return cp
	}
	admin := dial(t, b.Addr(), login(userAdmin, "ops/console/1"), nil)
	for _, c := range []struct {
		filter string
		want   byte
	}{
		{"$a2a/v1/discovery/#", rcGrantedQoS1},
		{"$a2a/v1/discovery/acme/lab/echo", rcNotAuthorized},
		{"$a2a/v1/request/#", rcNotAuthorized},
		{"$SYS/broker/uptime", rcGrantedQoS1},
	} {
		if got := admin.subscribeCode(c.filter); got != c.want {
			t.Errorf("admin: SUBACK %#x for %s, want %#x", got, c.filter, c.want)
		}
	}
	// The file lets admin publish a card for another agent: the registry
	// still validates it, and leaves the owner rule to the file.
	if got := admin.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "registrar"), Retain: true,
		Payload: card("registrar", "1")}); got != rcSuccess {
		t.Errorf("admin's registrar card: PUBACK %#x", got)
	}
	if got := admin.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "registrar"), Retain: true,
		Payload: []byte("{}")}); got != rcPayloadInvalid {
		t.Errorf("admin's invalid card: PUBACK %#x, want %#x", got, rcPayloadInvalid)
	}
	admin.await("the registrar card", payloadIs(card("registrar", "1")))

	// A pattern deny line takes from the identity rules.
	echo := connectAs(t, b.Addr(), userEcho)
	if got := echo.publishCode(&paho.Publish{Topic: "$a2a/v1/event/acme/lab/echo", Payload: []byte("e")}); got != rcNotAuthorized {
		t.Errorf("echo's own event under a deny pattern: PUBACK %#x, want %#x", got, rcNotAuthorized)
	}

	// A Client ID the file allows the requester, with the identity rules
	// of that Client ID; one it does not allow is refused.
	watcher := dial(t, b.Addr(), login(userReq, "acme/lab/watch-42"), nil)
	watcher.subscribe(discoveryFilter(t, "acme", "lab"), 1)
	if got := connackCode(t, b.Addr(), login(userReq, "acme/lab/other")); got != rcNotAuthorized {
		t.Errorf("a Client ID outside the user's clientid lines: CONNACK %#x", got)
	}

	// echo's card reaches the watcher but never admin, whose wildcard
	// subscription is denied that topic; member's card, published after
	// it, is the sentinel.
	echoCard := cardOf(t, echo, userEcho, "1")
	watcher.await("echo's card", payloadIs(echoCard))
	member := connectAs(t, b.Addr(), userMember)
	memberCard := cardOf(t, member, userMember, "1")
	admin.await("member's card", func(m *paho.Publish) bool {
		if m.Topic == discoveryTopic(t, "acme", "lab", "echo") {
			t.Errorf("a denied topic was delivered to admin: %s", m.Topic)
		}
		return string(m.Payload) == string(memberCard)
	})
}

// TestACLFileErrors: Start refuses an ACL file it cannot read, and one
// without authentication.
func TestACLFileErrors(t *testing.T) {
	pw := writePasswordFile(t, userEcho)
	for _, c := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"unknown keyword", Config{PasswordFile: pw, ACLFile: writeTestFile(t, "acl", "topic read x\nallow all\n")}, "line 2: unknown keyword"},
		{"bad access", Config{PasswordFile: pw, ACLFile: writeTestFile(t, "acl", "user u\ntopic sometimes x\n")}, "access"},
		{"bad filter", Config{PasswordFile: pw, ACLFile: writeTestFile(t, "acl", "user u\ntopic read a/#/b\n")}, "invalid topic filter"},
		{"clientid before user", Config{PasswordFile: pw, ACLFile: writeTestFile(t, "acl", "clientid x\n")}, "before any user"},
		{"missing file", Config{PasswordFile: pw, ACLFile: "/nonexistent/acl"}, "no such file"},
		{"ACL without authentication", Config{ACLFile: writeTestFile(t, "acl", "")}, "needs authentication"},
		{"missing password file", Config{PasswordFile: "/nonexistent/passwd"}, "no such file"},
		{"corrupt password file", Config{PasswordFile: writeTestFile(t, "pw", "u:plain\n")}, "line 1"},
		{"empty trusted jku", Config{TrustedJKU: []string{""}}, "empty trusted jku"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Start(testContext(t), c.cfg)
			if err == nil {
				b.Close()
				t.Fatalf("Start: no error")
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Start: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

// TestOpenBrokerWarns: a broker without authentication says so at start,
// at WARN; a broker with it does not.
func TestOpenBrokerWarns(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			var logs logBuffer
			cfg := Config{Logger: newTestLogger(&logs)}
			if secure {
				cfg.PasswordFile = writePasswordFile(t, userEcho)
			}
			startBroker(t, cfg)
			warned := strings.Contains(logs.String(), "level=WARN msg=\"broker: no authentication")
			if warned == secure {
				t.Errorf("open-broker warning logged: %v, want %v; log:\n%s", warned, !secure, logs.String())
			}
		})
	}
}
