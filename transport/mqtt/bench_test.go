package mqtt

// Benchmarks of the MQTT binding (figures in docs/benchmarks.md): the
// SDK against a raw paho.golang floor, through the embedded broker and
// through mosquitto, side by side in one run. Nothing here asserts on time;
// the retained-card benchmark counts what arrives and fails on a loss.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

const (
	benchOrg, benchUnit = "bench", "u"
	// benchInFlight is the number of requests in flight in
	// BenchmarkPipelined64.
	benchInFlight = 64
	// benchCards is the number of retained cards of
	// BenchmarkRetainedCards10k.
	benchCards = 10000
	// benchDeadline bounds every wait of a benchmark generously; running
	// out of it is a failure (a lost message), never a timing assertion.
	benchDeadline = 60 * time.Second
)

// benchBrokers are the brokers every benchmark runs against, in this order.
var benchBrokers = []struct {
	name  string
	start func(testing.TB) mqtttest.Broker
}{
	{mqtttest.NameEmbedded, func(tb testing.TB) mqtttest.Broker { return mqtttest.StartEmbedded(tb) }},
	{mqtttest.NameMosquitto, func(tb testing.TB) mqtttest.Broker { return mqtttest.StartMosquitto(tb) }},
}

// benchCtx is a context for a benchmark's setup and loop, canceled at
// cleanup.
func benchCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// benchDial connects a bare autopaho client (no SDK), subscribes filters at
// QoS 1 and hands every publish to onPublish, which runs on paho's
// goroutine. The connection is closed at cleanup. tuned gives the bare
// client the two connection-level changes the SDK
// makes (reads through a buffer, a session store that does not encode each
// publish), so the benchmarks can show how much of the SDK's figure they
// account for.
func benchDial(tb testing.TB, brokerURL, clientID string, tuned bool, onPublish func(*paho.Publish), filters ...string) *autopaho.ConnectionManager {
	tb.Helper()
	cm, stop, err := dialBare(brokerURL, clientID, tuned, onPublish, filters...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return cm
}

// dialBare is benchDial without the testing.TB: it returns the connection
// and the function that closes it (DISCONNECT, then waits for paho's
// goroutines to end).
func dialBare(brokerURL, clientID string, tuned bool, onPublish func(*paho.Publish), filters ...string) (*autopaho.ConnectionManager, func(), error) {
	u, err := url.Parse(brokerURL)
	if err != nil {
		return nil, nil, err
	}
	cfg := autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		ClientConfig: paho.ClientConfig{ClientID: clientID}}
	if tuned {
		cfg.Session = newSession()
		cfg.AttemptConnection = func(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, "tcp", u.Host)
			if err != nil {
				return nil, err
			}
			return newBufferedTCP(nc.(*net.TCPConn), nil), nil
		}
	}
	if onPublish != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				onPublish(pr.Packet)
				return true, nil
			}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	stop := func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = cm.Disconnect(dctx)
		cancel()
		<-cm.Done()
	}
	wctx, wcancel := context.WithTimeout(context.Background(), benchDeadline)
	defer wcancel()
	if err := cm.AwaitConnection(wctx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect %s: %w", clientID, err)
	}
	if len(filters) > 0 {
		var subs []paho.SubscribeOptions
		for _, f := range filters {
			subs = append(subs, paho.SubscribeOptions{Topic: f, QoS: 1})
		}
		if _, err := cm.Subscribe(wctx, &paho.Subscribe{Subscriptions: subs}); err != nil {
			stop()
			return nil, nil, fmt.Errorf("subscribe %v: %w", filters, err)
		}
	}
	return cm, stop, nil
}

// rawEcho starts the floor's responder: a bare paho client that republishes
// every request's payload to its Response Topic with the same Correlation
// Data, at QoS 1. Each reply is published from its own goroutine (a QoS 1
// publish waits for its PUBACK, which paho's reader must be free to
// deliver), as any correct responder has to. It returns the request topic.
// tuned: see benchDialTuned.
func rawEcho(tb testing.TB, brokerURL string, tuned bool) string {
	tb.Helper()
	id := "raw-echo"
	if tuned {
		id = "tuned-echo"
	}
	topic, err := mqttbind.RequestTopic(benchOrg, benchUnit, id)
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var cm *autopaho.ConnectionManager
	ready := make(chan struct{})
	cm = benchDial(tb, brokerURL, benchOrg+"/"+benchUnit+"/"+id, tuned, func(p *paho.Publish) {
		if p.Properties == nil || p.Properties.ResponseTopic == "" {
			return
		}
		<-ready
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = cm.Publish(context.Background(), &paho.Publish{Topic: p.Properties.ResponseTopic, QoS: 1, Payload: p.Payload,
				Properties: &paho.PublishProperties{CorrelationData: p.Properties.CorrelationData}})
		}()
	}, topic)
	close(ready)
	// Registered after benchDial's, so it runs first: the replies in
	// flight end before the connection closes.
	tb.Cleanup(wg.Wait)
	return topic
}

