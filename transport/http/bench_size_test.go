package http_test

// Benchmarks of the cost per byte (figures in docs/benchmarks.md, section
// "Large messages"): this package's client and server against a plain
// net/http echo of the same bytes, with a message of one text part of
// 300 B, 10 KB and 1 MB, paired as bench_test.go's paired benchmarks, and
// the bytes each side allocates per round trip.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// httpBenchSizes are the text parts of the size benchmarks: the name of
// the sub-benchmark and the length in bytes.
var httpBenchSizes = []struct {
	name string
	n    int
}{{"300B", 300}, {"10KB", 10_000}, {"1MB", 1_000_000}}

// sizeText returns n bytes of plain text: words, a newline every 100 bytes
// or so (escaped in JSON as \n), no other character JSON escapes.
func sizeText(n int) string {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// sizeStacks are the two sides of a size benchmark: a net/http server that
// echoes the request body as the response body (the floor: the same bytes
// both ways, no JSON work), and this package's client and server, whose
// handler completes the task without an artifact (the reply's history
// holds the message, so it carries the text back too).
type sizeStacks struct {
	text      string
	floorBody []byte
	floorURL  string
	floorHC   *http.Client
	client    *a2ahttp.Client
}

func startSizeStacks(tb testing.TB, text string) *sizeStacks {
	tb.Helper()
	ctx := benchContext(tb)
	s := &sizeStacks{text: text}
	ln, base := benchListen(tb)
	serveBench(tb, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	s.floorURL, s.floorHC = base+"/a2a", benchHTTPClient(tb)
	req := requester.TextMessage(text, "", "")
	params, err := req.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	s.floorBody = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":"SendMessage","params":%s}`, req.Message.MessageID, params)

	ln, base = benchListen(tb)
	srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }))
	tb.Cleanup(func() { srv.Close(context.Background()) })
	card := &a2a.AgentCard{Name: "bench", Description: "completes every task at once", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{},
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

// floorCall is one round trip of the echo; the reply must be the request.
func (s *sizeStacks) floorCall(ctx context.Context) error {
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
	if len(b) != len(s.floorBody) {
		return fmt.Errorf("echo: %s, %d bytes back for %d", resp.Status, len(b), len(s.floorBody))
	}
	return nil
}

// bindCall is one SendMessage round trip; the task must come back
// completed, its history holding the text.
func (s *sizeStacks) bindCall(ctx context.Context) error {
	res, err := s.client.SendMessage(ctx, requester.TextMessage(s.text, "", ""))
	if err != nil {
		return err
	}
	if res.Task == nil || res.Task.Status == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("SendMessage: want a completed task, got %+v", res)
	}
	if h := res.Task.History; len(h) == 0 || len(h[0].Parts) != 1 || len(h[0].Parts[0].Content.(a2a.PartText)) != len(s.text) {
		return fmt.Errorf("SendMessage: the history does not hold the %d-byte text", len(s.text))
	}
	return nil
}

// httpAllocated returns the bytes the process has allocated so far.
func httpAllocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// BenchmarkHTTPSizeSendMessage times SendMessage round trips with a text
// part of each size against the echo of the same bytes, alternating blocks
// (500 round trips, 50 at 1 MB), and reports the percentiles, their
// ratios, and the bytes the whole process (client and server) allocates
// per round trip, per side and divided by the text's size.
func BenchmarkHTTPSizeSendMessage(b *testing.B) {
	for _, sz := range httpBenchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startSizeStacks(b, sizeText(sz.n))
			ctx := benchContext(b)
			sides := []func(context.Context) error{s.floorCall, s.bindCall}
			for _, call := range sides {
				warm(b, ctx, 20, call)
			}
			block := httpBenchBlock
			if sz.n >= 500_000 {
				block = 50
			}
			lat := make([][]time.Duration, len(sides))
			for i := range lat {
				lat[i] = make([]time.Duration, 0, b.N)
			}
			var alloc [2]uint64
			b.ResetTimer()
			for round := 0; len(lat[0]) < b.N; round++ {
				n := min(block, b.N-len(lat[0]))
				for k := range sides {
					i := (round + k) % len(sides)
					a0 := httpAllocated()
					for range n {
						t0 := time.Now()
						if err := sides[i](ctx); err != nil {
							b.Fatal(err)
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
					alloc[i] += httpAllocated() - a0
				}
			}
			b.StopTimer()
			f50, f99 := latencyPercentiles(lat[0])
			s50, s99 := latencyPercentiles(lat[1])
			b.ReportMetric(f50, "nethttp-p50-µs")
			b.ReportMetric(s50, "a2abind-p50-µs")
			b.ReportMetric(s50/f50, "p50-ratio")
			b.ReportMetric(f99, "nethttp-p99-µs")
			b.ReportMetric(s99, "a2abind-p99-µs")
			b.ReportMetric(s99/f99, "p99-ratio")
			fB, sB := float64(alloc[0])/float64(b.N), float64(alloc[1])/float64(b.N)
			b.ReportMetric(fB, "nethttp-B/rt")
			b.ReportMetric(sB, "a2abind-B/rt")
			b.ReportMetric(fB/float64(sz.n), "nethttp-B/text-B")
			b.ReportMetric(sB/float64(sz.n), "a2abind-B/text-B")
		})
	}
}

