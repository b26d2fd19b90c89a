package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// benchBody is the fixed SendMessage request every round trip posts. With
// no taskId, each one makes a new task.
const benchBody = `{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`

// BenchmarkServerSendMessage measures a SendMessage round trip over
// loopback, driven by a plain net/http client: this package's handler
// (a task made, completed by the handler, stored, answered), a plain
// net/http JSON echo (the floor: read, decode, encode, write) and
// a2a-go v2.3.1's JSON-RPC server making and completing a task the same
// way. The serial runs report the latency percentiles of one client; the
// parallel runs the throughput of many.
func BenchmarkServerSendMessage(b *testing.B) {
	servers := []struct {
		name string
		make func(b *testing.B, base string) http.Handler
	}{
		{"a2abind", benchA2ABind},
		{"echo", func(*testing.B, string) http.Handler { return http.HandlerFunc(jsonEcho) }},
		{"a2a-go", func(*testing.B, string) http.Handler {
			return a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(goCompleter{}))
		}},
	}
	for _, s := range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		base := "http://" + ln.Addr().String()
		hs := &http.Server{Handler: s.make(b, base)}
		go hs.Serve(ln)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
		endpoint := base + "/a2a"
		// Every server answers the request with a completed task.
		if out := roundTrip(b, client, endpoint, nil); !bytes.Contains(out, []byte("TASK_STATE_COMPLETED")) && s.name != "echo" {
			b.Fatalf("%s answers %s", s.name, out)
		}
		b.Run(s.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, 1<<16)
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				buf = roundTrip(b, client, endpoint, buf[:0])
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
		b.Run(s.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8) // 16 clients on 2 cores
			var n atomic.Int64
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, 4096)
				for pb.Next() {
					buf = roundTrip(b, client, endpoint, buf[:0])
					n.Add(1)
				}
			})
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "req/s")
		})
		hs.Close()
		client.CloseIdleConnections()
	}
}

// benchA2ABind is this package's handler over a runtime whose handler
// completes every task at once, keeping finished tasks for a minute.
func benchA2ABind(b *testing.B, base string) http.Handler {
	rt := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		return t.Complete(ctx, "done")
	}), agent.WithStore(taskstore.NewMemory(nil, taskstore.KeepFinishedFor(time.Minute))), agent.WithMaxTurns(4096))
	b.Cleanup(func() { rt.Close(context.Background()) })
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: rt, Card: srvCard(base+"/a2a", true, false)})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux, "/a2a")
	return mux
}

// roundTrip posts benchBody and returns the reply, appended to buf.
func roundTrip(b testing.TB, c *http.Client, endpoint string, buf []byte) []byte {
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(benchBody))
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["A2a-Version"] = []string{"1.0"}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	w := bytes.NewBuffer(buf)
	_, err = io.Copy(w, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	return w.Bytes()
}

// jsonEcho is the floor: a plain net/http handler that reads a JSON-RPC
// request and answers its params as the result, with encoding/json.
func jsonEcho(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", in.ID, in.Params})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// goCompleter is an a2a-go executor that makes a task and completes it
// with a message, as benchA2ABind's handler does.
type goCompleter struct{}

func (goCompleter) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted,
			goa2a.NewMessage(goa2a.MessageRoleAgent, goa2a.NewTextPart("done"))), nil)
	}
}

func (goCompleter) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}