// rawRequester is the floor's requester: a bare paho client that publishes
// QoS 1 requests with Response Topic and Correlation Data and matches the
// replies by Correlation Data. It is safe for concurrent use.
type rawRequester struct {
	cm      *autopaho.ConnectionManager
	reply   string
	seq     atomic.Uint64
	mu      sync.Mutex
	waiting map[string]chan []byte
}

func newRawRequester(tb testing.TB, brokerURL string, tuned bool) *rawRequester {
	tb.Helper()
	id := "raw-req"
	if tuned {
		id = "tuned-req"
	}
	reply, err := mqttbind.ReplyTopic(benchOrg, benchUnit, id, "r1")
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawRequester{reply: reply, waiting: map[string]chan []byte{}}
	r.cm = benchDial(tb, brokerURL, benchOrg+"/"+benchUnit+"/"+id, tuned, r.onReply, reply)
	return r
}

// onReply hands a reply to the call waiting for its Correlation Data.
func (r *rawRequester) onReply(p *paho.Publish) {
	if p.Properties == nil {
		return
	}
	r.mu.Lock()
	ch := r.waiting[string(p.Properties.CorrelationData)]
	delete(r.waiting, string(p.Properties.CorrelationData))
	r.mu.Unlock()
	if ch != nil {
		ch <- p.Payload
	}
}

// call publishes one request and waits for its reply.
func (r *rawRequester) call(ctx context.Context, topic string, payload []byte) ([]byte, error) {
	corr := strconv.AppendUint(nil, r.seq.Add(1), 10)
	ch := make(chan []byte, 1)
	r.mu.Lock()
	r.waiting[string(corr)] = ch
	r.mu.Unlock()
	if _, err := r.cm.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ResponseTopic: r.reply, CorrelationData: corr}}); err != nil {
		return nil, err
	}
	select {
	case p := <-ch:
		return p, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no reply: %w", ctx.Err())
	}
}

// benchPair is what a request/reply benchmark needs on one broker: the raw
// floor and the SDK, each a requester and a responder.
type benchPair struct {
	raw      *rawRequester
	rawTopic string
	// tuned and tunedTopic are the floor on tuned connections
	// (benchDialTuned).
	tuned      *rawRequester
	tunedTopic string
	// rawPayload is the floor's request: a JSON-RPC SendMessage of the
	// same shape as the SDK's, echoed back as is.
	rawPayload []byte
	client     *Client
	msg        *a2a.Message
}

// startPair connects the floor's requester and echo responder, and an SDK
// Client and Agent whose handler completes every task at once; the
// message is one text part, "ping".
func startPair(tb testing.TB, brokerURL string) *benchPair {
	return startPairText(tb, brokerURL, "ping")
}

// startPairText is startPair with text as the message's one text part.
// The handler completes the task without an artifact, so the SDK's reply
// (the task, its history holding the message) carries the text back, as
// the floor's echo does.
func startPairText(tb testing.TB, brokerURL, text string) *benchPair {
	tb.Helper()
	ctx := benchCtx(tb)
	p := &benchPair{rawTopic: rawEcho(tb, brokerURL, false), tunedTopic: rawEcho(tb, brokerURL, true)}
	p.raw = newRawRequester(tb, brokerURL, false)
	p.tuned = newRawRequester(tb, brokerURL, true)
	p.msg = &a2a.Message{Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
	wire := &a2a.Message{MessageID: uuid.NewString(), TaskID: uuid.NewString(), Role: p.msg.Role, Parts: p.msg.Parts}
	wire.ContextID = "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77"
	var err error
	if p.rawPayload, err = (&a2a.SendMessageRequest{Message: wire}).MarshalJSON(); err != nil {
		tb.Fatal(err)
	}
	p.rawPayload = []byte(`{"jsonrpc":"2.0","id":"` + wire.MessageID + `","method":"SendMessage","params":` + string(p.rawPayload) + `}`)
	tb.Logf("raw floor payload: %d bytes", len(p.rawPayload))

	srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }))
	tb.Cleanup(func() { srv.Close(context.Background()) })
	a, err := NewAgent(ctx, AgentConfig{Connection: Connection{Broker: brokerURL}, Org: benchOrg, Unit: benchUnit, ID: "sdk-agent", Card: testCard("Bench"), Server: srv})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(context.Background()) })
	if p.client, err = NewClient(ctx, ClientConfig{Connection: Connection{Broker: brokerURL}, Org: benchOrg, Unit: benchUnit, ID: "sdk-client"}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.client.Close(context.Background()) })
	return p
}

