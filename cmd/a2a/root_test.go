package main

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/presence"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// The tests of the topic root (docs/protocol.md §1.5): --topic-root and
// $A2A_TOPIC_ROOT on a2a agent, send, watch, broker and demo.

func init() {
	// The tests set it themselves; a developer's own must not leak in.
	os.Unsetenv(envTopicRoot)
}

// rawWatch is a raw MQTT v5 subscriber (no a2abind client) that records
// the topics it receives.
type rawWatch struct {
	c      *paho.Client
	mu     sync.Mutex
	topics []string
	props  map[string][]paho.UserProperty
}

// dialRawWatch connects to addr and subscribes each filter in turn, one
// SUBSCRIBE each.
func dialRawWatch(t *testing.T, addr string, filters ...string) *rawWatch {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	w := &rawWatch{props: map[string][]paho.UserProperty{}}
	w.c = paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			w.mu.Lock()
			w.topics = append(w.topics, pr.Packet.Topic)
			if pr.Packet.Properties != nil {
				w.props[pr.Packet.Topic] = pr.Packet.Properties.User
			}
			w.mu.Unlock()
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.c.Connect(ctx, &paho.Connect{ClientID: "raw-root-watch", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.c.Disconnect(&paho.Disconnect{})
		<-w.c.Done()
	})
	for _, f := range filters {
		if sa, err := w.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: f, QoS: 1}}}); err != nil || sa.Reasons[0] >= 0x80 {
			t.Fatalf("subscribing %s: %v %v", f, sa, err)
		}
	}
	return w
}

// waitTopic waits until the subscriber has received a message on topic,
// and returns every topic received until then.
func (w *rawWatch) waitTopic(t *testing.T, topic string) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		w.mu.Lock()
		got := append([]string(nil), w.topics...)
		w.mu.Unlock()
		for _, g := range got {
			if g == topic {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message on %s; received %v", topic, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTopicRootAgentSendWatch: on mosquitto, a2a agent, send and watch
// under the root a2a/v1, given by --topic-root or by $A2A_TOPIC_ROOT:
// the send is answered, the watch sees the agent and prints its filter
// under the root, a raw subscriber finds the card on
// a2a/v1/discovery/... and nothing under $a2a, and each command notes once
// on stderr that the root is outside the profile.
func TestTopicRootAgentSendWatch(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartMosquitto(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flag", nil, []string{"--topic-root", "a2a/v1"}},
		{"environment", []string{envTopicRoot + "=a2a/v1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			unit := "root-" + c.name
			// with puts the case's flags right after the command name,
			// before any message text.
			with := func(args ...string) []string {
				return append(append([]string{args[0]}, c.args...), args[1:]...)
			}
			ag := startEnv(t, c.env, with("agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")...)
			ag.waitFor(t, "online")
			from := "--topic-root"
			if c.env != nil {
				from = "$" + envTopicRoot
			}
			note := "a2a agent: note: topic root a2a/v1 (" + from + ") is outside the A2A-over-MQTT profile"
			if n := strings.Count(ag.output(), note); n != 1 {
				t.Errorf("the agent's note %d times, want once:\n%s", n, ag.output())
			}

			raw := dialRawWatch(t, b.Addr(), "$a2a/#", "a2a/v1/discovery/acme/"+unit+"/+")
			got := raw.waitTopic(t, "a2a/v1/discovery/acme/"+unit+"/echo")
			for _, topic := range got {
				if !strings.HasPrefix(topic, "a2a/v1/discovery/acme/"+unit+"/") {
					t.Errorf("a message on %s: every topic of the agent must be under a2a/v1", topic)
				}
			}

			w := startEnv(t, c.env, with("watch", "--broker", b.URL(), "--org", "acme", "--unit", unit)...)
			w.waitFor(t, "watching a2a/v1/discovery/acme/"+unit+"/+")
			w.waitFor(t, "agent=echo status=online source=agent")
			if !strings.Contains(w.output(), "a2a watch: note: topic root a2a/v1") {
				t.Errorf("no note from the watch:\n%s", w.output())
			}

			r := runCLI(t, append([]string{"XDG_STATE_HOME=" + t.TempDir()}, c.env...),
				with("send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "echo", "hello under a2a/v1")...)
			if r.code != 0 || !strings.Contains(r.stdout, "echo: hello under a2a/v1") {
				t.Fatalf("send: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stderr, "a2a send: note: topic root a2a/v1"); n != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("want the note alone on stderr:\n%s", r.stderr)
			}
		})
	}
}

// TestTopicRootErrors: an invalid root is a usage error (exit 2) naming
// the flag or the variable, and --topic-root without a broker connection
// too.
func TestTopicRootErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"agent, a wildcard in the flag", nil, []string{"agent", "--broker", "mqtt://127.0.0.1:1", "--org", "o", "--unit", "u", "--id", "x", "--topic-root", "a2a/+"},
			`--topic-root: invalid topic root "a2a/+"`},
		{"send, an empty level", nil, []string{"send", "--broker", "mqtt://127.0.0.1:1", "--org", "o", "--unit", "u", "--to", "x", "--topic-root", "a2a//v1", "hi"},
			`--topic-root: invalid topic root "a2a//v1"`},
		{"watch, $share in the variable", []string{envTopicRoot + "=$share/g"}, []string{"watch", "--broker", "mqtt://127.0.0.1:1", "--org", "o", "--unit", "u"},
			`$` + envTopicRoot + `: invalid topic root "$share/g": its first level $share is reserved by brokers`},
		{"broker, $SYS", nil, []string{"broker", "--listen", "127.0.0.1:0", "--topic-root", "$SYS/a2a"}, `--topic-root: invalid topic root "$SYS/a2a"`},
		{"demo, a space", nil, []string{"demo", "--topic-root", "a2a v1"}, `--topic-root: invalid topic root "a2a v1"`},
		{"the flag over a valid variable", []string{envTopicRoot + "=a2a/v1"}, []string{"demo", "--topic-root", "#"}, `--topic-root: invalid topic root "#"`},
		{"agent over HTTP alone", nil, []string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--topic-root", "a2a/v1"}, "--topic-root goes with --broker"},
		{"send over HTTP", nil, []string{"send", "--url", "http://127.0.0.1:1", "--topic-root", "a2a/v1", "hi"}, "--topic-root goes with --broker"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, c.env, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", r.code, r.stderr, c.want)
			}
		})
	}
	r := runCLI(t, nil, "agent", "-h")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "-topic-root") || !strings.Contains(r.stdout+r.stderr, "outside the profile") {
		t.Fatalf("agent -h does not explain --topic-root:\n%s%s", r.stdout, r.stderr)
	}
}

