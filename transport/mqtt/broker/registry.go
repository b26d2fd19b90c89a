package broker

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/schemaerr"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Defaults of the validating registry (see Config).
const (
	// DefaultMaxCardSize is the default of Config.MaxCardSize: 64 KiB, as
	// EMQX's A2A registry.
	DefaultMaxCardSize = 64 << 10
	// DefaultCardUpdatesPerMinute is the default of
	// Config.CardUpdatesPerMinute: 10 per agent, as EMQX's A2A registry.
	DefaultCardUpdatesPerMinute = 10
)

// Reason codes of the registry's refusals. MQTT v5 §3.4.2.1 allows a
// PUBACK 0x87 (not authorized), 0x90 (topic name invalid), 0x97 (quota
// exceeded) and 0x99 (payload format invalid), not 0x95 (packet too
// large) nor 0x96 (message rate too high), which are DISCONNECT codes: an
// oversized or too frequent card is answered 0x97 with a Reason String
// that says which limit. A Will is checked in CONNECT, whose CONNACK may
// say 0x95 (§3.2.2.2). The refusal of a topic on the discovery tree that
// is not a discovery topic names the template under the configured root
// (notDiscovery).
var (
	codeOtherAgent = packets.Code{Code: packets.ErrNotAuthorized.Code,
		Reason: "a card goes on the publisher's own discovery topic (Client ID {org_id}/{unit_id}/{agent_id})"}
	codeCardTooLarge     = packets.Code{Code: packets.ErrQuotaExceeded.Code, Reason: "card larger than the registry's limit"}
	codeWillTooLarge     = packets.Code{Code: packets.ErrPacketTooLarge.Code, Reason: "will card larger than the registry's limit"}
	codeCardRate         = packets.Code{Code: packets.ErrQuotaExceeded.Code, Reason: "card updates too frequent for the registry"}
	codeUntrustedCard    = packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "no card signature whose protected header has a trusted jku"}
	codeStatusRepeated   = packets.Code{Code: packets.ErrPayloadFormatInvalid.Code, Reason: "a2a-status or a2a-status-source more than once"}
	codeWillOnline       = packets.Code{Code: packets.ErrPayloadFormatInvalid.Code, Reason: "a Will with a2a-status=online"}
	codeSourceNotAgent   = packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "a client publishes a2a-status-source=agent only (lwt is its Will's, broker the broker's)"}
	codeWillSourceNotLWT = packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "a Will carries a2a-status-source=lwt only"}
)

// registry validates registrations: the cards published on discovery
// topics and the cards of Wills (see the package documentation and
// docs/protocol.md §13.5). Its discovery topics are those under the
// configured topic root (docs/protocol.md §1.5): a publish under another
// root, the profile's $a2a/v1 on a broker configured with a2a/v1 or the
// reverse, is no registration here and is not checked.
type registry struct {
	// root is the topic root (Config.Root); discovery its discoveryPrefix,
	// the discovery tree the registry checks.
	root      mqttbind.Root
	discovery string
	// notDiscovery refuses a topic on the discovery tree that is not a
	// discovery topic, naming the template under root.
	notDiscovery packets.Code

	maxSize int
	rate    *rateLimiter // per discovery topic; nil: no limit
	trusted []string     // jku prefixes; empty: signatures not required
	counts  *denials

	// accepted remembers, under the rate limit, the card last accepted
	// on each discovery topic (see sameCard).
	accepted acceptedCards
}

// newRegistry returns a registry of the discovery topics under root; the
// caller sets the limits.
func newRegistry(root mqttbind.Root, counts *denials) *registry {
	return &registry{
		root:      root,
		discovery: discoveryPrefix(root),
		notDiscovery: packets.Code{Code: packets.ErrTopicNameInvalid.Code,
			Reason: "not a discovery topic " + root.String() + strings.TrimPrefix(mqttbind.DiscoveryTemplate, mqttbind.DefaultRoot)},
		counts: counts,
	}
}

// onDiscoveryTree reports whether topic is one the registry checks: on the
// discovery tree of its root, {root}/discovery/...
func (r *registry) onDiscoveryTree(topic string) bool {
	return strings.HasPrefix(topic, r.discovery)
}

