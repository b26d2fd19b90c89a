package mqtttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// TestBrokersRoundTrip: both brokers start, accept a v5 CONNECT, and carry
// a QoS 1 publish with a user property to a subscriber.
func TestBrokersRoundTrip(t *testing.T) {
	if names := BrokerNames(); len(names) != 2 || names[0] != NameEmbedded || names[1] != NameMosquitto {
		t.Fatalf("BrokerNames: %v", names)
	}
	ran := map[string]bool{}
	t.Cleanup(func() {
		if !ran[NameEmbedded] || !ran[NameMosquitto] {
			t.Errorf("ForEach ran on %v, want both brokers", ran)
		}
	})
	ForEach(t, func(t *testing.T, b Broker) {
		ran[b.Name()] = true
		if t.Name() != "TestBrokersRoundTrip/"+b.Name() {
			t.Errorf("broker %s in subtest %s", b.Name(), t.Name())
		}
		if want := "mqtt://" + b.Addr(); b.URL() != want || !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
			t.Errorf("URL %q, Addr %q", b.URL(), b.Addr())
		}
		topic, err := mqttbind.RequestTopic("o", "u", "a")
		if err != nil {
			t.Fatal(err)
		}
		sub := connect(t, b.Addr(), "o/u/a", nil)
		sub.subscribe(topic, 1)
		pub := connect(t, b.Addr(), "o/u/requester", nil)
		resp := pub.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: []byte("hello"),
			Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: mqttbind.PropContextID, Value: "ctx"}}}})
		if resp.ReasonCode != 0 {
			t.Errorf("PUBACK reason %#x", resp.ReasonCode)
		}
		m := sub.await(topic)
		if string(m.Payload) != "hello" || m.Properties == nil || m.Properties.User.Get(mqttbind.PropContextID) != "ctx" {
			t.Errorf("received %q with properties %+v", m.Payload, m.Properties)
		}
	})
}

// TestBrokersRestartKeepsRetained: with persistence, a retained card
// survives Restart on the same URL.
func TestBrokersRestartKeepsRetained(t *testing.T) {
	for _, name := range BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := Start(t, name, WithPersistence())
			topic, err := mqttbind.DiscoveryTopic("o", "u", "a")
			if err != nil {
				t.Fatal(err)
			}
			url := b.URL()
			agent := connect(t, b.Addr(), "o/u/a", nil)
			agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: []byte(`{"name":"a"}`)})
			agent.disconnect()

			b.Restart()
			if b.URL() != url {
				t.Errorf("URL after Restart %q, want %q", b.URL(), url)
			}
			sub := connect(t, b.Addr(), "watcher", nil)
			sub.subscribe(topic, 1)
			if m := sub.await(topic); string(m.Payload) != `{"name":"a"}` {
				t.Errorf("retained card after Restart: %q", m.Payload)
			}
		})
	}
}

// TestEmbeddedBrokerStatus: WithBrokerStatus reaches the embedded broker.
func TestEmbeddedBrokerStatus(t *testing.T) {
	e := StartEmbedded(t, WithBrokerStatus())
	topic, err := mqttbind.DiscoveryTopic("o", "u", "a")
	if err != nil {
		t.Fatal(err)
	}
	sub := connect(t, e.Addr(), "watcher", nil)
	sub.subscribe(topic, 1)
	agent := connect(t, e.Addr(), "o/u/a", nil)
	agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: []byte(`{"name":"a"}`)})
	m := sub.await(topic)
	if m.Properties == nil || m.Properties.User.Get(mqttbind.PropStatusSource) != mqttbind.StatusSourceBroker {
		t.Errorf("card without broker status: %+v", m.Properties)
	}
}

