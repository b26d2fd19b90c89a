package http_test

// Benchmarks of the HTTP binding (figures in docs/benchmarks.md, section
// "HTTP binding (JSON-RPC over HTTP)"): this package's server and client
// against a plain net/http JSON echo (the floor) and against the official
// Go SDK's JSON-RPC server and client (github.com/a2aproject/a2a-go/v2),
// all on loopback servers in one process, side by side in one run. The
// paired sub-benchmarks alternate blocks of the stacks so that all see the
// same machine on a shared host whose speed drifts; rely on their ratios.
// Nothing here asserts on time: setup failures and wrong answers fail,
// speed never does. The approach is transport/mqtt/bench_test.go's
// (BenchmarkRequestReply, BenchmarkPipelined64).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

const (
	// httpBenchInFlight is the number of requests in flight in
	// BenchmarkHTTPThroughput64.
	httpBenchInFlight = 64
	// httpBenchBlock is the number of round trips of one stack in a row in
	// the paired latency benchmarks.
	httpBenchBlock = 500
	// httpBenchRounds is the number of rounds of the paired throughput
	// benchmark; each round runs every stack once.
	httpBenchRounds = 10
)

// The stacks, in the order the paired benchmarks report them.
const (
	stackNetHTTP = "nethttp"
	stackA2AGo   = "a2ago"
	stackA2ABind = "a2abind"
)

// httpStacks are the three stacks of the benchmarks, each a loopback
// server and a client for it.
type httpStacks struct {
	// floorBody is the net/http echo's request: a JSON-RPC SendMessage of
	// the shape this package's client sends.
	floorBody []byte
	floorURL  string
	floorHC   *http.Client
	goClient  *a2aclient.Client
	client    *a2ahttp.Client
}

// benchHTTPClient is the http.Client of the floor and of a2a-go's client:
// net/http's default transport with the idle pool of this package's
// default client (64 connections per host), so that no stack opens and
// closes connections under 64 concurrent callers (http.DefaultTransport
// keeps 2 per host).
func benchHTTPClient(tb testing.TB) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, httpBenchInFlight
	tb.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t}
}

// benchListen listens on a loopback port and returns the listener and its
// base URL.
func benchListen(tb testing.TB) (net.Listener, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// serveBench serves h on ln until cleanup.
func serveBench(tb testing.TB, ln net.Listener, h http.Handler) {
	s := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.Serve(ln) }()
	tb.Cleanup(func() { _ = s.Close() })
}

// startHTTPStacks starts the three servers and their clients.
func startHTTPStacks(tb testing.TB) *httpStacks {
	tb.Helper()
	ctx := benchContext(tb)
	s := &httpStacks{}

	// nethttp: encoding/json both ways, nothing else.
	ln, base := benchListen(tb)
	serveBench(tb, ln, http.HandlerFunc(floorEcho))
	s.floorURL, s.floorHC = base+"/a2a", benchHTTPClient(tb)
	var err error
	if s.floorBody, err = floorRequestBody(); err != nil {
		tb.Fatal(err)
	}

	// a2ago: a2asrv's JSON-RPC handler over its default request handler
	// (in-memory task store), and a2aclient's JSON-RPC transport.
	ln, base = benchListen(tb)
	goCard := &goa2a.AgentCard{Name: "bench", Description: "completes every task at once", Version: "1.0.0",
		SupportedInterfaces: []*goa2a.AgentInterface{goa2a.NewAgentInterface(base+"/a2a", goa2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Capabilities: goa2a.AgentCapabilities{Streaming: true},
		Skills:       []goa2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "completes", Tags: []string{"echo"}}}}
	mux := http.NewServeMux()
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(completeAtOnce{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(goCard))
	serveBench(tb, ln, mux)
	if s.goClient, err = a2aclient.NewFromCard(ctx, goCard, a2aclient.WithJSONRPCTransport(benchHTTPClient(tb))); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.goClient.Destroy() })

	// a2abind: this package's Handler and Client, the client resolving
	// the endpoint from the card at the base URL.
	ln, base = benchListen(tb)
	srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }))
	tb.Cleanup(func() { srv.Close(context.Background()) })
	streaming := true
	card := &a2a.AgentCard{Name: "bench", Description: "completes every task at once", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &streaming},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "completes", Tags: []string{"echo"}}}}
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = h.Serve(ln, "/a2a") }()
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	if s.client, err = a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.client.Close(context.Background()) })
	return s
}

