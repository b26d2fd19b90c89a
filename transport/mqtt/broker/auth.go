package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// securityHookID names the hook in mochi's log (and lets the log handler
// recognise mochi's reports of its refusals).
const securityHookID = "a2a-security"

// deniedFilter replaces a subscription filter the policy refuses, so that
// mochi's own check (OnACLCheck) answers it with SUBACK 0x87. It is a
// valid filter that the policy never grants.
const deniedFilter = "$a2abind/denied"

// Denials counts what a broker refused since it started (see
// [Broker.Denials]). Refusals are also logged, at WARN, with the client,
// the user, the topic and the reason, never a payload or a property value:
// the first few of each kind and source per minute one by one, the rest as
// a count (denylog.go).
type Denials struct {
	// Authentication counts CONNECTs refused for credentials: none
	// (anonymous), an unknown user, a wrong password, an unusable
	// certificate (CONNACK 0x86 or 0x87).
	Authentication int64
	// ClientID counts CONNECTs of an authenticated user with a Client ID
	// it may not use (CONNACK 0x87).
	ClientID int64
	// Will counts CONNECTs whose Will was refused: a topic the client may
	// not publish to, or a card the registry refuses (CONNACK 0x87, 0x95
	// or 0x99).
	Will int64
	// Publish counts PUBLISH packets refused by authorization (PUBACK or
	// PUBREC 0x87 at QoS 1 or 2; dropped at QoS 0).
	Publish int64
	// Subscribe counts subscription filters refused (SUBACK 0x87).
	Subscribe int64
	// Card counts cards refused by the registry for their content: not a
	// valid Agent Card, malformed status properties (0x99), a status
	// source the publisher may not claim, another agent's topic, no
	// signature from a trusted JWKS (0x87).
	Card int64
	// CardSize counts cards over the size limit (PUBACK 0x97).
	CardSize int64
	// CardRate counts card updates over the rate limit (PUBACK 0x97).
	CardRate int64
	// ConnectionRate counts connections closed at once for exceeding the
	// connection rate, or the open connections, of their source address.
	ConnectionRate int64
	// PacketSize counts connections closed for a packet over the maximum
	// packet size (DISCONNECT 0x95 once the session is established).
	PacketSize int64
	// PendingBytes counts connections closed for leaving more than
	// Config.MaxPendingBytes of what the broker sent them unread
	// (DISCONNECT 0x97).
	PendingBytes int64
}

// denials is Denials, counted atomically.
type denials struct {
	authentication, clientID, will, publish, subscribe   atomic.Int64
	card, cardSize, cardRate, connectionRate, packetSize atomic.Int64
	pendingBytes                                         atomic.Int64
}

func (d *denials) snapshot() Denials {
	return Denials{
		Authentication: d.authentication.Load(),
		ClientID:       d.clientID.Load(),
		Will:           d.will.Load(),
		Publish:        d.publish.Load(),
		Subscribe:      d.subscribe.Load(),
		Card:           d.card.Load(),
		CardSize:       d.cardSize.Load(),
		CardRate:       d.cardRate.Load(),
		ConnectionRate: d.connectionRate.Load(),
		PacketSize:     d.packetSize.Load(),
		PendingBytes:   d.pendingBytes.Load(),
	}
}

// authn authenticates clients: a verified TLS client certificate (its
// Subject Common Name is the user name) or a user name and password from
// the password file.
type authn struct {
	passwords *PasswordFile // nil: certificates only
}

// securityHook enforces authentication, authorization and the validating
// registry, whichever are configured (see the package documentation):
//
//   - OnConnect authenticates the client, checks its Client ID and its
//     Will, and refuses the CONNECT with the reason code itself (mochi
//     sends no CONNACK for a hook's error);
//   - OnConnectAuthenticate and OnACLCheck stand in for allowAll;
//   - OnSubscribe checks each filter, with the knowledge mochi's
//     OnACLCheck lacks (whether it is shared), and replaces a refused one
//     by deniedFilter;
//   - OnPublish runs the registry on discovery topics.
type securityHook struct {
	mqtt.HookBase

	srv    *mqtt.Server
	auth   *authn    // nil: no authentication, no authorization
	policy *policy   // with auth
	reg    *registry // nil: no validating registry
	counts *denials
	deny   *denialLog
}