// TestMosquittoSharedSubscriptionSkipsDollarTopics pins docs/protocol.md §12:
// Debian's mosquitto 2.0.11 never delivers $a2a/v1/request/o/u/pool/p to
// $share/g/$a2a/v1/request/o/u/pool/p, while a plain subscriber receives it
// and the same shared subscriber receives a topic without "$". The same
// check on the embedded broker shows that it detects a delivery.
func TestMosquittoSharedSubscriptionSkipsDollarTopics(t *testing.T) {
	t.Run(NameMosquitto, func(t *testing.T) {
		if sharedDollarDelivered(t, StartMosquitto(t).Addr()) {
			t.Fatalf("mosquitto now delivers $-topics to shared subscriptions: enable the pool story on mosquitto")
		}
	})
	t.Run(NameEmbedded, func(t *testing.T) {
		if !sharedDollarDelivered(t, StartEmbedded(t).Addr()) {
			t.Fatalf("the embedded broker did not deliver the pool request to the shared subscription")
		}
	})
}

// sharedDollarDelivered publishes a pool request and reports whether the
// shared subscription received it, once a plain subscriber has it and the
// shared subscriber has a later message on a topic without "$" (plus a
// bounded grace period).
func sharedDollarDelivered(t *testing.T, addr string) bool {
	t.Helper()
	topic, err := mqttbind.PoolRequestTopic("o", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	filter, err := mqttbind.PoolSubscriptionTopic("g", "o", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	const plainTopic = "test/pool-sentinel"

	member := connect(t, addr, "o/u/m1", nil)
	if sa := member.subscribe(filter, 1); len(sa.Reasons) != 1 || sa.Reasons[0] != 1 {
		t.Fatalf("SUBACK for %s: reason codes %v", filter, sa.Reasons)
	}
	member.subscribe("$share/g/"+plainTopic, 1)
	plain := connect(t, addr, "o/u/plain", nil)
	plain.subscribe(topic, 1)

	requester := connect(t, addr, "o/u/requester", nil)
	requester.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: []byte("request")})
	requester.publish(&paho.Publish{Topic: plainTopic, QoS: 1, Payload: []byte("sentinel")})
	plain.await(topic)

	// The sentinel was published after the request, by the same client, at
	// the same QoS: a broker would have queued the request first.
	const grace = 500 * time.Millisecond
	delivered, sawSentinel := false, false
	timer := time.NewTimer(waitLong)
	defer timer.Stop()
	for {
		select {
		case msg := <-member.msgs:
			switch {
			case msg.Topic == topic:
				delivered = true
			case msg.Topic == plainTopic && !sawSentinel:
				sawSentinel = true
				timer.Reset(grace)
			}
		case <-timer.C:
			if !sawSentinel {
				t.Fatalf("the shared subscription to %s received nothing", plainTopic)
			}
			member.disconnect()
			plain.disconnect()
			requester.disconnect()
			return delivered
		}
	}
}

// TestMosquittoTenThousandRetainedCards: with the raised limits one
// subscription to $a2a/v1/discovery/o/u/+ receives all of 10,000 retained
// cards.
func TestMosquittoTenThousandRetainedCards(t *testing.T) {
	const n = 10000
	m := StartMosquitto(t)
	filter, err := mqttbind.DiscoveryFilterTopic("o", "u")
	if err != nil {
		t.Fatal(err)
	}

	pub := connect(t, m.Addr(), "publisher", nil)
	ctx := testContext(t)
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				agent := fmt.Sprintf("agent-%05d", i)
				topic, err := mqttbind.DiscoveryTopic("o", "u", agent)
				if err == nil {
					_, err = pub.pc.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true,
						Payload: fmt.Appendf(nil, `{"name":%q,"description":"test agent","version":"1"}`, agent)})
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	pubTime := time.Since(start)
	pub.disconnect()

	var (
		seen = make(map[string]bool)
		all  = make(chan struct{})
	)
	sub := connect(t, m.Addr(), "watcher", func(p *paho.Publish) {
		mu.Lock()
		defer mu.Unlock()
		before := len(seen)
		seen[p.Topic] = true
		if before == n-1 && len(seen) == n {
			close(all)
		}
	})
	start = time.Now()
	sub.subscribe(filter, 1)
	select {
	case <-all:
		t.Logf("mosquitto: published %d retained cards in %v, one subscription received %d in %v",
			n, pubTime.Round(time.Millisecond), n, time.Since(start).Round(time.Millisecond))
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("received %d of %d retained cards", len(seen), n)
	}
}