// rawCall is one round trip of the floor.
func (p *benchPair) rawCall(ctx context.Context) error {
	_, err := p.raw.call(ctx, p.rawTopic, p.rawPayload)
	return err
}

// tunedCall is one round trip of the floor on tuned connections.
func (p *benchPair) tunedCall(ctx context.Context) error {
	_, err := p.tuned.call(ctx, p.tunedTopic, p.rawPayload)
	return err
}

// sdkCall is one SendMessage round trip; the task must come back completed.
func (p *benchPair) sdkCall(ctx context.Context) error {
	res, err := p.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: p.msg}, requester.To(requester.Target{Agent: "sdk-agent"}))
	if err != nil {
		return err
	}
	if res.Task == nil || res.Task.Status == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("SendMessage: want a completed task, got %+v", res)
	}
	return nil
}

// goroutinesCreated is the number of goroutines the process has created
// (runtime/metrics): a goroutine started per call (paho starts one for
// each QoS 1 publish) is a hand-off the call pays for.
func goroutinesCreated() float64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return float64(m[0].Value.Uint64())
}

// reportLatency reports the median and 99th percentile of per-iteration
// durations.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	p50, p99 := percentiles(d)
	b.ReportMetric(p50, "p50-µs")
	b.ReportMetric(p99, "p99-µs")
}

// percentiles sorts d and returns its median and 99th percentile in µs.
func percentiles(d []time.Duration) (p50, p99 float64) {
	slices.Sort(d)
	pct := func(q float64) float64 {
		i := int(q * float64(len(d)-1))
		return float64(d[i].Nanoseconds()) / 1e3
	}
	return pct(0.50), pct(0.99)
}

