package mqtt

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/presence"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// The takeover trials. "Back" is a correctness deadline, not a benchmark:
// each trial polls until the agent answers (and is seen online) and fails
// only past answerWithin. The reconnect backoff after a burst reaches 2 s
// (jittered), and the tests run beside others in CI: 15 s tells a client
// left deaf from one that is merely slow to come back.
//
// Every test run makes, on each broker, one burst of longBurst takeovers
// over longBurstOver, and takeoverTrials trials of a shorter burst
// (trialBurst takeovers over trialBurstOver, the same rate of five a
// second): twenty long bursts per broker would add about eight minutes
// (the brokers run in parallel). -takeover.full runs every trial with the
// long burst. Every burst runs with the machine's cores kept busy (the
// defect showed under load), and the agent is the same one from trial to
// trial.
const (
	takeoverTrials = 20
	longBurst      = 100
	longBurstOver  = 20 * time.Second
	trialBurst     = 10
	trialBurstOver = 2 * time.Second
	answerWithin   = 15 * time.Second
)

var fullTakeoverTrials = flag.Bool("takeover.full", false,
	"run every takeover trial with the long burst (100 takeovers in 20 s; about 8 minutes)")

// spin keeps every core busy until stop is called.
func spin() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := range 10000 {
					x += i
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// takeoverBurst connects n times with clientID, evenly over the duration,
// each connection a raw paho client that stays connected until taken over
// (or until close). Refused or failed connections are counted, not fatal.
func takeoverBurst(ctx context.Context, addr, clientID string, n int, over time.Duration) (connected int, close func()) {
	var clients []*paho.Client
	var conns []net.Conn
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * over / time.Duration(n))); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		pc := paho.NewClient(paho.ClientConfig{Conn: conn, PacketTimeout: 5 * time.Second})
		conns = append(conns, conn)
		clients = append(clients, pc)
		if ca, err := pc.Connect(ctx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30}); err == nil && ca.ReasonCode == 0 {
			connected++
		}
	}
	return connected, func() {
		for i, pc := range clients {
			_ = pc.Disconnect(&paho.Disconnect{})
			_ = conns[i].Close()
			<-pc.Done()
		}
	}
}

// pinger sends SendMessage requests to an agent over a raw client.
type pinger struct {
	rc         *rawClient
	replyTopic string
	sent       atomic.Int64
}

func newPinger(t *testing.T, b mqtttest.Broker, id string) *pinger {
	t.Helper()
	replyTopic := "$a2a/v1/reply/acme/lab/" + id + "/" + uuid.NewString()
	return &pinger{rc: dialRaw(t, b.URL(), "acme/lab/"+id, replyTopic), replyTopic: replyTopic}
}

// answered polls the agent, one request every half second, until one of
// them is answered with a completed task, and reports whether that
// happened by the deadline.
func (r *pinger) answered(ctx context.Context, topic string, deadline time.Time) (bool, string) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	corrs := map[string]bool{}
	var last string
	for ctx.Err() == nil {
		corr := uuid.NewString()
		corrs[corr] = true
		payload := sendPayloadOf(newMessage("ping"))
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := r.rc.cm.Publish(pctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload,
			Properties: &paho.PublishProperties{ResponseTopic: r.replyTopic, CorrelationData: []byte(corr)}})
		pcancel()
		r.sent.Add(1)
		if err != nil {
			last = "publish: " + err.Error()
		}
		wait := time.NewTimer(500 * time.Millisecond)
	replies:
		for {
			select {
			case m := <-r.rc.msgs:
				if m.topic != r.replyTopic || !corrs[string(m.corr)] {
					continue
				}
				if strings.Contains(string(m.payload), `"TASK_STATE_COMPLETED"`) {
					wait.Stop()
					return true, ""
				}
				last = fmt.Sprintf("reply %.200s", m.payload)
			case <-wait.C:
				break replies
			case <-ctx.Done():
				wait.Stop()
				break replies
			}
		}
	}
	return false, last
}

func sendPayloadOf(m *a2a.Message) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": m}})
	return b
}