func TestMosquittoConfig(t *testing.T) {
	conf := MosquittoConfig("127.0.0.1:18830", "/tmp/data", "max_keepalive 60")
	for _, want := range []string{
		"listener 18830 127.0.0.1\n",
		"allow_anonymous true\n",
		"set_tcp_nodelay true\n",
		"max_queued_messages 100000\n",
		"max_inflight_messages 1024\n",
		"persistence true\n",
		"persistence_location /tmp/data/\n",
		"max_keepalive 60\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("configuration lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(MosquittoConfig("127.0.0.1:1", ""), "persistence") {
		t.Errorf("persistence without WithPersistence")
	}
}

// fatalTB records a Fatalf (or a skip) and ends the goroutine, as testing
// does.
type fatalTB struct {
	testing.TB
	msg     string
	skipped bool
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalTB) Skip(...any)          { f.skipped = true; runtime.Goexit() }
func (f *fatalTB) Skipf(string, ...any) { f.skipped = true; runtime.Goexit() }
func (f *fatalTB) SkipNow()             { f.skipped = true; runtime.Goexit() }

// TestStartMosquittoFails: a missing binary fails the test (never skips)
// with the install command; so does asking mosquitto for broker status,
// and Start given a broker name it does not know.
func TestStartMosquittoFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(testing.TB)
		want  string
	}{
		{"missing binary", func(f testing.TB) { StartMosquitto(f, WithMosquittoBinary("/nonexistent/mosquitto")) }, "apt-get install -y mosquitto"},
		{"missing binary, by name", func(f testing.TB) { Start(f, NameMosquitto, WithMosquittoBinary("/nonexistent/mosquitto")) }, "apt-get install -y mosquitto"},
		{"broker status", func(f testing.TB) { StartMosquitto(f, WithBrokerStatus()) }, "no broker-managed status"},
		{"unknown name", func(f testing.TB) { Start(f, "emqx") }, `no broker "emqx"`},
	} {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.start(f)
		}()
		<-done
		if f.skipped || !strings.Contains(f.msg, c.want) {
			t.Errorf("%s: skipped=%v, failure %q; want a failure saying %q", c.name, f.skipped, f.msg, c.want)
		}
	}
}

// forEachChildEnv makes TestForEachWithoutMosquitto the child run.
const forEachChildEnv = "MQTTTEST_FOREACH_CHILD"

// TestForEachWithoutMosquitto: without a mosquitto binary, ForEach's
// embedded subtest still runs and passes and only the mosquitto subtest
// fails, with the install command. The test runs its own binary again
// (the child, where the mosquitto binary is one that does not exist) and
// reads the verdicts of the child's subtests.
func TestForEachWithoutMosquitto(t *testing.T) {
	if os.Getenv(forEachChildEnv) == "1" {
		ForEach(t, func(t *testing.T, b Broker) {
			topic, err := mqttbind.RequestTopic("o", "u", "a")
			if err != nil {
				t.Fatal(err)
			}
			sub := connect(t, b.Addr(), "o/u/a", nil)
			sub.subscribe(topic, 1)
			pub := connect(t, b.Addr(), "o/u/requester", nil)
			pub.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: []byte("hello")})
			if m := sub.await(topic); string(m.Payload) != "hello" {
				t.Errorf("received %q", m.Payload)
			}
		}, WithMosquittoBinary("/nonexistent/mosquitto"))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestForEachWithoutMosquitto$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), forEachChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child run: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"--- PASS: TestForEachWithoutMosquitto/embedded",
		"--- FAIL: TestForEachWithoutMosquitto/mosquitto",
		"mosquitto binary /nonexistent/mosquitto",
		"apt-get install -y mosquitto",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("a subtest was skipped:\n%s", out)
	}
}
