package mqtt

import (
	"errors"
	"fmt"
)

// reasonNames are the MQTT v5 reason codes (§2.4), as CONNACK (§3.2.2.2),
// PUBACK (§3.4.2.1), SUBACK (§3.9.3) and DISCONNECT (§3.14.2.1) carry
// them. The codes below 0x80 mean different things in different packets;
// the table names the one a refusal's context gives.
var reasonNames = map[byte]string{
	0x00: "success",
	0x01: "granted QoS 1",
	0x02: "granted QoS 2",
	0x04: "disconnect with will message",
	0x10: "no matching subscribers",
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x83: "implementation specific error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8B: "server shutting down",
	0x8C: "bad authentication method",
	0x8D: "keep alive timeout",
	0x8E: "session taken over",
	0x8F: "topic filter invalid",
	0x90: "topic name invalid",
	0x91: "packet identifier in use",
	0x92: "packet identifier not found",
	0x93: "receive maximum exceeded",
	0x94: "topic alias invalid",
	0x95: "packet too large",
	0x96: "message rate too high",
	0x97: "quota exceeded",
	0x98: "administrative action",
	0x99: "payload format invalid",
	0x9A: "retain not supported",
	0x9B: "QoS not supported",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9E: "shared subscriptions not supported",
	0x9F: "connection rate exceeded",
	0xA0: "maximum connect time",
	0xA1: "subscription identifiers not supported",
	0xA2: "wildcard subscriptions not supported",
}

// ReasonName returns the MQTT v5 name of a reason code, in lower case
// ("not authorized" for 0x87, "topic name invalid" for 0x90): one table
// for CONNACK (MQTT v5 §3.2.2.2), PUBACK (§3.4.2.1), SUBACK (§3.9.3) and
// DISCONNECT (§3.14.2.1). Below 0x80 it gives the success a refusal is
// compared with (0x00 "success", 0x01 "granted QoS 1"). It returns "" for a
// code MQTT v5 does not define.
func ReasonName(code byte) string { return reasonNames[code] }

