package agent

import (
	"slices"

	"github.com/a2abind/a2abind/generated/a2a"
)

// LimitsExtensionURI identifies the agent card extension in which an agent
// publishes its limits (docs/protocol.md §14). A2A v1.0 §3.4.1 and the MQTT
// profile ask an agent to document its context expiry in its card; an
// AgentExtension (capabilities.extensions) is the card's place for what
// A2A does not define, and its params carry the figures in a form a
// requester can read.
const LimitsExtensionURI = "https://github.com/a2abind/a2abind/blob/main/docs/protocol.md#14-limits-and-expiries"

// LimitsExtension returns the card extension that publishes the server's
// limits. Its params:
//
//   - maxRequestBytes: the largest request payload (WithMaxRequestBytes);
//   - maxMessageParts: the most parts of one message (WithMaxParts);
//   - idleExpirySeconds: how long a context, and a task waiting for input
//     or authentication, may stay idle before it expires (WithContextTTL);
//     0 when they never expire.
//
// The extension is not required: a requester that does not know it loses
// nothing but the figures.
func (s *Server) LimitsExtension() a2a.AgentExtension {
	return a2a.AgentExtension{
		URI: LimitsExtensionURI,
		Description: "Limits of this agent: a request of at most maxRequestBytes bytes, at most maxMessageParts parts per message; " +
			"a context, and a task waiting for input or authentication, expire after idleExpirySeconds without activity (0: never), " +
			"and a message to such a task is then answered context_expired.",
		Params: map[string]any{
			"maxRequestBytes":   s.limits.MaxRequestBytes,
			"maxMessageParts":   s.limits.MaxParts,
			"idleExpirySeconds": int64(s.contextTTL.Seconds()),
		},
	}
}

// PublishLimits adds the server's LimitsExtension to card's capabilities,
// replacing an earlier one with the same URI.
func (s *Server) PublishLimits(card *a2a.AgentCard) {
	if card.Capabilities == nil {
		card.Capabilities = &a2a.AgentCapabilities{}
	}
	ext := s.LimitsExtension()
	exts := slices.DeleteFunc(slices.Clone(card.Capabilities.Extensions), func(e a2a.AgentExtension) bool { return e.URI == ext.URI })
	card.Capabilities.Extensions = append(exts, ext)
}
