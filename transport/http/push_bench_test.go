package http_test

// The cost of a push-notification binding to SendMessage (figures in
// docs/benchmarks.md, section "Push: SendMessage with a binding
// (transport/http)"): one agent served with push notifications
// (agent.WithPush, agent/webhook's Sender) behind this package's Handler,
// and this package's Client sending SendMessage round trips with a
// push-notification config in the message (bound: the config is stored
// with the task, and the task's COMPLETED status is POSTed to a loopback
// receiver that acknowledges it) and without one (plain), on the same agent
// in the same run. The approach is bench_test.go's: paired blocks, the
// median of each, and their ratio. "paired" is closed-loop (each send
// starts when the one before answered: the agent is never idle, so the
// push's own work lands on the round trips); "open" is open-loop (sends
// started on a schedule of their own, one every pushBenchInterval, well
// below saturation: what a push adds to a send at a steady load). Nothing
// asserts on time.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// pushBenchToken is the notification token of the bound sends.
const pushBenchToken = "bench-token"

// pushBench is one agent with push notifications, a client for it, and the
// webhook its bound sends name.
type pushBench struct {
	client  *a2ahttp.Client
	sender  *webhook.Sender
	hookURL string
	// bound counts the bound sends answered, acked the pushes the
	// receiver acknowledged.
	bound, acked atomic.Int64
	// perSend is how many pushes a bound send makes (measured at start).
	perSend int64
}

// startPushBench starts the receiver, the agent and the client, the
// agent's Sender with its default Linger.
func startPushBench(tb testing.TB) *pushBench {
	tb.Helper()
	return startPushBenchLinger(tb, 0)
}

// startPushBenchLinger is startPushBench with the Sender's Linger given
// (webhook.Config.Linger: 0 the default, negative none).
func startPushBenchLinger(tb testing.TB, linger time.Duration) *pushBench {
	tb.Helper()
	ctx := benchContext(tb)
	p := &pushBench{}

	// The webhook: reads the push, checks the token, answers 204. As
	// cheap as a receiver can be, so that what is measured is the agent.
	ln, base := benchListen(tb)
	serveBench(tb, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("A2A-Notification-Token") != pushBenchToken {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		p.acked.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	p.hookURL = base + "/a2a/push"

	// The agent: completes every task at once; push notifications through
	// the webhook Sender, with the defaults but loopback allowed.
	var srv *agent.Server
	var err error
	p.sender, err = webhook.New(webhook.Config{
		Reporter:      agent.PushReporterFunc(func(r agent.PushReport) { srv.PushReport(r) }),
		AllowLoopback: true,
		Linger:        linger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	srv = agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }),
		agent.WithPush(agent.PushConfig{Notifier: p.sender, AllowLoopbackHTTP: true}))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Close(ctx)
		_ = p.sender.Close(ctx)
	})
	ln, base = benchListen(tb)
	yes := true
	card := &a2a.AgentCard{Name: "bench", Description: "completes every task at once", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &yes, PushNotifications: &yes},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "completes", Tags: []string{"echo"}}}}
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = h.Serve(ln, "/a2a") }()
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	if p.client, err = a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.client.Close(context.Background()) })

	// How many pushes one bound send makes: every status and artifact
	// update of the task (A2A v1.0 §4.3), here its COMPLETED status.
	warm(tb, ctx, 100, p.boundCall)
	p.waitIdle(tb)
	if p.perSend = p.acked.Load() / p.bound.Load(); p.perSend < 1 || p.acked.Load() != p.perSend*p.bound.Load() {
		tb.Fatalf("%d pushes acknowledged for %d bound sends", p.acked.Load(), p.bound.Load())
	}
	return p
}

// plainCall is one SendMessage round trip without a push config.
func (p *pushBench) plainCall(ctx context.Context) error {
	return pushCompleted(p.client.SendMessage(ctx, requester.TextMessage("ping", "", "")))
}

// boundCall is one SendMessage round trip whose message carries a push
// config: the agent stores it with the task and pushes the task's updates
// to the webhook.
func (p *pushBench) boundCall(ctx context.Context) error {
	req := requester.TextMessage("ping", "", "")
	req.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: p.hookURL, Token: pushBenchToken}}
	if err := pushCompleted(p.client.SendMessage(ctx, req)); err != nil {
		return err
	}
	p.bound.Add(1)
	return nil
}

func pushCompleted(res *requester.Result, err error) error {
	if err != nil {
		return err
	}
	if res.Task == nil || res.Task.Status == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("SendMessage: want a completed task, got %+v", res)
	}
	return nil
}

// waitIdle waits (untimed) until the webhook acknowledged the pushes of
// every bound send so far and the Sender has nothing queued or under way,
// so that no block pays for the deliveries of the one before, and keeps no
// config (each task's COMPLETED push settles its config: agent/webhook,
// "Memory"). A Sender that lost a push fails the benchmark, and so does
// one that keeps configs.
func (p *pushBench) waitIdle(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := p.sender.Stats()
		if st.Dead+st.Refused+st.Dropped+st.Discarded > 0 {
			tb.Fatalf("the sender lost pushes: %+v", st)
		}
		if st.Queued == 0 && st.InFlight == 0 && st.Configs == 0 && (p.perSend == 0 || p.acked.Load() >= p.perSend*p.bound.Load()) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pushes not delivered: %d acknowledged for %d bound sends; %+v", p.acked.Load(), p.bound.Load(), st)
		}
		time.Sleep(time.Millisecond)
	}
}