// codeText is a reason code as errors print it: "0x90 topic name
// invalid", then the broker's reason string, if any, in parentheses.
func codeText(code byte, reason string) string {
	s := fmt.Sprintf("0x%02x", code)
	if name := ReasonName(code); name != "" {
		s += " " + name
	}
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// ConnectError reports a connection the broker refused: a CONNACK reason
// code of 0x80 or more (MQTT v5 §3.2.2.2), such as 0x86 bad user name or
// password or 0x87 not authorized. The broker was reached: the error is not
// ErrBrokerUnreachable. NewAgent, NewClient and Watch return it at once,
// without waiting for the connect timeout.
type ConnectError struct {
	// Broker is the broker URL.
	Broker string
	// ReasonCode is the CONNACK reason code; ReasonName names it.
	ReasonCode byte
	// Reason is the CONNACK's Reason String ("" when it has none).
	Reason string
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("mqtt: broker %s refused the connection: %s", e.Broker, codeText(e.ReasonCode, e.Reason))
}

// PublishError reports a publish the broker refused: a PUBACK reason code
// of 0x80 or more (MQTT v5 §3.4.2.1).
type PublishError struct {
	// Topic is the topic published to.
	Topic string
	// ReasonCode is the PUBACK reason code; ReasonName names it.
	ReasonCode byte
	// Reason is the PUBACK's Reason String ("" when it has none).
	Reason string
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("mqtt: broker refused publish to %s: %s", e.Topic, codeText(e.ReasonCode, e.Reason))
}

// SubscribeError reports a subscription the broker refused: a SUBACK
// reason code of 0x80 or more (MQTT v5 §3.9.3).
type SubscribeError struct {
	// Filter is the topic filter refused.
	Filter string
	// ReasonCode is the filter's SUBACK reason code; ReasonName names it.
	ReasonCode byte
	// Reason is the SUBACK's Reason String ("" when it has none).
	Reason string
}

func (e *SubscribeError) Error() string {
	return fmt.Sprintf("mqtt: broker refused subscription to %s: %s", e.Filter, codeText(e.ReasonCode, e.Reason))
}

// DisconnectError reports a DISCONNECT the broker sent (MQTT v5
// §3.14.2.1), such as 0x8E session taken over or 0x95 packet too large.
// The connection is made again (it is logged); the first connection's
// failure says so when it is why NewAgent, NewClient or Watch failed.
type DisconnectError struct {
	// ReasonCode is the DISCONNECT reason code; ReasonName names it.
	ReasonCode byte
	// Reason is the DISCONNECT's Reason String ("" when it has none).
	Reason string
}

func (e *DisconnectError) Error() string {
	return "mqtt: broker disconnected the client: " + codeText(e.ReasonCode, e.Reason)
}

// CapabilityError reports that the broker does not offer, by its CONNACK
// (MQTT v5 §3.2.2.3), what the binding needs for the connection: shared
// subscriptions for an Agent with a Pool, wildcard subscriptions for a
// Watch, retained messages for an Agent's card, QoS 1 for anything. It is
// found before anything is sent, and fails NewAgent, NewClient or Watch at
// once; retrying the same broker cannot change it.
type CapabilityError struct {
	// Capability is what the broker does not offer, as the CONNACK says
	// it: "shared subscriptions", "QoS 1 (maximum QoS 0)".
	Capability string
	// Need says what needs it: "pools need them".
	Need string
}

func (e *CapabilityError) Error() string {
	return fmt.Sprintf("mqtt: the broker does not offer %s (CONNACK): %s", e.Capability, e.Need)
}

// PacketTooLargeError reports a publish not sent because its packet would
// exceed the broker's Maximum Packet Size (CONNACK, MQTT v5 §3.2.2.3.6): a
// broker that receives a larger packet must end the connection (DISCONNECT
// 0x95), so it is refused here, before it is sent.
type PacketTooLargeError struct {
	// Topic is the topic of the publish.
	Topic string
	// Size is the packet's size, Max the broker's Maximum Packet Size, in
	// bytes.
	Size, Max int
}

func (e *PacketTooLargeError) Error() string {
	return fmt.Sprintf("mqtt: publish to %s not sent: its packet is %d bytes, over the broker's maximum packet size of %d bytes (CONNACK)",
		e.Topic, e.Size, e.Max)
}

// IsRefusal reports whether err is, or wraps, a refusal: the broker
// refusing the connection, a publish, a subscription or the session
// (*ConnectError, *PublishError, *SubscribeError, *DisconnectError), or
// the binding refusing locally what the broker's CONNACK rules out
// (*CapabilityError, *PacketTooLargeError). Waiting does not answer a
// refusal: a program shows it rather than time out.
func IsRefusal(err error) bool {
	var ce *ConnectError
	var de *DisconnectError
	var ke *CapabilityError
	var te *PacketTooLargeError
	return isRefusal(err) || errors.As(err, &ce) || errors.As(err, &de) || errors.As(err, &ke) || errors.As(err, &te)
}

// isRefusal reports whether err makes the first connection fail at once
// (see dial): a subscription, a publish or a capability refused, a
// packet too large to send.
func isRefusal(err error) bool {
	if _, ok := refusalCode(err); ok {
		return true
	}
	var ke *CapabilityError
	var te *PacketTooLargeError
	return errors.As(err, &ke) || errors.As(err, &te)
}

// refusalCode returns the reason code of a broker's refusal of a
// subscription or a publish: a *SubscribeError's or a *PublishError's.
func refusalCode(err error) (byte, bool) {
	var se *SubscribeError
	var pe *PublishError
	switch {
	case errors.As(err, &se):
		return se.ReasonCode, true
	case errors.As(err, &pe):
		return pe.ReasonCode, true
	}
	return 0, false
}

// isPermanentRefusal reports whether err is a refusal that retrying will
// not change: a SUBACK or PUBACK reason code (MQTT v5 §3.4.2.1, §3.9.3)
// saying the client may not do it (0x87 not authorized), that the topic
// filter or name is invalid (0x8F, 0x90), that the payload is (0x99, the
// embedded registry's verdict on a card: docs/protocol.md §13.5), or that
// the broker does not support what was asked (0x9E shared subscriptions,
// 0xA1 subscription identifiers, 0xA2 wildcard subscriptions); a CONNACK
// refusing the client's credentials or identity (see permanentConnect);
// a capability the CONNACK does not offer; a card too large for the
// broker's maximum packet size. Any other refusal (0x80 unspecified, 0x83
// implementation specific, 0x97 quota exceeded, 0x88 server unavailable,
// ...) may pass later: the connection is made again.
func isPermanentRefusal(err error) bool {
	var ce *ConnectError
	var ke *CapabilityError
	var te *PacketTooLargeError
	switch {
	case errors.As(err, &ce):
		return permanentConnect(ce.ReasonCode)
	case errors.As(err, &ke), errors.As(err, &te):
		return true
	}
	code, ok := refusalCode(err)
	if !ok {
		return false
	}
	switch code {
	case 0x87, 0x8F, 0x90, 0x99, 0x9E, 0xA1, 0xA2:
		return true
	}
	return false
}

// permanentConnect reports whether a CONNACK reason code (MQTT v5
// §3.2.2.2) refuses what the client will send again unchanged: its
// protocol version, Client ID, credentials or authentication method, or
// its Will (payload format, retain, QoS, size). The others (0x80, 0x83,
// 0x88 server unavailable, 0x89 server busy, 0x97, 0x9C, 0x9D, 0x9F
// connection rate exceeded, ...) may pass.
func permanentConnect(code byte) bool {
	switch code {
	case 0x84, 0x85, 0x86, 0x87, 0x8A, 0x8C, 0x95, 0x99, 0x9A, 0x9B:
		return true
	}
	return false
}

// endsRequest reports whether a request's failed publish ends its
// operation at once instead of counting as an attempt the retry profile
// may repeat: a packet too large for the broker, and a PUBACK refusal
// other than 0x97 quota exceeded and 0x91 packet identifier in use (both
// say "not now"; they are retried by the profile, like a publish with no
// connection).
func endsRequest(err error) bool {
	var te *PacketTooLargeError
	if errors.As(err, &te) {
		return true
	}
	var pe *PublishError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.ReasonCode != 0x97 && pe.ReasonCode != 0x91
}

// reasonCode returns the reason code of any refusal by the broker: a
// CONNACK's, PUBACK's, SUBACK's or DISCONNECT's.
func reasonCode(err error) (byte, bool) {
	if code, ok := refusalCode(err); ok {
		return code, true
	}
	var ce *ConnectError
	var de *DisconnectError
	switch {
	case errors.As(err, &ce):
		return ce.ReasonCode, true
	case errors.As(err, &de):
		return de.ReasonCode, true
	}
	return 0, false
}
