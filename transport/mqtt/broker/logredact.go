package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// redactHandler is the slog.Handler the broker hands to mochi and to its
// hooks. mochi v2.7.9 logs whole packets as attributes: "error processing
// packet" at WARN with the packet of any malformed or refused PUBLISH or
// CONNECT (server.go, receivePacket), "publish packet error" at ERROR with
// the packet a hook refused, "failed publishing packet" at DEBUG, and a
// Will on a hook error; a packet carries its payload and its user
// properties (a2a-authorization, a bearer token), a CONNECT its password.
// The handler passes strings, numbers, booleans, times and durations as
// they are, an error as its message, a packet or a Will as a summary
// (type, topic, QoS, retain, packet id, payload size, the keys of its user
// properties, never a value), and any other value as its type name only.
// It also drops mochi's second report of a refusal by the security hook,
// which logs each refusal itself.
type redactHandler struct {
	h slog.Handler
}

// newRedactedLogger wraps l (nil means discard) in a redactHandler.
func newRedactedLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(redactHandler{h: l.Handler()})
}

// Enabled is the wrapped handler's.
func (r redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

// Handle passes rec on with its attributes redacted.
func (r redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, rec.Message, rec.PC)
	drop := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "hook" && a.Value.Kind() == slog.KindString && a.Value.String() == securityHookID &&
			(rec.Message == "publish packet error" || rec.Message == "publish packet rejected") {
			drop = true
			return false
		}
		out.AddAttrs(redactAttr(a))
		return true
	})
	if drop {
		return nil
	}
	return r.h.Handle(ctx, out)
}

// WithAttrs redacts attrs too.
func (r redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return redactHandler{h: r.h.WithAttrs(red)}
}

// WithGroup is the wrapped handler's.
func (r redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h: r.h.WithGroup(name)}
}

// redactAttr returns a with a value safe to log.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			red[i] = redactAttr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		return slog.String(a.Key, redactValue(v.Any()))
	case slog.KindLogValuer:
		// Resolve gave up (a cycle or a panic): keep nothing of it.
		return slog.String(a.Key, "(redacted)")
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactValue describes a value of kind Any without its secrets.
func redactValue(x any) string {
	switch x := x.(type) {
	case nil:
		return "<nil>"
	case error:
		return x.Error()
	case packets.Packet:
		return packetSummary(&x)
	case *packets.Packet:
		if x == nil {
			return "<nil>"
		}
		return packetSummary(x)
	case mqtt.Will:
		return fmt.Sprintf("will topic=%q qos=%d retain=%t payload=%d bytes%s",
			x.TopicName, x.Qos, x.Retain, len(x.Payload), userKeys(x.User))
	}
	return fmt.Sprintf("(%T, redacted)", x)
}

// packetSummary describes a packet by its kind, topic, flags and sizes.
func packetSummary(pk *packets.Packet) string {
	name, ok := packets.PacketNames[pk.FixedHeader.Type]
	if !ok {
		name = fmt.Sprintf("type %d", pk.FixedHeader.Type)
	}
	var b strings.Builder
	b.WriteString(strings.ToUpper(name))
	switch pk.FixedHeader.Type {
	case packets.Publish:
		fmt.Fprintf(&b, " topic=%q qos=%d retain=%t id=%d payload=%d bytes",
			pk.TopicName, pk.FixedHeader.Qos, pk.FixedHeader.Retain, pk.PacketID, len(pk.Payload))
	case packets.Connect:
		fmt.Fprintf(&b, " client=%q will=%t", pk.Connect.ClientIdentifier, pk.Connect.WillFlag)
	case packets.Subscribe, packets.Unsubscribe:
		filters := make([]string, len(pk.Filters))
		for i, f := range pk.Filters {
			filters[i] = f.Filter
		}
		fmt.Fprintf(&b, " id=%d filters=%q", pk.PacketID, filters)
	default:
		fmt.Fprintf(&b, " id=%d reason=%#x", pk.PacketID, pk.ReasonCode)
	}
	b.WriteString(userKeys(pk.Properties.User))
	return b.String()
}

// userKeys lists the keys of user properties, never their values.
func userKeys(user []packets.UserProperty) string {
	if len(user) == 0 {
		return ""
	}
	keys := make([]string, len(user))
	for i, p := range user {
		keys[i] = p.Key
	}
	return fmt.Sprintf(" user-property-keys=%q", keys)
}