// checkPublish checks a PUBLISH on the discovery tree.
func (r *registry) checkPublish(clientID string, pk packets.Packet, byFile bool) packets.Code {
	return r.check(clientID, pk.TopicName, pk.Payload, pk.Properties.User, false, byFile)
}

// checkWill checks a Will, at CONNECT; a Will off the discovery tree is
// not the registry's.
func (r *registry) checkWill(clientID string, w mqtt.Will, byFile bool) packets.Code {
	if !r.onDiscoveryTree(w.TopicName) {
		return packets.CodeSuccess
	}
	return r.check(clientID, w.TopicName, w.Payload, w.User, true, byFile)
}

// check applies the registry's rules in order: the topic, its owner, the
// status properties, then (for a card, not an unregistration) its size,
// its content and the update rate (publishes only: only cards that pass
// everything else count as updates, and a card byte for byte the one last
// accepted on its topic is no update: see acceptedCards). byFile says that
// the ACL file, not the identity rules, lets the client publish there: the
// owner rule is then the operator's.
func (r *registry) check(clientID, topic string, payload []byte, user []packets.UserProperty, will, byFile bool) packets.Code {
	org, unit, agent, ok := r.root.ParseDiscoveryTopic(topic)
	if !ok {
		r.counts.card.Add(1)
		return r.notDiscovery
	}
	if !byFile && org+"/"+unit+"/"+agent != clientID {
		r.counts.card.Add(1)
		return codeOtherAgent
	}
	if code := checkStatusProps(user, will); code != packets.CodeSuccess {
		r.counts.card.Add(1)
		return code
	}
	if len(payload) == 0 {
		if !will && r.rate != nil {
			// The next card is a registration again.
			r.accepted.forget(topic)
		}
		return packets.CodeSuccess // unregistration (MQTT v5 §3.3.1.3), not rate limited
	}
	if len(payload) > r.maxSize {
		r.counts.cardSize.Add(1)
		if will {
			return codeWillTooLarge
		}
		return codeCardTooLarge
	}
	if code := r.checkCard(payload); code != packets.CodeSuccess {
		r.counts.card.Add(1)
		return code
	}
	if !will && r.rate != nil {
		sum := sha256.Sum256(payload)
		if r.accepted.same(topic, sum) {
			return packets.CodeSuccess // a republish, not an update
		}
		if !r.rate.allow(topic) {
			r.counts.cardRate.Add(1)
			return codeCardRate
		}
		r.accepted.remember(topic, sum)
	}
	return packets.CodeSuccess
}

// acceptedCards remembers the SHA-256 of the card last accepted on each
// discovery topic, so that a republish of that card byte for byte (an
// agent reconnecting announces its card again, docs/protocol.md §3.1
// phase 3; a Close republishes it offline) takes no token of
// CardUpdatesPerMinute: it changes nothing subscribers know but the
// status properties. An unregistration forgets the topic. The memory is
// bounded: topics are kept by their hash too (64 bytes an entry), at most
// maxRateKeys of them, the bound of the rate limiter's table; past it, one
// remembered topic is forgotten, whose next republish then counts as an
// update, as it would without this memory.
type acceptedCards struct {
	mu    sync.Mutex
	cards map[[sha256.Size]byte][sha256.Size]byte // topic's hash → card's hash
}

func (a *acceptedCards) same(topic string, card [sha256.Size]byte) bool {
	key := sha256.Sum256([]byte(topic))
	a.mu.Lock()
	defer a.mu.Unlock()
	last, ok := a.cards[key]
	return ok && last == card
}

func (a *acceptedCards) remember(topic string, card [sha256.Size]byte) {
	key := sha256.Sum256([]byte(topic))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cards == nil {
		a.cards = make(map[[sha256.Size]byte][sha256.Size]byte)
	}
	if _, ok := a.cards[key]; !ok && len(a.cards) >= maxRateKeys {
		for k := range a.cards {
			delete(a.cards, k)
			break
		}
	}
	a.cards[key] = card
}

