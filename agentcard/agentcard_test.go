package agentcard_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
)

var mqttIface = agentcard.Interface(agentcard.BindingMQTT, "mqtt://broker.example.com:1883")

func TestNewFillsTheRequiredMembers(t *testing.T) {
	c, err := agentcard.New(agentcard.Config{Name: "Recipe Agent", Interfaces: []a2a.AgentInterface{mqttIface}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the card New returned is invalid: %v", err)
	}
	streaming := true
	want := &a2a.AgentCard{
		Name: "Recipe Agent", Description: "Recipe Agent", Version: agentcard.DefaultVersion,
		SupportedInterfaces: []a2a.AgentInterface{{URL: "mqtt://broker.example.com:1883", ProtocolBinding: "MQTTv5+JSONRPCv2", ProtocolVersion: "1.0"}},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &streaming},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "recipe-agent", Name: "Recipe Agent", Description: "Recipe Agent", Tags: []string{"recipe-agent"}}},
	}
	if !reflect.DeepEqual(c, want) {
		got, _ := json.Marshal(c)
		exp, _ := json.Marshal(want)
		t.Fatalf("card\n got %s\nwant %s", got, exp)
	}
}

func TestNewKeepsWhatIsGiven(t *testing.T) {
	push := true
	cfg := agentcard.Config{
		Name: "Worker", Description: "Does work", Version: "2.3.4",
		Interfaces:   []a2a.AgentInterface{agentcard.Interface(agentcard.BindingJSONRPC, "https://w.example.com/a2a"), mqttIface},
		Capabilities: &a2a.AgentCapabilities{PushNotifications: &push},
		InputModes:   []string{"application/json"}, OutputModes: []string{"image/png", "text/plain"},
		Skills:           []a2a.AgentSkill{{ID: "work", Name: "Work", Description: "Works", Tags: []string{"w"}}},
		Provider:         &a2a.AgentProvider{Organization: "Acme", URL: "https://acme.example.com"},
		DocumentationURL: "https://acme.example.com/docs",
	}
	c, err := agentcard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"description", c.Description, "Does work"},
		{"version", c.Version, "2.3.4"},
		{"interfaces in order", c.SupportedInterfaces, cfg.Interfaces},
		{"capabilities", c.Capabilities, cfg.Capabilities},
		{"input modes", c.DefaultInputModes, []string{"application/json"}},
		{"output modes", c.DefaultOutputModes, []string{"image/png", "text/plain"}},
		{"skills", c.Skills, cfg.Skills},
		{"provider", c.Provider, cfg.Provider},
		{"documentation", *c.DocumentationURL, "https://acme.example.com/docs"},
	}
	for _, k := range checks {
		if !reflect.DeepEqual(k.got, k.want) {
			t.Errorf("%s: got %v, want %v", k.name, k.got, k.want)
		}
	}

	// The card shares nothing with the Config.
	cfg.Interfaces[0].URL = "changed"
	cfg.InputModes[0] = "changed"
	cfg.Skills[0].Tags[0] = "changed"
	*cfg.Capabilities.PushNotifications = false
	cfg.Provider.Organization = "changed"
	if c.SupportedInterfaces[0].URL == "changed" || c.DefaultInputModes[0] == "changed" || c.Skills[0].Tags[0] == "changed" ||
		!*c.Capabilities.PushNotifications || c.Provider.Organization == "changed" {
		t.Fatalf("changing the Config changed the card: %+v", c)
	}
}

func TestNewRefusesWithClearErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  agentcard.Config
		// want are substrings of the error; invalid says it is a schema
		// violation (a *agentcard.Error wrapping *a2a.ValidationError).
		want    []string
		invalid bool
	}{
		{"no name", agentcard.Config{Interfaces: []a2a.AgentInterface{mqttIface}}, []string{"Config.Name is required"}, false},
		{"a blank name", agentcard.Config{Name: "  ", Interfaces: []a2a.AgentInterface{mqttIface}}, []string{"Config.Name is required"}, false},
		{"no interface", agentcard.Config{Name: "Echo"}, []string{`agent "Echo"`, "Config.Interfaces is empty", "transport/mqtt.Interface"}, false},
		{"an interface without URL", agentcard.Config{Name: "Echo", Interfaces: []a2a.AgentInterface{agentcard.Interface(agentcard.BindingMQTT, "")}},
			[]string{`agent "Echo": invalid Agent Card`, "/supportedInterfaces/0/url: minLength: must not be empty"}, true},
		{"every violation listed", agentcard.Config{Name: "Echo", Interfaces: []a2a.AgentInterface{{URL: "mqtt://b"}}, Skills: []a2a.AgentSkill{{ID: "e", Name: "E", Description: "e"}}},
			[]string{"/skills/0/tags: required", "/supportedInterfaces/0/protocolBinding", "/supportedInterfaces/0/protocolVersion"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := agentcard.New(c.cfg)
			if err == nil {
				t.Fatalf("no error; card %+v", got)
			}
			if got != nil {
				t.Errorf("a card came with the error: %+v", got)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var cerr *agentcard.Error
			var verr *a2a.ValidationError
			if c.invalid != errors.As(err, &cerr) || c.invalid != errors.As(err, &verr) {
				t.Errorf("error %T: *agentcard.Error %v, *a2a.ValidationError %v; want both %v", err, errors.As(err, &cerr), errors.As(err, &verr), c.invalid)
			}
		})
	}
}

func TestSkillID(t *testing.T) {
	cases := []struct{ name, want string }{
		{"Echo", "echo"},
		{"Recipe Agent", "recipe-agent"},
		{"  --Shout  it!--", "shout-it"},
		{"v2.0 planner", "v2-0-planner"},
		{"Über Agent", "über-agent"},
		{"!!!", "agent"},
		{"", "agent"},
	}
	for _, c := range cases {
		if got := agentcard.SkillID(c.name); got != c.want {
			t.Errorf("SkillID(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestInterfaceUsesTheBindingAndVersion(t *testing.T) {
	for _, b := range []string{agentcard.BindingJSONRPC, agentcard.BindingHTTPJSON, agentcard.BindingGRPC, agentcard.BindingMQTT} {
		i := agentcard.Interface(b, "https://x.example.com")
		if i.ProtocolBinding != b || i.ProtocolVersion != "1.0" || i.URL != "https://x.example.com" {
			t.Errorf("Interface(%q): %+v", b, i)
		}
		if err := i.Validate(); err != nil {
			t.Errorf("Interface(%q) invalid: %v", b, err)
		}
	}
}