// onlineBy waits until the watch shows the agent online, by the deadline.
func onlineBy(w *Watcher, agentID string, deadline time.Time) bool {
	for {
		if e, ok := w.Lookup(agentID); ok && e.Status() == presence.StatusOnline {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takeoverFixture is an agent, a requester and a watch on one broker.
type takeoverFixture struct {
	b mqtttest.Broker
	// agentLog and brokerLog (nil for mosquitto) are shown when the agent
	// is not back.
	agentLog, brokerLog *recordLog
	cfg                 AgentConfig
	a                   *Agent
	req                 *pinger
	w                   *Watcher
	// slowest is the longest the agent took to be back.
	slowest time.Duration
}

func newTakeoverFixture(t *testing.T, b mqtttest.Broker, brokerLog *recordLog, id string) *takeoverFixture {
	t.Helper()
	agentLog := &recordLog{min: slog.LevelDebug}
	cfg := AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: id, Card: testCard(id), Server: echoServer(t),
		Logger: slog.New(agentLog)}
	f := &takeoverFixture{b: b, agentLog: agentLog, brokerLog: brokerLog, cfg: cfg, a: startAgent(t, cfg), req: newPinger(t, b, id+"-req")}
	w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	f.w = w
	return f
}

// back fails the test unless the agent answers a SendMessage, and the
// watch shows it online, within answerWithin. It records how long that
// took (reported, never asserted on).
func (f *takeoverFixture) back(t *testing.T, what string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(answerWithin)
	if ok, last := f.req.answered(context.Background(), f.a.RequestTopic(), deadline); !ok {
		f.showLogs(t)
		t.Fatalf("%s: the agent did not answer within %v (last: %s)", what, answerWithin, last)
	}
	if !onlineBy(f.w, f.cfg.ID, deadline) {
		e, _ := f.w.Lookup(f.cfg.ID)
		f.showLogs(t)
		t.Fatalf("%s: the agent answers but the watch shows it %v (%v) after %v", what, e.Status(), e.Source(), answerWithin)
	}
	f.slowest = max(f.slowest, time.Since(start))
}

// showLogs shows the latest lines of the agent's and the broker's log.
func (f *takeoverFixture) showLogs(t *testing.T) {
	t.Helper()
	for _, l := range []struct {
		name string
		log  *recordLog
	}{{"agent", f.agentLog}, {"broker", f.brokerLog}} {
		if l.log == nil {
			continue
		}
		var recs []logRecord
		for _, r := range l.log.matching("") {
			if !strings.Contains(r.msg, "error processing packet") { // mochi's, for every packet of a closed connection
				recs = append(recs, r)
			}
		}
		for _, r := range recs[max(0, len(recs)-40):] {
			t.Logf("%s log: %s %s %v", l.name, r.level, r.msg, r.attrs)
		}
	}
}

// forEachBrokerParallel is forEachBroker with the brokers' subtests run
// in parallel (with each other and with other parallel tests); fn also
// gets the embedded broker's warnings and errors (nil for mosquitto, whose
// log the test shows when it fails).
func forEachBrokerParallel(t *testing.T, fn func(t *testing.T, b mqtttest.Broker, brokerLog *recordLog)) {
	for _, name := range mqtttest.BrokerNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			brokerLog := &recordLog{min: slog.LevelWarn}
			b := mqtttest.Start(t, name, mqtttest.WithLogger(slog.New(brokerLog)))
			if name == mqtttest.NameEmbedded {
				fn(t, b, brokerLog)
			} else {
				fn(t, b, nil)
			}
		})
	}
}