// pushBenchInterval is the pace of the open-loop benchmark: a send is
// started a millisecond after the one before started, whether or not that
// one has answered (a little under 1,000 sends/s, as a sleep runs over).
// That is about a tenth of what the agent sustains closed-loop, and as
// fine a pace as the Go runtime keeps: on Linux a goroutine that sleeps
// while the process is idle wakes at whole milliseconds (its netpoller
// waits at least 1 ms), so a shorter pace comes out as bursts of sends.
const pushBenchInterval = time.Millisecond

// pacedBlock starts n calls of call, each interval after the one before
// started (later when the sleep runs over), each on a goroutine of its
// own so that a slow answer delays no send, and returns each call's round
// trip and how many calls were started per second.
func pacedBlock(ctx context.Context, n int, interval time.Duration, call func(context.Context) error) (lat []time.Duration, rate float64, err error) {
	lat = make([]time.Duration, n)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	first := time.Now()
	last := first
	for i := range n {
		if i > 0 {
			time.Sleep(time.Until(last.Add(interval)))
		}
		last = time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if err := call(ctx); err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			lat[i] = time.Since(t0)
		}()
	}
	if n > 1 {
		rate = float64(n-1) / last.Sub(first).Seconds()
	}
	wg.Wait()
	select {
	case err = <-errs:
	default:
	}
	return lat, rate, err
}

// BenchmarkHTTPSendMessagePush times one SendMessage round trip (to a
// completed task) on an agent that serves push notifications: plain (no
// config) and bound (a config in the message, the COMPLETED status pushed
// to a loopback webhook that answers 204), and eager, bound on a second
// agent alike whose Sender does not linger (webhook.Config.Linger). plain,
// bound and eager send one at a time; paired alternates blocks of 500
// round trips of the three, one at a time (closed loop), waiting (untimed)
// after each block until its pushes were acknowledged, and reports the
// medians and the ratios bound/plain (target: at most 1.2) and
// eager/plain; open does the same with each block's sends started
// pushBenchInterval apart (open loop; interval-µs, and sends/s the median
// rate achieved over the blocks). Allocations are the whole process's:
// client, server, Sender and receiver.
func BenchmarkHTTPSendMessagePush(b *testing.B) {
	p := startPushBench(b)
	// eager: a second agent alike whose Sender starts each delivery at
	// once (Linger: none), to show what Linger changes, in the same run.
	eager := startPushBenchLinger(b, -1)
	idle := func() { p.waitIdle(b); eager.waitIdle(b) }
	calls := []stack{{"plain", p.plainCall}, {"bound", p.boundCall}, {"eager", eager.boundCall}}
	for _, st := range calls {
		b.Run(st.name, func(b *testing.B) {
			ctx := benchContext(b)
			warm(b, ctx, 100, st.call)
			idle()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := st.call(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			idle()
			reportPercentiles(b, "", lat)
		})
	}
	b.Run("paired", func(b *testing.B) {
		ctx := benchContext(b)
		for _, st := range calls {
			warm(b, ctx, 100, st.call)
		}
		idle()
		lat := pairedBlocks(b, ctx, calls, idle)
		plain := reportPercentiles(b, "plain-", lat[0])
		bound := reportPercentiles(b, "bound-", lat[1])
		eager := reportPercentiles(b, "eager-", lat[2])
		b.ReportMetric(bound/plain, "bound/plain-p50")
		b.ReportMetric(eager/plain, "eager/plain-p50")
	})
	b.Run("open", func(b *testing.B) {
		ctx := benchContext(b)
		for _, st := range calls {
			warm(b, ctx, 100, st.call)
		}
		idle()
		lat := [][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
		var rates []float64
		b.ResetTimer()
		for round := 0; len(lat[0]) < b.N; round++ {
			n := min(httpBenchBlock, b.N-len(lat[0]))
			for k := range calls {
				i := (round + k) % len(calls)
				l, rate, err := pacedBlock(ctx, n, pushBenchInterval, calls[i].call)
				if err != nil {
					b.Fatal(err)
				}
				lat[i] = append(lat[i], l...)
				if rate > 0 {
					rates = append(rates, rate)
				}
				b.StopTimer()
				idle()
				b.StartTimer()
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(pushBenchInterval.Microseconds()), "interval-µs")
		slices.Sort(rates)
		if len(rates) > 0 {
			b.ReportMetric(rates[len(rates)/2], "sends/s")
		}
		plain := reportPercentiles(b, "plain-", lat[0])
		bound := reportPercentiles(b, "bound-", lat[1])
		eager := reportPercentiles(b, "eager-", lat[2])
		b.ReportMetric(bound/plain, "bound/plain-p50")
		b.ReportMetric(eager/plain, "eager/plain-p50")
	})
}