func (a *acceptedCards) forget(topic string) {
	key := sha256.Sum256([]byte(topic))
	a.mu.Lock()
	delete(a.cards, key)
	a.mu.Unlock()
}

// checkStatusProps applies the status rules (docs/protocol.md §13.5): at
// most one a2a-status (online or offline; offline in a Will) and one
// a2a-status-source, which a client may set to agent only and a Will to
// lwt only; broker is the broker's (§3.2).
func checkStatusProps(user []packets.UserProperty, will bool) packets.Code {
	var status, source []string
	for _, p := range user {
		switch p.Key {
		case mqttbind.PropStatus:
			status = append(status, p.Val)
		case mqttbind.PropStatusSource:
			source = append(source, p.Val)
		}
	}
	if len(status) > 1 || len(source) > 1 {
		return codeStatusRepeated
	}
	if len(status) == 1 {
		if err := mqttbind.CheckProperty(mqttbind.PropStatus, status[0]); err != nil {
			return packets.Code{Code: packets.ErrPayloadFormatInvalid.Code, Reason: "a2a-status is neither online nor offline"}
		}
		if will && status[0] == mqttbind.StatusOnline {
			return codeWillOnline
		}
	}
	if len(source) == 1 {
		switch {
		case will && source[0] != mqttbind.StatusSourceLWT:
			return codeWillSourceNotLWT
		case !will && source[0] != mqttbind.StatusSourceAgent:
			return codeSourceNotAgent
		}
	}
	return packets.CodeSuccess
}

// checkCard validates a card with the generated validator and, under a
// trusted-JWKS policy, looks for a signature with a trusted jku. The
// reason it gives names where the card breaks the schema (JSON pointer
// and rule), never a value of the card.
func (r *registry) checkCard(payload []byte) packets.Code {
	if len(r.trusted) == 0 {
		if err := a2a.ValidateAgentCardJSON(payload); err != nil {
			return invalidCard(err)
		}
		return packets.CodeSuccess
	}
	card, err := a2a.ParseAgentCardJSON(payload)
	if err != nil {
		return invalidCard(err)
	}
	for _, sig := range card.Signatures {
		if jku, ok := protectedJKU(sig.Protected); ok && trustedJKU(jku, r.trusted) {
			return packets.CodeSuccess
		}
	}
	return codeUntrustedCard
}

// invalidCard turns a validation error into a 0x99 with a reason that
// quotes nothing of the card.
func invalidCard(err error) packets.Code {
	reason := "not a valid Agent Card"
	var verr *schemaerr.ValidationError
	var serr *schemaerr.SyntaxError
	switch {
	case errors.As(err, &verr) && len(verr.Violations) > 0:
		v := verr.Violations[0]
		p := v.Pointer
		if p == "" {
			p = "(document)"
		}
		if len(p) > 128 {
			p = p[:128] + "…"
		}
		reason += ": " + p + ": " + v.Rule
		if n := verr.Total() - 1; n > 0 {
			reason += " (and " + strconv.Itoa(n) + " more)"
		}
	case errors.As(err, &serr):
		reason += ": not JSON (offset " + strconv.Itoa(serr.Offset) + ")"
	}
	return packets.Code{Code: packets.ErrPayloadFormatInvalid.Code, Reason: reason}
}

// protectedJKU returns the jku of a JWS protected header (base64url of a
// JSON object, RFC 7515 §4.1.2, §7.2.1).
func protectedJKU(protected string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(protected, "="))
	if err != nil {
		return "", false
	}
	var h struct {
		JKU string `json:"jku"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || h.JKU == "" {
		return "", false
	}
	return h.JKU, true
}

// trustedJKU reports whether jku starts with one of the prefixes, at a
// boundary: the prefix ends with "/", or jku ends there or goes on with
// "/", "?" or "#" (so https://keys.example.com does not trust
// https://keys.example.com.evil.example/).
func trustedJKU(jku string, prefixes []string) bool {
	for _, p := range prefixes {
		if p == "" || !strings.HasPrefix(jku, p) {
			continue
		}
		if len(jku) == len(p) || strings.HasSuffix(p, "/") || strings.ContainsRune("/?#", rune(jku[len(p)])) {
			return true
		}
	}
	return false
}
