package agent

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
)

// The benchmarks below measure what an agent keeps, not how fast it goes:
// run each once (-benchtime 1x) and read heap-MiB, the live heap after a
// garbage collection (runtime.ReadMemStats), and tasks, what the store
// lists. docs/benchmarks.md, "Bounded memory", has the commands and the
// figures.

// liveHeap returns the live heap in MiB after a full collection.
func liveHeap() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// serveTexts sends n SendMessage requests, each a new task in a new
// context, as a transport would (decode, serve, encode the reply).
func serveTexts(b *testing.B, s *Server, n int, text string) {
	ctx := context.Background()
	sink := SinkFunc(func(_ context.Context, r Reply) error {
		_, err := r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingMQTT)
		return err
	})
	for range n {
		msg := &a2a.Message{MessageID: uuid.NewString(), TaskID: uuid.NewString(), ContextID: uuid.NewString(), Role: a2a.RoleUser,
			Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
		data, err := jsonrpc.EncodeRequest(json.RawMessage(`"1"`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			b.Fatal(err)
		}
		req, _, perr := jsonrpc.DecodeRequest(data)
		if perr != nil {
			b.Fatal(perr)
		}
		if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
			b.Fatal(err)
		}
	}
}

// storedTasks counts the tasks the store lists.
func storedTasks(b *testing.B, s *Server) int {
	p, err := s.Store().List(context.Background(), taskstore.Filter{PageSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	return p.Total
}

// memoryHandler works like the reference agent: a status, an artifact
// echoing the text, completion; "ask" asks for input instead.
var memoryHandler = HandlerFunc(func(ctx context.Context, t *Turn) error {
	if strings.HasPrefix(t.Text(), "ask") && !t.Resumed {
		return t.AskInput(ctx, "which one?")
	}
	if err := t.Working(ctx, "working on it"); err != nil {
		return err
	}
	return t.Artifact(ctx, a2a.Artifact{ArtifactID: "result", Name: "result", Parts: []a2a.Part{{Content: a2a.PartText(t.Text())}}}, ArtifactOptions{LastChunk: true})
})

// BenchmarkHeapAfter100kTasks: 100,000 tasks served and completed by a
// server with the default options (its default store).
func BenchmarkHeapAfter100kTasks(b *testing.B) {
	for b.Loop() {
		before := liveHeap()
		s := NewServer(memoryHandler)
		serveTexts(b, s, 100_000, "hello, agent")
		b.ReportMetric(liveHeap()-before, "heap-MiB")
		b.ReportMetric(float64(storedTasks(b, s)), "tasks")
		s.Close(context.Background())
	}
}

// BenchmarkHeapAfterAbandonedWaitingTasks: 10,000 tasks left waiting for
// input by their requesters, then the clock (WithClock, injected: nothing
// sleeps) moved past the idle expiry, one more request served, heap
// measured.
func BenchmarkHeapAfterAbandonedWaitingTasks(b *testing.B) {
	for b.Loop() {
		var mu sync.Mutex
		now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		before := liveHeap()
		s := NewServer(memoryHandler, WithClock(clock), WithContextTTL(time.Hour))
		serveTexts(b, s, 10_000, "ask me")
		b.ReportMetric(liveHeap()-before, "waiting-heap-MiB")
		b.ReportMetric(float64(storedTasks(b, s)), "waiting-tasks")
		mu.Lock()
		now = now.Add(2 * time.Hour)
		mu.Unlock()
		serveTexts(b, s, 1, "hello")
		b.ReportMetric(liveHeap()-before, "heap-MiB")
		b.ReportMetric(float64(storedTasks(b, s)), "tasks")
		s.Close(context.Background())
	}
}

// BenchmarkHeapAfterTwentyLargeMessages: twenty tasks whose message is a
// text of 4 MiB less 1 KiB (just within the default request limit), each
// completed with an artifact echoing it.
func BenchmarkHeapAfterTwentyLargeMessages(b *testing.B) {
	text := strings.Repeat("x", 4<<20-1<<10)
	for b.Loop() {
		before := liveHeap()
		s := NewServer(memoryHandler)
		serveTexts(b, s, 20, text)
		b.ReportMetric(liveHeap()-before, "heap-MiB")
		b.ReportMetric(float64(storedTasks(b, s)), "tasks")
		s.Close(context.Background())
	}
}
