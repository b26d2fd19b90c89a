package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
)

// WellKnownCardPath is where the public Agent Card is served (A2A v1.0
// §8.2, §14.3).
const WellKnownCardPath = "/.well-known/agent-card.json"

// The interface this package serves, as an Agent Card declares it.
const (
	// ProtocolBindingJSONRPC is AgentInterface.protocolBinding of the
	// JSON-RPC binding (A2A v1.0 specification/a2a.proto, AgentInterface).
	// It is agentcard.BindingJSONRPC.
	ProtocolBindingJSONRPC = agentcard.BindingJSONRPC
	// ProtocolVersion is the A2A version served, Major.Minor (A2A v1.0
	// §3.6), agentcard.ProtocolVersion.
	ProtocolVersion = agentcard.ProtocolVersion
)

// JSONRPCInterface returns the AgentInterface of a JSON-RPC endpoint at
// url (for example "https://agent.example.com/a2a"), protocol version 1.0,
// for AgentCard.SupportedInterfaces. An agent that is also served over
// MQTT (package transport/mqtt) lists that interface in the same card,
// transport/mqtt.Interface("mqtt://host:port"), whose binding is
// agentcard.BindingMQTT, the preferred interface first (A2A v1.0 §8.3.1).
func JSONRPCInterface(url string) a2a.AgentInterface {
	return a2a.AgentInterface{URL: url, ProtocolBinding: ProtocolBindingJSONRPC, ProtocolVersion: ProtocolVersion}
}

// card is an Agent Card ready to serve.
type card struct {
	json []byte
	etag string
	caps *a2a.AgentCapabilities
}

// cardState holds the card being served; UpdateCard replaces it.
type cardState struct{ p atomic.Pointer[card] }

func (c *cardState) load() *card { return c.p.Load() }

// UpdateCard replaces the Agent Card: later requests for it, and the
// capability checks of later calls, see the new one. The card must be fit
// as HandlerConfig.Card says; an unfit card is refused and the old one
// kept.
func (h *Handler) UpdateCard(c *a2a.AgentCard) error {
	if c == nil {
		return errors.New("http: an Agent Card is required (HandlerConfig.Card)")
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("http: agent card: %w", err)
	}
	hasJSONRPC := false
	for _, i := range c.SupportedInterfaces {
		if i.ProtocolBinding == ProtocolBindingJSONRPC {
			hasJSONRPC = true
		}
	}
	if !hasJSONRPC {
		return errors.New("http: agent card: supportedInterfaces lists no JSONRPC interface (add JSONRPCInterface(url))")
	}
	if err := h.srv.CheckCard(c); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	caps := c.Capabilities
	b, err := c.MarshalJSON()
	if err != nil {
		return fmt.Errorf("http: agent card: %w", err)
	}
	sum := sha256.Sum256(b)
	h.card.p.Store(&card{json: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, caps: caps.Clone()})
	return nil
}

// CardHandler returns the handler of the public Agent Card, to mount at
// WellKnownCardPath (Register does). It answers GET and HEAD with the card
// as application/json, a Cache-Control max-age and an ETag derived from
// the card's content (A2A v1.0 §8.6.1; If-None-Match is answered 304),
// and any other method with 405.
func (h *Handler) CardHandler() http.Handler {
	return http.HandlerFunc(h.serveCard)
}

func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the Agent Card is read with GET", http.StatusMethodNotAllowed)
		return
	}
	c := h.card.load()
	hd := w.Header()
	hd["Content-Type"] = contentJSON
	hd.Set("Etag", c.etag)
	if h.cardMaxAge < 0 {
		hd["Cache-Control"] = cacheNoCache
	} else {
		hd.Set("Cache-Control", "max-age="+strconv.Itoa(int(h.cardMaxAge/time.Second)))
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(c.json))
}