// benchContext bounds a benchmark's setup and loop generously (running
// out of it is a failure, never a timing assertion), canceled at cleanup.
func benchContext(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// completeAtOnce is a2a-go's AgentExecutor of the benchmarks: its one
// event is the task, already completed. That is a2a-go's cheapest way to
// complete a task (one write of its task store); the submitted task
// followed by a completed status update (a2asrv's ExampleAgentExecutor
// without the working state and the artifact), which is what this
// package's runtime does for a handler that returns at once, costs a2a-go
// about twice the allocations.
type completeAtOnce struct{}

func (completeAtOnce) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		t := goa2a.NewSubmittedTask(ec, ec.Message)
		t.Status.State = goa2a.TaskStateCompleted
		yield(t, nil)
	}
}

func (completeAtOnce) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

// floorRequest is what the net/http echo decodes: a JSON-RPC SendMessage.
type floorRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Message struct {
			MessageID string `json:"messageId"`
			TaskID    string `json:"taskId"`
			ContextID string `json:"contextId"`
			Role      string `json:"role"`
			Parts     []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

// floorResponse is the net/http echo's answer: a JSON-RPC response holding
// a completed task.
type floorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  struct {
		Task struct {
			ID        string `json:"id"`
			ContextID string `json:"contextId"`
			Status    struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"task"`
	} `json:"result"`
}

// floorEcho is the floor's server: it decodes the request and answers with
// a completed task of the request's ids.
func floorEcho(w http.ResponseWriter, r *http.Request) {
	var req floorRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != string(a2a.MethodSendMessage) {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	resp := floorResponse{JSONRPC: "2.0", ID: req.ID}
	resp.Result.Task.ID, resp.Result.Task.ContextID = req.Params.Message.TaskID, req.Params.Message.ContextID
	resp.Result.Task.Status.State = string(a2a.TaskStateCompleted)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&resp)
}

// floorRequestBody is a SendMessage request of the shape this package's
// client sends, with a task and context id (about 300 bytes).
func floorRequestBody() ([]byte, error) {
	req := requester.TextMessage("ping", "5d3c1f8e-2b7a-4c9d-8e6f-1a2b3c4d5e6f", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77")
	params, err := req.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":"SendMessage","params":%s}`, req.Message.MessageID, params), nil
}

// floorCall is one round trip of the floor.
func (s *httpStacks) floorCall(ctx context.Context) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.floorURL, bytes.NewReader(s.floorBody))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := s.floorHC.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var out floorResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return err
	}
	if out.Result.Task.Status.State != string(a2a.TaskStateCompleted) {
		return fmt.Errorf("floor: %s %s", resp.Status, b)
	}
	return nil
}

// goCall is one SendMessage round trip of a2a-go's client and server.
func (s *httpStacks) goCall(ctx context.Context) error {
	res, err := s.goClient.SendMessage(ctx, &goa2a.SendMessageRequest{
		Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("ping"))})
	if err != nil {
		return err
	}
	if tk, ok := res.(*goa2a.Task); !ok || tk.Status.State != goa2a.TaskStateCompleted {
		return fmt.Errorf("a2a-go SendMessage: want a completed task, got %+v", res)
	}
	return nil
}

// bindCall is one SendMessage round trip of this package's client and
// server.
func (s *httpStacks) bindCall(ctx context.Context) error {
	res, err := s.client.SendMessage(ctx, requester.TextMessage("ping", "", ""))
	if err != nil {
		return err
	}
	if res.Task == nil || res.Task.Status == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("SendMessage: want a completed task, got %+v", res)
	}
	return nil
}

// errNoTaskFirst reports a stream whose first item is not the task.
var errNoTaskFirst = errors.New("SendStreamingMessage: the first item is not the task")

