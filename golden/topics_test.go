package golden

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

func TestParseRoot(t *testing.T) {
	long := "a"
	for len(long) <= mqttbind.RootMaxLength {
		long += "/a"
	}
	cases := []struct {
		name, root string
		want       string // the root's String(), "" when refused
	}{
		{"empty is the profile's", "", "$a2a/v1"},
		{"the profile's root", "$a2a/v1", "$a2a/v1"},
		{"without the dollar", "a2a/v1", "a2a/v1"},
		{"one level", "a2a", "a2a"},
		{"tenant levels", "tenants/acme-corp/a2a/v1", "tenants/acme-corp/a2a/v1"},
		{"another dollar root", "$a2a/v2", "$a2a/v2"},
		{"leading separator", "/a2a/v1", ""},
		{"trailing separator", "a2a/v1/", ""},
		{"empty level", "a2a//v1", ""},
		{"single-level wildcard", "a2a/+", ""},
		{"multi-level wildcard", "a2a/#", ""},
		{"space", "a2a /v1", ""},
		{"dollar past the first level", "a2a/$v1", ""},
		{"shared subscription", "$share/g/a2a", ""},
		{"EMQX queue", "$queue/a2a", ""},
		{"broker statistics", "$SYS/a2a", ""},
		{"too long", long, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := mqttbind.ParseRoot(c.root)
			if c.want == "" {
				var re *mqttbind.RootError
				if !errors.As(err, &re) || re.Root != c.root || re.Reason == "" {
					t.Fatalf("ParseRoot(%q) = %v, %v; want a *RootError naming the root and a reason", c.root, r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRoot(%q): %v", c.root, err)
			}
			if got := r.String(); got != c.want {
				t.Fatalf("ParseRoot(%q).String() = %q, want %q", c.root, got, c.want)
			}
			if r.IsDefault() != (c.want == mqttbind.DefaultRoot) {
				t.Fatalf("ParseRoot(%q).IsDefault() = %v", c.root, r.IsDefault())
			}
		})
	}
}

func TestRootTopics(t *testing.T) {
	plain, err := mqttbind.ParseRoot("a2a/v1")
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := mqttbind.ParseRoot("tenants/acme/a2a")
	if err != nil {
		t.Fatal(err)
	}
	type built struct {
		name string
		got  func(r mqttbind.Root) (string, error)
		want map[string]string // root -> topic
	}
	cases := []built{
		{"discovery", func(r mqttbind.Root) (string, error) { return r.DiscoveryTopic("acme", "lab", "echo") },
			map[string]string{"$a2a/v1": "$a2a/v1/discovery/acme/lab/echo", "a2a/v1": "a2a/v1/discovery/acme/lab/echo", "tenants/acme/a2a": "tenants/acme/a2a/discovery/acme/lab/echo"}},
		{"discovery filter", func(r mqttbind.Root) (string, error) { return r.DiscoveryFilterTopic("acme", "lab") },
			map[string]string{"$a2a/v1": "$a2a/v1/discovery/acme/lab/+", "a2a/v1": "a2a/v1/discovery/acme/lab/+", "tenants/acme/a2a": "tenants/acme/a2a/discovery/acme/lab/+"}},
		{"request", func(r mqttbind.Root) (string, error) { return r.RequestTopic("acme", "lab", "echo") },
			map[string]string{"$a2a/v1": "$a2a/v1/request/acme/lab/echo", "a2a/v1": "a2a/v1/request/acme/lab/echo", "tenants/acme/a2a": "tenants/acme/a2a/request/acme/lab/echo"}},
		{"reply", func(r mqttbind.Root) (string, error) { return r.ReplyTopic("acme", "lab", "cli", "s1") },
			map[string]string{"$a2a/v1": "$a2a/v1/reply/acme/lab/cli/s1", "a2a/v1": "a2a/v1/reply/acme/lab/cli/s1", "tenants/acme/a2a": "tenants/acme/a2a/reply/acme/lab/cli/s1"}},
		{"event", func(r mqttbind.Root) (string, error) { return r.EventTopic("acme", "lab", "echo") },
			map[string]string{"$a2a/v1": "$a2a/v1/event/acme/lab/echo", "a2a/v1": "a2a/v1/event/acme/lab/echo", "tenants/acme/a2a": "tenants/acme/a2a/event/acme/lab/echo"}},
		{"pool request", func(r mqttbind.Root) (string, error) { return r.PoolRequestTopic("acme", "lab", "workers") },
			map[string]string{"$a2a/v1": "$a2a/v1/request/acme/lab/pool/workers", "a2a/v1": "a2a/v1/request/acme/lab/pool/workers", "tenants/acme/a2a": "tenants/acme/a2a/request/acme/lab/pool/workers"}},
		{"pool subscription", func(r mqttbind.Root) (string, error) { return r.PoolSubscriptionTopic("g", "acme", "lab", "workers") },
			map[string]string{"$a2a/v1": "$share/g/$a2a/v1/request/acme/lab/pool/workers", "a2a/v1": "$share/g/a2a/v1/request/acme/lab/pool/workers", "tenants/acme/a2a": "$share/g/tenants/acme/a2a/request/acme/lab/pool/workers"}},
	}
	for _, c := range cases {
		for _, r := range []mqttbind.Root{{}, plain, tenant} {
			t.Run(c.name+" under "+r.String(), func(t *testing.T) {
				got, err := c.got(r)
				if err != nil {
					t.Fatal(err)
				}
				if want := c.want[r.String()]; got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			})
		}
	}
	// The package-level builders are the zero Root's.
	if got, _ := mqttbind.RequestTopic("acme", "lab", "echo"); got != "$a2a/v1/request/acme/lab/echo" {
		t.Fatalf("RequestTopic = %q", got)
	}
	if _, err := plain.RequestTopic("acme", "lab", "a/b"); err == nil {
		t.Fatal("an identifier with / was accepted")
	}
}

func TestRootParse(t *testing.T) {
	plain, _ := mqttbind.ParseRoot("a2a/v1")
	cases := []struct {
		name  string
		root  mqttbind.Root
		topic string
		ok    bool
	}{
		{"profile topic under the profile root", mqttbind.Root{}, "$a2a/v1/discovery/acme/lab/echo", true},
		{"plain topic under the plain root", plain, "a2a/v1/discovery/acme/lab/echo", true},
		{"profile topic under the plain root", plain, "$a2a/v1/discovery/acme/lab/echo", false},
		{"plain topic under the profile root", mqttbind.Root{}, "a2a/v1/discovery/acme/lab/echo", false},
		{"one level too many", plain, "a2a/v1/discovery/acme/lab/echo/x", false},
		{"one level too few", plain, "a2a/v1/discovery/acme/lab", false},
		{"empty agent level", plain, "a2a/v1/discovery/acme/lab/", false},
		{"another kind", plain, "a2a/v1/request/acme/lab/echo", false},
		{"root without separator", plain, "a2a/v1discovery/acme/lab/echo", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			org, unit, agent, ok := c.root.ParseDiscoveryTopic(c.topic)
			if ok != c.ok {
				t.Fatalf("ParseDiscoveryTopic(%q) ok = %v, want %v", c.topic, ok, c.ok)
			}
			if ok && (org != "acme" || unit != "lab" || agent != "echo") {
				t.Fatalf("ParseDiscoveryTopic(%q) = %q %q %q", c.topic, org, unit, agent)
			}
		})
	}
	if org, unit, agent, suffix, ok := plain.ParseReplyTopic("a2a/v1/reply/acme/lab/cli/s1"); !ok || org != "acme" || unit != "lab" || agent != "cli" || suffix != "s1" {
		t.Fatalf("ParseReplyTopic = %q %q %q %q %v", org, unit, agent, suffix, ok)
	}
	if _, _, pool, ok := plain.ParsePoolRequestTopic("a2a/v1/request/acme/lab/pool/workers"); !ok || pool != "workers" {
		t.Fatalf("ParsePoolRequestTopic = %q %v", pool, ok)
	}
	if rest, ok := plain.Relative("a2a/v1/event/acme/lab/x"); !ok || rest != "event/acme/lab/x" {
		t.Fatalf("Relative = %q %v", rest, ok)
	}
	if w := plain.Wildcard(); w != "a2a/v1/#" {
		t.Fatalf("Wildcard = %q", w)
	}
	if n := testing.AllocsPerRun(100, func() { plain.ParseReplyTopic("a2a/v1/reply/acme/lab/cli/s1") }); n != 0 {
		t.Fatalf("ParseReplyTopic allocates %v times", n)
	}
}

func TestRootFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
		bad  bool
	}{
		{"default", nil, "$a2a/v1", false},
		{"set", []string{"-topic-root", "a2a/v1"}, "a2a/v1", false},
		{"refused", []string{"-topic-root", "a2a/#"}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("a2a", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var r mqttbind.Root
			fs.TextVar(&r, "topic-root", mqttbind.Root{}, "topic root")
			err := fs.Parse(c.args)
			if c.bad {
				if err == nil {
					t.Fatalf("flag accepted %v", c.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.String() != c.want {
				t.Fatalf("root %q, want %q", r, c.want)
			}
		})
	}
}
