package webhook

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// BenchmarkDeliver64Tasks measures notifications delivered per second to a
// loopback receiver (in the same process, answering 200) with 64 tasks in
// flight, each with one config and its own producer notifying a stream of
// status updates. One op is one notification, from Notify to the 2xx;
// allocations include the receiver's. "connections" is how many TCP
// connections the receiver accepted: kept alive, about one a worker (a few
// more when the transport dials while a connection is coming back).
// Target: 5,000 notifications/s on 2 cores (docs/benchmarks.md, "Push
// deliveries (agent/webhook)").
func BenchmarkDeliver64Tasks(b *testing.B) {
	const tasks = 64
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	s, err := New(Config{AllowLoopback: true, QueueSize: b.N/tasks + 1})
	if err != nil {
		b.Fatal(err)
	}
	cfgs := make([]a2a.TaskPushNotificationConfig, tasks)
	evs := make([]*a2a.StreamResponse, tasks)
	for i := range tasks {
		task := fmt.Sprintf("task-%02d", i)
		cfgs[i] = a2a.TaskPushNotificationConfig{ID: "cfg", TaskID: task, URL: srv.URL + "/hook/" + task, Token: "token-" + task}
		evs[i] = &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{
			TaskID: task, ContextID: "ctx-" + task,
			Status: &a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: "2026-01-02T03:04:05Z", Message: &a2a.Message{
				MessageID: "m-" + task, Role: a2a.RoleAgent,
				Parts: []a2a.Part{{Content: a2a.PartText("working on step 3 of 7: fetching the quarterly figures")}},
			}},
		}}
	}

	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range tasks {
		n := b.N / tasks
		if i < b.N%tasks {
			n++
		}
		wg.Go(func() {
			for range n {
				s.Notify(cfgs[i], evs[i])
			}
		})
	}
	wg.Wait()
	for s.Stats().Delivered < uint64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	b.ReportMetric(float64(conns.Load()), "connections")
	if st := s.Stats(); st.Dropped != 0 || st.Attempts != uint64(b.N) {
		b.Fatalf("stats = %+v", st)
	}
	if err := s.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}