// streamFirst sends a streaming message and returns how long the first
// item (the task) took to arrive; the rest of the stream is drained, not
// timed, and must end with the completed status.
func (s *httpStacks) streamFirst(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	var first time.Duration
	n := 0
	var last a2a.TaskState
	for it, err := range s.client.SendStreamingMessage(ctx, requester.TextMessage("ping", "", "")) {
		if err != nil {
			return 0, err
		}
		if n == 0 {
			first = time.Since(t0)
			if _, ok := it.Payload.(*a2a.Task); !ok {
				return 0, errNoTaskFirst
			}
		}
		n++
		if u, ok := it.Payload.(*a2a.TaskStatusUpdateEvent); ok && u.Status != nil {
			last = u.Status.State
		}
	}
	if last != a2a.TaskStateCompleted {
		return 0, fmt.Errorf("SendStreamingMessage: %d items, last state %q, want %s", n, last, a2a.TaskStateCompleted)
	}
	return first, nil
}

// stack is one stack's round trip, by name.
type stack struct {
	name string
	call func(context.Context) error
}

func (s *httpStacks) stacks() []stack {
	return []stack{{stackNetHTTP, s.floorCall}, {stackA2AGo, s.goCall}, {stackA2ABind, s.bindCall}}
}

// warm does n round trips of call, untimed.
func warm(tb testing.TB, ctx context.Context, n int, call func(context.Context) error) {
	tb.Helper()
	for range n {
		if err := call(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

// latencyPercentiles sorts d and returns its median and 99th percentile in
// µs.
func latencyPercentiles(d []time.Duration) (p50, p99 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	pct := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e3 }
	return pct(0.50), pct(0.99)
}

// reportPercentiles reports the median and 99th percentile of d, named
// prefix+"p50-µs" and prefix+"p99-µs".
func reportPercentiles(b *testing.B, prefix string, d []time.Duration) (p50 float64) {
	p50, p99 := latencyPercentiles(d)
	b.ReportMetric(p50, prefix+"p50-µs")
	b.ReportMetric(p99, prefix+"p99-µs")
	return p50
}

// pairedBlocks times b.N calls of each stack, in blocks of httpBenchBlock
// calls of one stack at a time, the stack that opens a round rotating, and
// returns each stack's latencies. between, when not nil, runs untimed
// after each block. The timer is stopped on return.
func pairedBlocks(b *testing.B, ctx context.Context, sts []stack, between func()) [][]time.Duration {
	lat := make([][]time.Duration, len(sts))
	for i := range lat {
		lat[i] = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for round := 0; len(lat[0]) < b.N; round++ {
		n := min(httpBenchBlock, b.N-len(lat[0]))
		for k := range sts {
			i := (round + k) % len(sts)
			for range n {
				t0 := time.Now()
				if err := sts[i].call(ctx); err != nil {
					b.Fatal(err)
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
			if between != nil {
				b.StopTimer()
				between()
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	return lat
}

// BenchmarkHTTPSendMessage times one SendMessage round trip (to a
// completed task), one at a time, on each stack; paired alternates blocks
// of 500 round trips of the three stacks and reports each median and the
// ratios a2abind/nethttp (target: at most 2) and a2ago/a2abind. Allocations
// are the whole process's: client and server.
func BenchmarkHTTPSendMessage(b *testing.B) {
	s := startHTTPStacks(b)
	for _, st := range s.stacks() {
		b.Run(st.name, func(b *testing.B) {
			ctx := benchContext(b)
			warm(b, ctx, 100, st.call)
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
			reportPercentiles(b, "", lat)
		})
	}
	// paired: each block pays for its own garbage (alternating single
	// calls would let one stack absorb GC work another's allocations
	// cause); the stack that opens a round rotates, so none always runs
	// right after the same other one.
	b.Run("paired", func(b *testing.B) {
		ctx := benchContext(b)
		sts := s.stacks()
		for _, st := range sts {
			warm(b, ctx, 100, st.call)
		}
		lat := pairedBlocks(b, ctx, sts, nil)
		floor := reportPercentiles(b, stackNetHTTP+"-", lat[0])
		goP50 := reportPercentiles(b, stackA2AGo+"-", lat[1])
		bind := reportPercentiles(b, stackA2ABind+"-", lat[2])
		b.ReportMetric(bind/floor, "a2abind/nethttp-p50")
		b.ReportMetric(goP50/bind, "a2ago/a2abind-p50")
	})
}

// BenchmarkHTTPThroughput64 measures throughput with 64 requests in
// flight: 64 goroutines each doing sequential SendMessage round trips, b.N
// in all, on each stack; paired alternates rounds of the three stacks (ten
// rounds) and reports each one's requests over its own summed wall time,
// and the ratio a2abind/a2ago (target: at least 3).
func BenchmarkHTTPThroughput64(b *testing.B) {
	s := startHTTPStacks(b)
	for _, st := range s.stacks() {
		b.Run(st.name, func(b *testing.B) {
			ctx := benchContext(b)
			if _, err := concurrent64(ctx, 4*httpBenchInFlight, st.call); err != nil { // warm-up
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			lat, err := concurrent64(ctx, int64(b.N), st.call)
			elapsed := time.Since(t0)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			reportPercentiles(b, "", lat)
		})
	}
	b.Run("paired", func(b *testing.B) {
		ctx := benchContext(b)
		sts := s.stacks()
		for _, st := range sts {
			if _, err := concurrent64(ctx, 4*httpBenchInFlight, st.call); err != nil {
				b.Fatal(err)
			}
		}
		per := max(int64(b.N)/httpBenchRounds, httpBenchInFlight)
		wall := make([]time.Duration, len(sts))
		b.ResetTimer()
		for round := range httpBenchRounds {
			for k := range sts {
				i := (round + k) % len(sts)
				t0 := time.Now()
				if _, err := concurrent64(ctx, per, sts[i].call); err != nil {
					b.Fatal(err)
				}
				wall[i] += time.Since(t0)
			}
		}
		b.StopTimer()
		rate := make([]float64, len(sts))
		for i, st := range sts {
			rate[i] = float64(per*httpBenchRounds) / wall[i].Seconds()
			b.ReportMetric(rate[i], st.name+"-req/s")
		}
		b.ReportMetric(rate[2]/rate[1], "a2abind/a2ago-req/s")
		b.ReportMetric(rate[2]/rate[0], "a2abind/nethttp-req/s")
	})
}

// concurrent64 does n round trips of call, httpBenchInFlight at a time,
// and returns their durations.
func concurrent64(ctx context.Context, n int64, call func(context.Context) error) ([]time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	lats := make([][]time.Duration, httpBenchInFlight)
	for w := range httpBenchInFlight {
		lats[w] = make([]time.Duration, 0, n/httpBenchInFlight+1)
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

// BenchmarkHTTPStreamFirstEvent times, on this package's stack, how long
// SendStreamingMessage takes to yield its first item (the task; the
// stream is then drained, untimed); paired alternates blocks of 500
// streams and of 500 plain SendMessage round trips and reports both
// medians and their ratio (target: at most 2).
func BenchmarkHTTPStreamFirstEvent(b *testing.B) {
	s := startHTTPStacks(b)
	b.Run("stream", func(b *testing.B) {
		ctx := benchContext(b)
		for range 100 {
			if _, err := s.streamFirst(ctx); err != nil {
				b.Fatal(err)
			}
		}
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			d, err := s.streamFirst(ctx)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
		}
		b.StopTimer()
		reportPercentiles(b, "first-", lat)
	})
	b.Run("paired", func(b *testing.B) {
		ctx := benchContext(b)
		warm(b, ctx, 100, s.bindCall)
		for range 100 {
			if _, err := s.streamFirst(ctx); err != nil {
				b.Fatal(err)
			}
		}
		first := make([]time.Duration, 0, b.N)
		send := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for round := 0; len(first) < b.N; round++ {
			n := min(httpBenchBlock, b.N-len(first))
			for k := range 2 {
				if (round+k)%2 == 0 {
					for range n {
						d, err := s.streamFirst(ctx)
						if err != nil {
							b.Fatal(err)
						}
						first = append(first, d)
					}
					continue
				}
				for range n {
					t0 := time.Now()
					if err := s.bindCall(ctx); err != nil {
						b.Fatal(err)
					}
					send = append(send, time.Since(t0))
				}
			}
		}
		b.StopTimer()
		f50 := reportPercentiles(b, "first-", first)
		s50 := reportPercentiles(b, "send-", send)
		b.ReportMetric(f50/s50, "first/send-p50")
	})
}