// TestTopicRootBroker: a2a broker --topic-root a2a/v1 --status serves an
// agent and a send under that root, and marks the agent's card with its
// broker-managed status under the root.
func TestTopicRootBroker(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	url := "mqtt://" + addr
	br := start(t, "broker", "--listen", addr, "--status", "--topic-root", "a2a/v1")
	br.waitFor(t, "listening on "+url+" (status true, topic root a2a/v1)")
	if !strings.Contains(br.output(), "a2a broker: note: topic root a2a/v1 (--topic-root) is outside the A2A-over-MQTT profile") {
		t.Errorf("no note from the broker:\n%s", br.output())
	}
	ag := start(t, "agent", "--broker", url, "--org", "acme", "--unit", "lab", "--id", "echo", "--topic-root", "a2a/v1")
	ag.waitFor(t, "online")
	r := runCLI(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "send", "--broker", url, "--org", "acme", "--unit", "lab", "--to", "echo",
		"--topic-root", "a2a/v1", "hello under a2a/v1")
	if r.code != 0 || !strings.Contains(r.stdout, "echo: hello under a2a/v1") {
		t.Fatalf("send: exit %d\n%s%s\nbroker:\n%s", r.code, r.stdout, r.stderr, br.output())
	}
	root, err := mqttbind.ParseRoot("a2a/v1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := a2amqtt.Watch(context.Background(), a2amqtt.WatchConfig{Connection: a2amqtt.Connection{Broker: url}, Root: root, Org: "acme", Unit: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	waitStatus(t, w, "echo", presence.StatusOnline, presence.SourceBroker)
	raw := dialRawWatch(t, addr, "a2a/v1/discovery/acme/lab/+")
	raw.waitTopic(t, "a2a/v1/discovery/acme/lab/echo")
	raw.mu.Lock()
	props := raw.props["a2a/v1/discovery/acme/lab/echo"]
	raw.mu.Unlock()
	source := ""
	for _, p := range props {
		if p.Key == mqttbind.PropStatusSource {
			source = p.Value
		}
	}
	if source != mqttbind.StatusSourceBroker {
		t.Errorf("the card on a2a/v1/discovery/acme/lab/echo has a2a-status-source %q, want %q (broker-managed status under the root)", source, mqttbind.StatusSourceBroker)
	}
	ag.cmd.Process.Kill()
	waitStatus(t, w, "echo", presence.StatusOffline, presence.SourceBroker)
}

// TestTopicRootDemoEmbedded: a2a demo --topic-root a2a/v1 runs every story
// on embedded brokers under that root.
func TestTopicRootDemoEmbedded(t *testing.T) {
	t.Parallel()
	r := runCLI(t, []string{envPG + "="}, "demo", "--quiet", "--topic-root", "a2a/v1")
	if r.code != 0 || !strings.Contains(r.stdout, demoPassedNoPG) || !strings.Contains(r.stdout, "topic root: a2a/v1") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTopicRootDemoOnMosquitto: mosquitto 2.0.11 never delivers topics
// beginning with $ to $share subscriptions (docs/protocol.md §12), so
// story 05 fails there under the profile's root; under a2a/v1 every story
// passes, the pool's included.
func TestTopicRootDemoOnMosquitto(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartMosquitto(t)
	r := runCLI(t, []string{envPG + "="}, "demo", "--broker", b.URL(), "--quiet", "--topic-root", "a2a/v1")
	if r.code != 0 || !strings.Contains(r.stdout, "  pass  05 ") || !strings.Contains(r.stdout, demoPassedNoPG) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTopicRootOnEjabberd: ejabberd refuses client topics beginning with $
// (docs/protocol.md §12.1). Under the profile's root the demo, an agent
// and a send stop at once on the named refusal 0x90 and suggest
// --topic-root; under a2a/v1 the demo passes every story but the pool's,
// which it skips (ejabberd offers no shared subscriptions, an Extended
// conformance feature), and exits 0.
func TestTopicRootOnEjabberd(t *testing.T) {
	t.Parallel()
	ej := mqtttest.StartEjabberd(t)
	url := withUserinfo(t, ej.URL(), mqtttest.EjabberdUsername, mqtttest.EjabberdPassword)
	const hint = "the broker refuses topics beginning with $: try --topic-root a2a/v1"
	t.Run("under the profile's root: refused at once, --topic-root suggested", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"demo", []string{"demo", "--broker", url, "--quiet"}, "0x90 topic name invalid"},
			{"agent", []string{"agent", "--broker", url, "--org", "acme", "--unit", "lab", "--id", "echo"}, "0x90 topic name invalid"},
			// --card-wait 0: ejabberd grants the discovery subscription
			// under $a2a/v1 but delivers nothing there, so the card check
			// would say "no agent" before the publish is refused.
			{"send", []string{"send", "--broker", url, "--org", "acme", "--unit", "lab", "--to", "echo", "--card-wait", "0", "hi"},
				"broker refused publish to $a2a/v1/request/acme/lab/echo: 0x90 topic name invalid"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t0 := time.Now()
				r := runCLI(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, c.args...)
				if r.code != 1 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, hint) {
					t.Fatalf("exit %d, want 1 with %q and %q\n%s%s", r.code, c.want, hint, r.stdout, r.stderr)
				}
				if d := time.Since(t0); d > 15*time.Second {
					t.Errorf("took %v: a refusal must stop the command at once, not after a timeout", d)
				}
				if strings.Contains(r.stdout+r.stderr, mqtttest.EjabberdPassword+"@") {
					t.Errorf("the URL's password is in an output:\n%s%s", r.stdout, r.stderr)
				}
			})
		}
	})
	t.Run("demo under a2a/v1: every story but the pool's passes, the pool's skipped", func(t *testing.T) {
		r := runCLI(t, []string{envPG + "="}, "demo", "--broker", url, "--topic-root", "a2a/v1", "--quiet")
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (a skipped story is no failure)\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, story := range []string{"02", "03", "07", "08", "09", "H02", "H03", "H08", "O01", "P01", "S11"} {
			if !strings.Contains(r.stdout, "  pass  "+story+" ") {
				t.Errorf("story %s did not pass:\n%s", story, r.stdout)
			}
		}
		for _, want := range []string{
			"  SKIP  05 ",
			"SKIP: mqtt: the broker does not offer shared subscriptions (CONNACK): pools need them",
			"11 passed, 2 skipped (05: the broker does not offer shared subscriptions; F01: no PostgreSQL given: --pg DSN)",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout does not say %q:\n%s", want, r.stdout)
			}
		}
		if !strings.Contains(r.stderr, "a2a demo: note: topic root a2a/v1 (--topic-root) is outside the A2A-over-MQTT profile") {
			t.Errorf("no note on stderr:\n%s", r.stderr)
		}
	})
}