// BenchmarkHTTPSizeThroughput64 measures throughput with 64 requests in
// flight and a text part of each size against the echo: ten rounds of
// b.N/10 round trips (at least 64) of each side, the side that opens a
// round alternating.
func BenchmarkHTTPSizeThroughput64(b *testing.B) {
	for _, sz := range httpBenchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startSizeStacks(b, sizeText(sz.n))
			ctx := benchContext(b)
			sides := []func(context.Context) error{s.floorCall, s.bindCall}
			for _, call := range sides {
				if _, err := concurrent64(ctx, 2*httpBenchInFlight, call); err != nil {
					b.Fatal(err)
				}
			}
			per := max(int64(b.N)/httpBenchRounds, httpBenchInFlight)
			var wall [2]time.Duration
			b.ResetTimer()
			for round := range httpBenchRounds {
				for k := range sides {
					i := (round + k) % len(sides)
					t0 := time.Now()
					if _, err := concurrent64(ctx, per, sides[i]); err != nil {
						b.Fatal(err)
					}
					wall[i] += time.Since(t0)
				}
			}
			b.StopTimer()
			f := float64(per*httpBenchRounds) / wall[0].Seconds()
			a := float64(per*httpBenchRounds) / wall[1].Seconds()
			b.ReportMetric(f, "nethttp-req/s")
			b.ReportMetric(a, "a2abind-req/s")
			b.ReportMetric(a/f, "req/s-ratio")
		})
	}
}

// BenchmarkHTTPSizeSendMessageSDK runs only this package's side of
// BenchmarkHTTPSizeSendMessage, one round trip after another, so that
// -benchmem, -cpuprofile and -memprofile show the client and the server
// alone: allocations per round trip (client and server together, both in
// this process) and where the CPU goes.
func BenchmarkHTTPSizeSendMessageSDK(b *testing.B) {
	for _, sz := range httpBenchSizes {
		b.Run(sz.name, func(b *testing.B) {
			s := startSizeStacks(b, sizeText(sz.n))
			ctx := benchContext(b)
			warm(b, ctx, 20, s.bindCall)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := s.bindCall(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHTTPClientReply measures what the client allocates to read a
// SendMessage reply holding a text of each size, sent with a
// Content-Length or chunked (as servers that stream their JSON send it),
// by a net/http handler that writes prepared bytes: -benchmem's B/op is
// the client's and the server's together, the server's the same in every
// case but the reply's size.
func BenchmarkHTTPClientReply(b *testing.B) {
	for _, sz := range httpBenchSizes {
		for _, chunked := range []bool{false, true} {
			name := sz.name + "/content-length"
			if chunked {
				name = sz.name + "/chunked"
			}
			b.Run(name, func(b *testing.B) {
				ctx := benchContext(b)
				task := &a2a.Task{ID: "t1", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted,
					Message: &a2a.Message{MessageID: "m1", Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText(sizeText(sz.n))}}}}}
				result, err := (&a2a.SendMessageResponse{Payload: task}).MarshalJSON()
				if err != nil {
					b.Fatal(err)
				}
				ln, base := benchListen(b)
				serveBench(b, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					var req struct {
						ID json.RawMessage `json:"id"`
					}
					body, _ := io.ReadAll(r.Body)
					_ = json.Unmarshal(body, &req)
					head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":`
					w.Header().Set("Content-Type", "application/json")
					if !chunked {
						w.Header().Set("Content-Length", fmt.Sprint(len(head)+len(result)+1))
					}
					_, _ = io.WriteString(w, head)
					if chunked {
						w.(http.Flusher).Flush()
					}
					_, _ = w.Write(result)
					_, _ = io.WriteString(w, "}")
				}))
				card := &a2a.AgentCard{SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")}}
				c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{Card: card})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close(context.Background()) })
				msg := requester.TextMessage("hi", "", "")
				call := func() {
					res, err := c.SendMessage(ctx, msg)
					if err != nil {
						b.Fatal(err)
					}
					if res.Task == nil || res.Task.Status.Message == nil {
						b.Fatalf("SendMessage: %+v", res)
					}
				}
				for range 20 {
					call()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					call()
				}
			})
		}
	}
}