// ID names the hook in mochi's log.
func (*securityHook) ID() string { return securityHookID }

// Provides reports the events the hook handles.
func (h *securityHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnConnect, mqtt.OnPublish:
		return true
	case mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnSubscribe:
		return h.auth != nil
	}
	return false
}

// user returns the authenticated user name of cl.
func user(cl *mqtt.Client) string { return string(cl.Properties.Username) }

// refuse answers a CONNECT with code and returns the code as the error
// that ends the connection; kind is the refusal's for the log, which
// counts connections by source address (the Client ID is the peer's
// claim).
func (h *securityHook) refuse(cl *mqtt.Client, kind string, code packets.Code, msg string, args ...any) error {
	h.deny.warn(h.Log, kind, hostOf(cl.Net.Remote), "broker: connection refused: "+msg,
		append([]any{"client", cl.ID, "user", user(cl), "remote", cl.Net.Remote, "reason_code", fmt.Sprintf("%#x", code.Code)}, args...)...)
	if err := h.srv.SendConnack(cl, code, false, nil); err != nil {
		return errors.Join(code, err)
	}
	return code
}

// OnConnect authenticates the client and checks its Client ID and Will.
// The client is not visible to anyone yet; a refused CONNECT takes over no
// session.
func (h *securityHook) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	byFile := false
	if h.auth != nil {
		name, code, why := h.auth.authenticate(cl, pk)
		if code != packets.CodeSuccess {
			h.counts.authentication.Add(1)
			cl.Properties.Username = nil
			return h.refuse(cl, denyAuthentication, code, why)
		}
		cl.Properties.Username = []byte(name)
		if pk.Connect.ClientIdentifier == "" {
			// MQTT v5 §3.1.3.1: the server assigns the Client ID; here it is
			// the user name, as mosquitto's use_username_as_clientid does.
			cl.ID = name
			cl.Properties.Props.AssignedClientID = name
		}
		if cl.ID != name && !h.policy.file.mayUseClientID(name, cl.ID) {
			h.counts.clientID.Add(1)
			return h.refuse(cl, denyClientID, packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "the Client ID must be the user name"},
				"Client ID not allowed for the user")
		}
	}
	if pk.Connect.WillFlag {
		w := cl.Properties.Will
		if h.auth != nil {
			var ok bool
			if ok, byFile = h.policy.allows(user(cl), cl.ID, w.TopicName, opWrite); !ok {
				h.counts.will.Add(1)
				return h.refuse(cl, denyWill, packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "will topic not authorized"},
					"Will topic not authorized", "topic", w.TopicName)
			}
		}
		if h.reg != nil {
			if code := h.reg.checkWill(cl.ID, w, byFile); code != packets.CodeSuccess {
				h.counts.will.Add(1)
				return h.refuse(cl, denyWill, code, "Will refused by the registry", "topic", w.TopicName, "why", code.Reason)
			}
		}
	}
	return nil
}

// authenticate returns the user name of the client, or the reason code
// and log message of a refusal.
func (a *authn) authenticate(cl *mqtt.Client, pk packets.Packet) (string, packets.Code, string) {
	if cert := verifiedPeerCert(cl.Net.Conn); cert != nil {
		if cert.Subject.CommonName == "" {
			return "", packets.ErrNotAuthorized, "client certificate without a Common Name"
		}
		return cert.Subject.CommonName, packets.CodeSuccess, ""
	}
	if !pk.Connect.UsernameFlag || len(pk.Connect.Username) == 0 {
		return "", packets.ErrNotAuthorized, "anonymous client (no user name, no client certificate)"
	}
	if a.passwords == nil {
		return "", packets.ErrNotAuthorized, "no client certificate (this broker authenticates by certificate only)"
	}
	name := string(pk.Connect.Username)
	if !pk.Connect.PasswordFlag || !a.passwords.Verify(name, string(pk.Connect.Password)) {
		return "", packets.ErrBadUsernameOrPassword, "bad user name or password"
	}
	return name, packets.CodeSuccess, ""
}

