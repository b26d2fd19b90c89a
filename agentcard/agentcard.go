// Package agentcard builds A2A Agent Cards (A2A v1.0 §8) with the members the
// specification requires filled in, and names the interface bindings a
// card lists.
//
// A valid card needs eight members (name, description, version,
// supportedInterfaces, capabilities, defaultInputModes, defaultOutputModes
// and at least one skill). New takes what only the agent's author knows
// (its name and where it is reached) and fills in the rest, then checks
// the result with the generated validator:
//
//	c, err := agentcard.New(agentcard.Config{
//		Name:       "Echo",
//		Interfaces: []a2a.AgentInterface{a2amqtt.Interface("mqtt://broker.example.com:1883")},
//	})
//
// The card is an ordinary *a2a.AgentCard: change any member afterwards
// (and call its Validate method again), and hand it to
// transport/mqtt.AgentConfig.Card or transport/http.HandlerConfig.Card.
// The guide, docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md),
// shows a whole agent.
package agentcard

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/a2abind/a2abind/generated/a2a"
)

// The protocolBinding strings of AgentInterface (AgentCard.supportedInterfaces):
// the three core bindings of A2A v1.0 (specification/a2a.proto,
// AgentInterface) and the binding of the A2A-over-MQTT profile
// (docs/protocol.md §11). a2abind serves BindingJSONRPC (transport/http)
// and BindingMQTT (transport/mqtt).
const (
	// BindingJSONRPC is the JSON-RPC 2.0 over HTTP binding (A2A v1.0 §9).
	BindingJSONRPC = "JSONRPC"
	// BindingHTTPJSON is the HTTP+JSON/REST binding (A2A v1.0 §11).
	BindingHTTPJSON = "HTTP+JSON"
	// BindingGRPC is the gRPC binding (A2A v1.0 §10).
	BindingGRPC = "GRPC"
	// BindingMQTT is the A2A-over-MQTT binding: JSON-RPC 2.0 over MQTT v5
	// (docs/protocol.md §11; the same string as the A2A-over-MQTT Python
	// SDK, so the two interoperate).
	BindingMQTT = "MQTTv5+JSONRPCv2"
	// ProtocolVersion is the A2A version a2abind serves, Major.Minor
	// (A2A v1.0 §3.6), AgentInterface.protocolVersion.
	ProtocolVersion = "1.0"
)

// Defaults New fills in.
const (
	// DefaultVersion is the agent's version when Config.Version is empty.
	DefaultVersion = "1.0.0"
	// DefaultMode is the media type of the default input and output modes
	// when Config.InputModes or Config.OutputModes is empty.
	DefaultMode = "text/plain"
)

// Interface returns the AgentInterface of an endpoint at url served with
// binding (one of the Binding constants, or another binding's string),
// protocol version ProtocolVersion. transport/mqtt.Interface and
// transport/http.JSONRPCInterface make the entries of a2abind's own
// bindings.
func Interface(binding, url string) a2a.AgentInterface {
	return a2a.AgentInterface{URL: url, ProtocolBinding: binding, ProtocolVersion: ProtocolVersion}
}

// Config is what New needs: Name and Interfaces; every other member has
// a default.
type Config struct {
	// Name is the agent's human-readable name (required).
	Name string
	// Description says what the agent does; the default is Name.
	Description string
	// Version is the agent's version; the default is DefaultVersion.
	Version string
	// Interfaces are where the agent is reached, the preferred first
	// (required: at least one; transport/mqtt.Interface,
	// transport/http.JSONRPCInterface or Interface).
	Interfaces []a2a.AgentInterface
	// Capabilities are the optional A2A features the agent serves. nil
	// means streaming only, which both transports of a2abind serve for
	// every agent.Server; set PushNotifications only for a server made
	// with agent.WithPush.
	Capabilities *a2a.AgentCapabilities
	// InputModes and OutputModes are the media types the agent accepts
	// and produces; each defaults to [DefaultMode].
	InputModes, OutputModes []string
	// Skills are the agent's skills; the default is one skill named after
	// the agent: its ID is Name in lower case with every run of other
	// characters than letters and digits made one "-" (the ID "agent"
	// when nothing is left), its description and its one tag those of
	// the agent.
	Skills []a2a.AgentSkill
	// Provider is the organization that runs the agent (optional).
	Provider *a2a.AgentProvider
	// DocumentationURL is where the agent's documentation is (optional).
	DocumentationURL string
}