// BenchmarkRequestReply times one request/reply round trip, one at a time:
// the raw floor (bare paho requester and echo responder) against
// Client.SendMessage to an Agent whose handler completes at once.
func BenchmarkRequestReply(b *testing.B) {
	for _, bk := range benchBrokers {
		b.Run(bk.name, func(b *testing.B) {
			p := startPair(b, bk.start(b).URL())
			for _, v := range []struct {
				name string
				call func(context.Context) error
			}{{"raw", p.rawCall}, {"raw-tuned", p.tunedCall}, {"sdk", p.sdkCall}} {
				b.Run(v.name, func(b *testing.B) {
					ctx := benchCtx(b)
					// Warm the connections and the allocator up.
					for range 50 {
						if err := v.call(ctx); err != nil {
							b.Fatal(err)
						}
					}
					lat := make([]time.Duration, 0, b.N)
					b.ReportAllocs()
					b.ResetTimer()
					g0 := goroutinesCreated()
					for range b.N {
						t0 := time.Now()
						if err := v.call(ctx); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					b.StopTimer()
					reportLatency(b, lat)
					b.ReportMetric((goroutinesCreated()-g0)/float64(b.N), "goroutines/op")
				})
			}
			// paired alternates blocks of 500 round trips of the floor, of
			// the floor on tuned connections and of the SDK, so all see the
			// same machine within seconds on a shared host whose speed
			// drifts, while each block pays for its own garbage
			// (alternating single calls would let the floor absorb GC work
			// the SDK's allocations cause).
			b.Run("paired", func(b *testing.B) {
				ctx := benchCtx(b)
				sides := []func(context.Context) error{p.rawCall, p.tunedCall, p.sdkCall}
				for range 50 {
					for _, call := range sides {
						if err := call(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				const block = 500
				lat := make([][]time.Duration, len(sides))
				for i := range lat {
					lat[i] = make([]time.Duration, 0, b.N)
				}
				b.ResetTimer()
				for len(lat[0]) < b.N {
					n := min(block, b.N-len(lat[0]))
					for i, call := range sides {
						for range n {
							t0 := time.Now()
							if err := call(ctx); err != nil {
								b.Fatal(err)
							}
							lat[i] = append(lat[i], time.Since(t0))
						}
					}
				}
				b.StopTimer()
				r50, r99 := percentiles(lat[0])
				t50, _ := percentiles(lat[1])
				s50, s99 := percentiles(lat[2])
				b.ReportMetric(r50, "raw-p50-µs")
				b.ReportMetric(t50, "tuned-p50-µs")
				b.ReportMetric(s50, "sdk-p50-µs")
				b.ReportMetric(s50/r50, "p50-ratio")
				b.ReportMetric(s50/t50, "p50-ratio-tuned")
				b.ReportMetric(r99, "raw-p99-µs")
				b.ReportMetric(s99, "sdk-p99-µs")
			})
		})
	}
}

// BenchmarkPipelined64 measures throughput with 64 requests in flight: 64
// goroutines each doing sequential round trips, b.N in all.
func BenchmarkPipelined64(b *testing.B) {
	for _, bk := range benchBrokers {
		b.Run(bk.name, func(b *testing.B) {
			p := startPair(b, bk.start(b).URL())
			for _, v := range []struct {
				name string
				call func(context.Context) error
			}{{"raw", p.rawCall}, {"sdk", p.sdkCall}} {
				b.Run(v.name, func(b *testing.B) {
					ctx := benchCtx(b)
					if _, err := pipeline(ctx, 4*benchInFlight, v.call); err != nil { // warm-up
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					t0 := time.Now()
					lat, err := pipeline(ctx, int64(b.N), v.call)
					elapsed := time.Since(t0)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
					reportLatency(b, lat)
				})
			}
			// paired alternates rounds of raw and SDK pipelines (ten
			// rounds each), so both see the same machine: throughput is
			// each one's requests over its own summed wall time.
			b.Run("paired", func(b *testing.B) {
				ctx := benchCtx(b)
				for _, call := range []func(context.Context) error{p.rawCall, p.sdkCall} {
					if _, err := pipeline(ctx, 4*benchInFlight, call); err != nil {
						b.Fatal(err)
					}
				}
				const rounds = 10
				per := max(int64(b.N)/rounds, benchInFlight)
				var wall [2]time.Duration
				b.ResetTimer()
				for range rounds {
					for i, call := range []func(context.Context) error{p.rawCall, p.sdkCall} {
						t0 := time.Now()
						if _, err := pipeline(ctx, per, call); err != nil {
							b.Fatal(err)
						}
						wall[i] += time.Since(t0)
					}
				}
				b.StopTimer()
				raw := float64(per*rounds) / wall[0].Seconds()
				sdk := float64(per*rounds) / wall[1].Seconds()
				b.ReportMetric(raw, "raw-req/s")
				b.ReportMetric(sdk, "sdk-req/s")
				b.ReportMetric(sdk/raw, "req/s-ratio")
			})
		})
	}
}

// pipeline does n round trips of call, benchInFlight at a time, and returns
// their durations.
func pipeline(ctx context.Context, n int64, call func(context.Context) error) ([]time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	lats := make([][]time.Duration, benchInFlight)
	for w := range benchInFlight {
		lats[w] = make([]time.Duration, 0, n/benchInFlight+1)
		wg.Go(func() {
			for next.Add(1) <= n && firstErr.Load() == nil {
				t0 := time.Now()
				if err := call(ctx); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return nil, *e
	}
	return slices.Concat(lats...), nil
}

// benchCard returns a realistic card of about 1 KiB for agent i.
func benchCard(i int) *a2a.AgentCard {
	streaming, push := true, false
	doc := fmt.Sprintf("https://agents.example.com/bench/u/agent-%05d/docs", i)
	return &a2a.AgentCard{
		Name:        fmt.Sprintf("Bench agent %05d", i),
		Description: "Answers questions about the inventory of one warehouse and books transfers between warehouses; replies within seconds.",
		Version:     "1.4.2",
		SupportedInterfaces: []a2a.AgentInterface{{URL: "mqtts://broker.example.com:8883", ProtocolBinding: ProtocolBindingMQTT,
			ProtocolVersion: ProtocolVersion}},
		Provider:          &a2a.AgentProvider{URL: "https://example.com", Organization: "Example Logistics"},
		DocumentationURL:  &doc,
		Capabilities:      &a2a.AgentCapabilities{Streaming: &streaming, PushNotifications: &push},
		DefaultInputModes: []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{
			{ID: "stock", Name: "Stock level", Description: "Reports the stock level of an article in this warehouse, by SKU or by name.",
				Tags: []string{"inventory", "stock", "warehouse"}, Examples: []string{"How many M8 bolts are left?", "Stock of SKU 4711-22"}},
			{ID: "transfer", Name: "Transfer", Description: "Books a transfer of articles to another warehouse and reports the expected arrival.",
				Tags: []string{"inventory", "transfer", "logistics"}, Examples: []string{"Move 40 pallets of SKU 4711-22 to Lyon"}},
		},
	}
}

// publishCards publishes n retained cards online on
// $a2a/v1/discovery/bench/u/agent-NNNNN with a raw client, 32 at a time,
// and returns the size of one card.
func publishCards(tb testing.TB, brokerURL string, n int) int {
	tb.Helper()
	cm, stop, err := dialBare(brokerURL, benchOrg+"/"+benchUnit+"/card-publisher", false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer stop()
	payloads := make([][]byte, n)
	for i := range n {
		card := benchCard(i)
		if i == 0 {
			if err := card.Validate(); err != nil {
				tb.Fatal(err)
			}
		}
		if payloads[i], err = card.MarshalJSON(); err != nil {
			tb.Fatal(err)
		}
	}
	ctx := benchCtx(tb)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				topic, err := mqttbind.DiscoveryTopic(benchOrg, benchUnit, fmt.Sprintf("agent-%05d", i))
				if err == nil {
					err = publishVia(ctx, cm, BrokerCapabilities{}, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: payloads[i],
						Properties: &paho.PublishProperties{ContentType: "application/json",
							User: statusProps(mqttbind.StatusOnline, mqttbind.StatusSourceAgent)}})
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		tb.Fatal(*e)
	}
	return len(payloads[0])
}

// rawRetained connects a raw subscriber to the unit's discovery filter and
// waits until n distinct retained cards have arrived or benchDeadline
// passes. It returns how many did, and the function that disconnects.
func rawRetained(brokerURL, clientID string, n int) (int, func(), error) {
	filter, err := mqttbind.DiscoveryFilterTopic(benchOrg, benchUnit)
	if err != nil {
		return 0, nil, err
	}
	var mu sync.Mutex
	seen := make(map[string]struct{}, n)
	all := make(chan struct{})
	_, stop, err := dialBare(brokerURL, clientID, false, func(p *paho.Publish) {
		if !p.Retain || len(p.Payload) == 0 {
			return
		}
		mu.Lock()
		seen[p.Topic] = struct{}{}
		if len(seen) == n {
			close(all)
		}
		mu.Unlock()
	}, filter)
	if err != nil {
		return 0, nil, err
	}
	timer := time.NewTimer(benchDeadline)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
	}
	mu.Lock()
	defer mu.Unlock()
	return len(seen), stop, nil
}

// watchRetained runs a2amqtt.Watch on the unit until its presence table
// holds n agents or benchDeadline passes. It returns the table's size, and
// the function that closes the watcher. The table is polled every
// millisecond (Changes is left unread, as the watcher allows): reading
// Changes would add the reader's goroutine handoffs to what is timed.
func watchRetained(brokerURL string, n int) (int, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
	defer cancel()
	w, err := Watch(ctx, WatchConfig{Connection: Connection{Broker: brokerURL}, Org: benchOrg, Unit: benchUnit})
	if err != nil {
		return 0, nil, err
	}
	stop := func() { w.Close(context.Background()) }
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for w.Len() < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return w.Len(), stop, nil
		}
	}
	return w.Len(), stop, nil
}

// BenchmarkRetainedCards10k times how long a new subscriber takes to get
// all 10,000 retained cards of a unit: a raw paho subscriber on
// $a2a/v1/discovery/bench/u/+ against a2amqtt.Watch until its presence
// table holds 10,000 agents. Connecting and subscribing are timed on both
// sides. It fails if fewer than 10,000 arrive (docs/protocol.md §12: brokers at
// their default limits drop retained cards silently).
func BenchmarkRetainedCards10k(b *testing.B) {
	for _, bk := range benchBrokers {
		b.Run(bk.name, func(b *testing.B) {
			brokerURL := bk.start(b).URL()
			size := publishCards(b, brokerURL, benchCards)
			b.Logf("%s: %d retained cards of %d bytes", bk.name, benchCards, size)
			for _, v := range []struct {
				name string
				get  func(i int) (int, func(), error)
			}{
				{"raw", func(i int) (int, func(), error) {
					return rawRetained(brokerURL, benchOrg+"/"+benchUnit+"/raw-sub-"+strconv.Itoa(i), benchCards)
				}},
				{"watch", func(int) (int, func(), error) { return watchRetained(brokerURL, benchCards) }},
			} {
				b.Run(v.name, func(b *testing.B) {
					b.ReportAllocs()
					for i := range b.N {
						got, stop, err := v.get(i)
						if err != nil {
							b.Fatal(err)
						}
						// Disconnecting is not timed.
						b.StopTimer()
						stop()
						b.StartTimer()
						if got != benchCards {
							b.Fatalf("%s on %s: %d of %d retained cards arrived within %v", v.name, bk.name, got, benchCards, benchDeadline)
						}
					}
				})
			}
		})
	}
}