// tlsStater is a connection that can report its TLS state: *tls.Conn and
// limitConn.
type tlsStater interface {
	tlsState() (tls.ConnectionState, bool)
}

// verifiedPeerCert returns the client certificate of a TLS connection when
// it was verified against the configured CAs, else nil.
func verifiedPeerCert(c net.Conn) *x509.Certificate {
	s, ok := c.(tlsStater)
	if !ok {
		return nil
	}
	st, ok := s.tlsState()
	if !ok || len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil
	}
	return st.PeerCertificates[0]
}

// OnConnectAuthenticate accepts the clients OnConnect authenticated (it
// runs after OnConnect, which refused the others).
func (h *securityHook) OnConnectAuthenticate(cl *mqtt.Client, _ packets.Packet) bool {
	return len(cl.Properties.Username) > 0
}

// OnACLCheck decides publishes (write) and deliveries (read); mochi also
// asks about each SUBSCRIBE filter, which OnSubscribe has already decided
// (a refused one is deniedFilter here).
func (h *securityHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	u := user(cl)
	if write {
		ok, _ := h.policy.allows(u, cl.ID, topic, opWrite)
		if !ok {
			h.counts.publish.Add(1)
			h.deny.warn(h.Log, denyPublish, cl.ID, "broker: publish refused: not authorized", "client", cl.ID, "user", u, "topic", topic)
		}
		return ok
	}
	if topic == deniedFilter {
		return false
	}
	o := opRead
	f, shared := splitShared(topic)
	switch {
	case shared:
		o = opSubscribeShared
	case strings.ContainsAny(f, "+#"):
		o = opSubscribe
	}
	ok, _ := h.policy.allows(u, cl.ID, f, o)
	if !ok && o == opRead {
		h.Log.Debug("broker: delivery withheld: not authorized", "client", cl.ID, "user", u, "topic", topic)
	}
	return ok
}

// OnSubscribe checks every filter of a SUBSCRIBE and replaces the refused
// ones by deniedFilter, which OnACLCheck refuses: mochi then answers 0x87
// for them (and, with the store fix, does not persist them).
func (h *securityHook) OnSubscribe(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if cl.Net.Inline {
		return pk
	}
	var filters packets.Subscriptions
	for i, sub := range pk.Filters {
		f, shared := splitShared(sub.Filter)
		o := opSubscribe
		if shared {
			o = opSubscribeShared
		}
		// A filter with + or # inside a level (which mochi lets through,
		// MQTT v5 §4.7.1 does not) is refused too.
		if ok, _ := h.policy.allows(user(cl), cl.ID, f, o); ok && validFilter(f) {
			continue
		}
		h.counts.subscribe.Add(1)
		h.deny.warn(h.Log, denySubscribe, cl.ID, "broker: subscription refused: not authorized", "client", cl.ID, "user", user(cl), "filter", sub.Filter)
		if filters == nil {
			filters = slices.Clone(pk.Filters)
		}
		filters[i].Filter = deniedFilter
	}
	if filters != nil {
		pk.Filters = filters
	}
	return pk
}

