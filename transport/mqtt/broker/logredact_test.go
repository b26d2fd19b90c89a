package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	mqtt "github.com/mochi-mqtt/server/v2"
	mpackets "github.com/mochi-mqtt/server/v2/packets"
)

// The secrets of the log test: none of them may appear in the log.
const (
	secretToken   = "tok-SECRET-5b1d"
	secretPayload = "payload-SECRET-77aa"
)

func secretPublish(topic string, qos byte, id uint16) *packets.ControlPacket {
	cp := packets.NewControlPacket(packets.PUBLISH)
	p := cp.Content.(*packets.Publish)
	p.Topic, p.QoS, p.PacketID = topic, qos, id
	p.Payload = []byte(`{"text":"` + secretPayload + `"}`)
	p.Properties.User = []packets.User{
		{Key: mqttbind.PropAuthorization, Value: "Bearer " + secretToken},
		{Key: mqttbind.PropContextID, Value: "5f0c7b1e-3a8e-4c1a-9b5e-2f1d6c7a8b9c"},
	}
	return cp
}

// TestLogNeverShowsSecrets: malformed PUBLISH packets carrying a bearer
// token (which mochi logs whole, at WARN), refused ones, a refused card
// (logged by mochi at ERROR) and a withheld delivery (at DEBUG) leave no
// token, payload or password in the log, at DEBUG level, while mochi's
// records are still there, summarised.
func TestLogNeverShowsSecrets(t *testing.T) {
	var logs logBuffer
	b := startSecure(t, Config{Logger: newTestLogger(&logs)},
		"user admin",
		"topic read $a2a/v1/discovery/#",
		"topic deny $a2a/v1/discovery/acme/lab/echo",
	)
	admin := connectAs(t, b.Addr(), userAdmin)
	admin.subscribe("$a2a/v1/discovery/#", 1)

	for _, bad := range []struct {
		name string
		pk   *packets.ControlPacket
	}{
		// QoS 1 without a packet identifier (MQTT v5 §2.2.1).
		{"no packet id", secretPublish(requestTopic(t, "acme", "lab", "echo"), 1, 0)},
		// A wildcard in a topic name (MQTT v5 §3.3.2.1).
		{"wildcard topic", secretPublish("$a2a/v1/request/acme/lab/+", 1, 7)},
	} {
		c := dialRaw(t, b.Addr())
		if got := c.connect(userMallory); got != rcSuccess {
			t.Fatalf("%s: CONNACK %#x", bad.name, got)
		}
		c.write(bad.pk)
		p := c.read()
		if _, ok := p.Content.(*packets.Disconnect); !ok {
			t.Fatalf("%s: got %s, want DISCONNECT", bad.name, p.PacketType())
		}
		c.closed()
	}
	// Refused by authorization, by the registry, and a delivery withheld.
	mallory := connectAs(t, b.Addr(), userMallory)
	secret := &paho.PublishProperties{User: paho.UserProperties{{Key: mqttbind.PropAuthorization, Value: "Bearer " + secretToken}}}
	if got := mallory.publishCode(&paho.Publish{Topic: requestTopic(t, "other", "unit", "x"), Payload: []byte(secretPayload), Properties: secret}); got != rcNotAuthorized {
		t.Errorf("PUBACK %#x", got)
	}
	if got := mallory.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "mallory"), Retain: true,
		Payload: []byte(secretPayload), Properties: secret}); got != rcPayloadInvalid {
		t.Errorf("PUBACK %#x", got)
	}
	echo := connectAs(t, b.Addr(), userEcho)
	if got := echo.publishCode(&paho.Publish{Topic: discoveryTopic(t, "acme", "lab", "echo"), Retain: true,
		Payload: card("echo", secretPayload), Properties: secret}); got != rcSuccess {
		t.Errorf("PUBACK %#x", got)
	}
	// The withheld delivery is logged by the goroutine that delivers, which
	// may run after the broker acknowledged the publish: wait (bounded) for
	// every expected line, then look for secrets in all of it.
	member := connectAs(t, b.Addr(), userMember)
	mc := cardOf(t, member, userMember, "1")
	admin.await("member's card", payloadIs(mc))

	wants := []string{
		`level=WARN msg="error processing packet"`,   // mochi, the malformed packets
		`user-property-keys=[\"a2a-authorization\"`,  // summarised
		`level=DEBUG msg="failed publishing packet"`, // mochi, the withheld delivery
		`msg="broker: publish refused: not authorized"`,
		`msg="broker: card refused"`,
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := logs.String()
		missing := ""
		for _, want := range wants {
			if !strings.Contains(out, want) {
				missing = want
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks %s:\n%s", missing, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	for _, s := range []string{secretToken, secretPayload, password(userMallory), password(userEcho), password(userAdmin)} {
		if strings.Contains(out, s) {
			t.Errorf("the log shows %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, `msg="publish packet error"`) {
		t.Errorf("mochi's second report of the registry's refusal is logged:\n%s", out)
	}
}

type recordingHandler struct {
	attrs []slog.Attr
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool { h.attrs = append(h.attrs, a); return true })
	return nil
}
func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(h.attrs, as...)
	return h
}
func (h *recordingHandler) WithGroup(string) slog.Handler { return h }

func TestRedactAttrs(t *testing.T) {
	rec := new(recordingHandler)
	l := newRedactedLogger(slog.New(rec))
	pk := mpackets.Packet{FixedHeader: mpackets.FixedHeader{Type: mpackets.Connect},
		Connect: mpackets.ConnectParams{ClientIdentifier: "o/u/a", Password: []byte(secretToken), WillPayload: []byte(secretPayload)}}
	will := mqtt.Will{TopicName: "t", Payload: []byte(secretPayload),
		User: []mpackets.UserProperty{{Key: "a2a-authorization", Val: secretToken}}}
	l.With("pk", &pk).Info("m",
		"will", will,
		slog.Group("g", "bytes", []byte(secretPayload), "n", 3),
		"err", errors.New("plain error"),
		"s", "kept")
	var all []string
	for _, a := range rec.attrs {
		all = append(all, a.String())
	}
	got := strings.Join(all, " ")
	for _, s := range []string{secretToken, secretPayload} {
		if strings.Contains(got, s) {
			t.Errorf("redacted attributes show %q: %s", s, got)
		}
	}
	for _, want := range []string{`pk=CONNECT client="o/u/a"`, `will=will topic="t"`, `bytes=([]uint8, redacted)`, "n=3", "err=plain error", "s=kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted attributes %s lack %s", got, want)
		}
	}
}
