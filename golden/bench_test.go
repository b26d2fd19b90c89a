package golden

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/a2abind/a2abind/generated/a2a"
)

// The generated code's benchmarks, side by side in one run: a realistic
// 2 KiB Agent Card and a SendMessage request, checked by the generated code,
// by a JSON Schema engine on the same schemas, and decoded by encoding/json
// into plain structs and into the official Go SDK's types. Figures and the
// command that produced them are in docs/benchmarks.md.

func benchInput(b *testing.B, name string) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "bench", name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

var (
	benchOnce    sync.Once
	benchSchemas map[string]*jsonschema.Schema
	benchErr     error
)

// benchSchema compiles a type of schema/a2a with the engine.
func benchSchema(b *testing.B, name string) *jsonschema.Schema {
	b.Helper()
	benchOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		c.AssertContent()
		files, err := filepath.Glob("../schema/a2a/*.json")
		if err != nil {
			benchErr = err
			return
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				benchErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				benchErr = err
				return
			}
			if err := c.AddResource("https://a2abind.dev/schema/a2a/"+filepath.Base(f), doc); err != nil {
				benchErr = err
				return
			}
		}
		benchSchemas = map[string]*jsonschema.Schema{}
		for _, ref := range []string{"agentcard.json#/$defs/AgentCard", "methods.json#/$defs/SendMessageRequest"} {
			s, err := c.Compile("https://a2abind.dev/schema/a2a/" + ref)
			if err != nil {
				benchErr = err
				return
			}
			benchSchemas[ref[strings.Index(ref, "$defs/")+6:]] = s
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSchemas[name]
}

// plain structs: what encoding/json costs with no custom code at all.
type plainCard struct {
	Name                string `json:"name"`
	Description         string `json:"description"`
	SupportedInterfaces []struct {
		URL, ProtocolBinding, ProtocolVersion, Tenant string
	} `json:"supportedInterfaces"`
	Provider *struct {
		URL          string `json:"url"`
		Organization string `json:"organization"`
	} `json:"provider"`
	Version          string `json:"version"`
	DocumentationURL string `json:"documentationUrl"`
	Capabilities     struct {
		Streaming, PushNotifications, ExtendedAgentCard *bool
		Extensions                                      []struct {
			URI         string         `json:"uri"`
			Description string         `json:"description"`
			Required    bool           `json:"required"`
			Params      map[string]any `json:"params"`
		} `json:"extensions"`
	} `json:"capabilities"`
	SecuritySchemes      map[string]map[string]any    `json:"securitySchemes"`
	SecurityRequirements []map[string]map[string]any  `json:"securityRequirements"`
	DefaultInputModes    []string                     `json:"defaultInputModes"`
	DefaultOutputModes   []string                     `json:"defaultOutputModes"`
	Skills               []map[string]json.RawMessage `json:"skills"`
	IconURL              string                       `json:"iconUrl"`
}

func BenchmarkAgentCard(b *testing.B) {
	data := benchInput(b, "agentcard.json")
	a2agoData := benchInput(b, "agentcard-a2ago.json")
	sch := benchSchema(b, "AgentCard")
	var card a2a.AgentCard
	if err := json.Unmarshal(data, &card); err != nil {
		b.Fatal(err)
	}
	if err := card.Validate(); err != nil {
		b.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		b.Fatal(err)
	}

	b.Run("generated/Validate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := card.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema/Validate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := sch.Validate(inst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/ValidateAgentCardJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := a2a.ValidateAgentCardJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema/DecodeAndValidate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var c a2a.AgentCard
			if err := c.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json/PlainStructs", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var c plainCard
			if err := json.Unmarshal(data, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	// a2a-go v2.3.1 cannot read the ProtoJSON securityRequirements form, so
	// it gets the same card with its own form (18 bytes shorter).
	b.Run("encoding_json/A2AGoTypes", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(a2agoData)))
		for b.Loop() {
			var c a2ago.AgentCard
			if err := json.Unmarshal(a2agoData, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := card.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSendMessageRequest(b *testing.B) {
	data := benchInput(b, "sendmessage.json")
	sch := benchSchema(b, "SendMessageRequest")
	var req a2a.SendMessageRequest
	if err := json.Unmarshal(data, &req); err != nil {
		b.Fatal(err)
	}
	if err := req.Validate(); err != nil {
		b.Fatal(err)
	}
	b.Run("generated/ValidateSendMessageRequestJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := a2a.ValidateSendMessageRequestJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema/DecodeAndValidate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json/A2AGoTypes", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var r a2ago.SendMessageRequest
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated/Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := req.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