// TestAgentSurvivesTakeoverBursts: someone connecting again and again with
// an agent's Client ID (each connection takes the session over, MQTT v5
// §3.1.4) never leaves the agent deaf: once the burst stops, the agent
// answers and is seen online within answerWithin, every trial, on both
// brokers, with every core kept busy during the burst.
func TestAgentSurvivesTakeoverBursts(t *testing.T) {
	t.Parallel()
	forEachBrokerParallel(t, func(t *testing.T, b mqtttest.Broker, brokerLog *recordLog) {
		f := newTakeoverFixture(t, b, brokerLog, "victim")
		defer func() { t.Logf("the agent was back after %v at the most", f.slowest) }()
		f.back(t, "before any takeover")
		run := func(t *testing.T, trial, n int, over time.Duration) {
			ctx, cancel := context.WithTimeout(context.Background(), over+time.Minute)
			defer cancel()
			stop := spin()
			connected, closeBurst := takeoverBurst(ctx, b.Addr(), f.a.ClientID(), n, over)
			stop()
			defer closeBurst()
			if connected == 0 {
				t.Fatalf("trial %d: no takeover connected", trial)
			}
			if connected < n {
				t.Logf("trial %d: %d of %d takeover connections failed", trial, n-connected, n)
			}
			f.back(t, fmt.Sprintf("trial %d, after %d takeovers in %v", trial, connected, over))
		}
		t.Run(fmt.Sprintf("%d-in-%v", longBurst, longBurstOver), func(t *testing.T) {
			run(t, 0, longBurst, longBurstOver)
		})
		n, over := trialBurst, trialBurstOver
		if *fullTakeoverTrials {
			n, over = longBurst, longBurstOver
		}
		t.Run(fmt.Sprintf("%dx%d-in-%v", takeoverTrials, n, over), func(t *testing.T) {
			for trial := range takeoverTrials {
				run(t, trial, n, over)
			}
		})
	})
}

// TestAgentSurvivesADuplicate: a second agent started with the same
// identity by mistake, and stopped again, leaves the first one answering
// and online within answerWithin, every trial, on both brokers, with
// every core kept busy while the duplicate runs.
func TestAgentSurvivesADuplicate(t *testing.T) {
	t.Parallel()
	forEachBrokerParallel(t, func(t *testing.T, b mqtttest.Broker, brokerLog *recordLog) {
		f := newTakeoverFixture(t, b, brokerLog, "twin")
		defer func() { t.Logf("the agent was back after %v at the most", f.slowest) }()
		f.back(t, "before the duplicate")
		started := 0
		defer func() { t.Logf("the duplicate started in %d of %d trials", started, takeoverTrials) }()
		for trial := range takeoverTrials {
			stop := spin()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			dup, err := NewAgent(ctx, f.cfg)
			if err == nil {
				started++
				time.Sleep(200 * time.Millisecond)
				if err := dup.Close(ctx); err != nil {
					t.Logf("trial %d: closing the duplicate: %v", trial, err)
				}
			} else {
				t.Logf("trial %d: the duplicate did not start: %v", trial, err)
			}
			cancel()
			stop()
			f.back(t, fmt.Sprintf("trial %d, after the duplicate stopped", trial))
		}
	})
}

// TestClientAndWatchSurviveTakeoverBursts: a requester and a watch whose
// Client IDs are taken over again and again make their subscriptions
// again and work once the bursts stop: the requester's SendMessage is
// answered, and the watch sees an agent that starts afterwards.
func TestClientAndWatchSurviveTakeoverBursts(t *testing.T) {
	t.Parallel()
	forEachBrokerParallel(t, func(t *testing.T, b mqtttest.Broker, brokerLog *recordLog) {
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "echo", Card: testCard("echo"), Server: echoServer(t)})
		c := startClient(t, b.URL(), "asker")
		w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ClientID: "acme/lab/watcher"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close(context.Background()) })

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stop := spin()
		var wg sync.WaitGroup
		for _, id := range []string{"acme/lab/asker", "acme/lab/watcher"} {
			wg.Go(func() {
				connected, closeBurst := takeoverBurst(ctx, b.Addr(), id, trialBurst, trialBurstOver)
				defer closeBurst()
				if connected == 0 {
					t.Errorf("%s: no takeover connected", id)
				}
			})
		}
		wg.Wait()
		stop()

		deadline := time.Now().Add(answerWithin)
		for {
			actx, acancel := context.WithDeadline(ctx, deadline)
			res, err := c.SendMessage(actx, &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleUser,
				Parts: []a2a.Part{{Content: a2a.PartText("ping")}}}}, requester.To(requester.Target{Agent: "echo"}))
			acancel()
			if err == nil && res.Task != nil && res.Task.Status.State == a2a.TaskStateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the requester got no answer within %v: %v", answerWithin, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "late", Card: testCard("late"), Server: echoServer(t)})
		if !onlineBy(w, "late", time.Now().Add(answerWithin)) {
			t.Fatalf("the watch did not see an agent started after the burst within %v", answerWithin)
		}
	})
}