// New returns the Agent Card cfg describes, with every required member
// the Config leaves empty filled in as its fields say. The card is checked
// against the A2A schema: an error names every member that is wrong (an
// empty skill tag, an interface without URL, ...) and wraps the
// *a2a.ValidationError. The card shares nothing with cfg.
func New(cfg Config) (*a2a.AgentCard, error) {
	if strings.TrimSpace(cfg.Name) == "" {
		return nil, errors.New("agentcard: Config.Name is required")
	}
	if len(cfg.Interfaces) == 0 {
		return nil, fmt.Errorf("agentcard: agent %q: Config.Interfaces is empty: list where the agent is reached "+
			"(transport/mqtt.Interface(brokerURL), transport/http.JSONRPCInterface(url))", cfg.Name)
	}
	c := &a2a.AgentCard{
		Name:                cfg.Name,
		Description:         or(cfg.Description, cfg.Name),
		Version:             or(cfg.Version, DefaultVersion),
		SupportedInterfaces: append([]a2a.AgentInterface(nil), cfg.Interfaces...),
		DefaultInputModes:   modes(cfg.InputModes),
		DefaultOutputModes:  modes(cfg.OutputModes),
	}
	if cfg.Capabilities != nil {
		c.Capabilities = cfg.Capabilities.Clone()
	} else {
		streaming := true
		c.Capabilities = &a2a.AgentCapabilities{Streaming: &streaming}
	}
	if cfg.Provider != nil {
		c.Provider = cfg.Provider.Clone()
	}
	if cfg.DocumentationURL != "" {
		u := cfg.DocumentationURL
		c.DocumentationURL = &u
	}
	if len(cfg.Skills) > 0 {
		for _, s := range cfg.Skills {
			c.Skills = append(c.Skills, *s.Clone())
		}
	} else {
		id := SkillID(cfg.Name)
		c.Skills = []a2a.AgentSkill{{ID: id, Name: cfg.Name, Description: c.Description, Tags: []string{id}}}
	}
	if err := c.Validate(); err != nil {
		var verr *a2a.ValidationError
		if errors.As(err, &verr) && len(verr.Violations) > 0 {
			msgs := make([]string, len(verr.Violations))
			for i, v := range verr.Violations {
				msgs[i] = v.String()
			}
			more := ""
			if verr.Omitted > 0 {
				more = fmt.Sprintf(" (and %d more)", verr.Omitted)
			}
			return nil, &Error{Agent: cfg.Name, Detail: strings.Join(msgs, "; ") + more, Err: err}
		}
		return nil, &Error{Agent: cfg.Name, Detail: err.Error(), Err: err}
	}
	return c, nil
}

// Error is New's error for a card that breaks the A2A schema. Detail
// lists every violation, as "pointer: rule: message"; Err is the
// validator's *a2a.ValidationError (errors.As reaches it).
type Error struct {
	// Agent is Config.Name.
	Agent string
	// Detail lists the violations.
	Detail string
	// Err is the validator's error.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("agentcard: agent %q: invalid Agent Card: %s", e.Agent, e.Detail)
}

// Unwrap returns the validator's error.
func (e *Error) Unwrap() error { return e.Err }

// SkillID makes a skill id of a name, as New does for its default skill:
// lower case, every run of other characters than letters and digits made
// one "-", none at either end; "agent" when nothing is left.
func SkillID(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "agent"
	}
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func modes(m []string) []string {
	if len(m) == 0 {
		return []string{DefaultMode}
	}
	return append([]string(nil), m...)
}