// OnPublish runs the registry on a publish to the discovery tree of the
// configured root (every topic beginning {root}/discovery/), once
// authorization (OnACLCheck) has let it through. A refusal is answered
// with its reason code at QoS 1 (PUBACK) and 2 (PUBREC), and the message
// is neither forwarded nor retained.
func (h *securityHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline || h.reg == nil || !h.reg.onDiscoveryTree(pk.TopicName) {
		return pk, nil
	}
	byFile := false
	if h.auth != nil {
		_, byFile = h.policy.allows(user(cl), cl.ID, pk.TopicName, opWrite)
	}
	code := h.reg.checkPublish(cl.ID, pk, byFile)
	if code == packets.CodeSuccess {
		return pk, nil
	}
	h.deny.warn(h.Log, denyCard, cl.ID, "broker: card refused", "client", cl.ID, "user", user(cl), "topic", pk.TopicName,
		"reason_code", fmt.Sprintf("%#x", code.Code), "why", code.Reason)
	switch pk.FixedHeader.Qos {
	case 0:
		return pk, packets.ErrRejectPacket
	case 1:
		return pk, code // mochi answers PUBACK with the code
	}
	// mochi would answer a QoS 2 refusal with a PUBACK: answer PUBREC
	// (MQTT v5 §3.5.2.1), which ends the exchange.
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, PacketID: pk.PacketID, ReasonCode: code.Code,
		Properties: packets.Properties{ReasonString: code.Reason}}
	if err := cl.WritePacket(ack); err != nil {
		return pk, err
	}
	return pk, packets.ErrRejectPacket
}

// checkTLSConfig refuses TLS settings that cannot work.
func checkTLSConfig(c *tls.Config) error {
	if c == nil {
		return nil
	}
	switch c.ClientAuth {
	case tls.RequestClientCert, tls.RequireAnyClientCert:
		return errors.New("broker: TLS.ClientAuth must verify client certificates (VerifyClientCertIfGiven or RequireAndVerifyClientCert), or not ask for them")
	}
	if len(c.Certificates) == 0 && c.GetCertificate == nil && c.GetConfigForClient == nil {
		return errors.New("broker: TLS has no server certificate")
	}
	return nil
}

// certAuth reports whether c authenticates clients by certificate.
func certAuth(c *tls.Config) bool {
	return c != nil && (c.ClientAuth == tls.VerifyClientCertIfGiven || c.ClientAuth == tls.RequireAndVerifyClientCert)
}

// authenticates reports whether cfg turns authentication on.
func (cfg *Config) authenticates() bool {
	return cfg.PasswordFile != "" || certAuth(cfg.TLS)
}

// registryOn reports whether cfg turns the validating registry on.
func (cfg *Config) registryOn() bool {
	return cfg.authenticates() || cfg.ValidateCards || len(cfg.TrustedJKU) > 0
}

// newSecurityHook reads the password and ACL files and builds the hook
// cfg asks for; nil when it asks for none.
func newSecurityHook(cfg *Config, srv *mqtt.Server, counts *denials, deny *denialLog) (*securityHook, error) {
	if err := checkTLSConfig(cfg.TLS); err != nil {
		return nil, err
	}
	if cfg.ACLFile != "" && !cfg.authenticates() {
		return nil, errors.New("broker: an ACL file needs authentication (a password file or TLS client certificates)")
	}
	if !cfg.registryOn() {
		return nil, nil
	}
	h := &securityHook{srv: srv, counts: counts, deny: deny}
	if cfg.authenticates() {
		h.auth = new(authn)
		if cfg.PasswordFile != "" {
			pw, err := ReadPasswordFile(cfg.PasswordFile)
			if err != nil {
				return nil, err
			}
			h.auth.passwords = pw
		}
		h.policy = &policy{root: cfg.Root}
		if cfg.ACLFile != "" {
			f, err := readACLFile(cfg.ACLFile)
			if err != nil {
				return nil, err
			}
			h.policy.file = f
		}
	}
	h.reg = newRegistry(cfg.Root, counts)
	h.reg.maxSize = orDefault(cfg.MaxCardSize, DefaultMaxCardSize)
	for _, p := range cfg.TrustedJKU {
		if p == "" {
			return nil, errors.New("broker: an empty trusted jku prefix would trust every jku")
		}
	}
	h.reg.trusted = slices.Clone(cfg.TrustedJKU)
	if n := orDefault(cfg.CardUpdatesPerMinute, DefaultCardUpdatesPerMinute); n > 0 {
		h.reg.rate = newRateLimiter(float64(n)/60, n, cfg.now)
	}
	return h, nil
}
