package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor polls cond until it holds; it fails the test after a generous
// bound, which only a broken Sender reaches.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recorder is a PushReporter keeping every report.
type recorder struct {
	mu      sync.Mutex
	reports []agent.PushReport
}

func (r *recorder) PushReport(p agent.PushReport) {
	r.mu.Lock()
	r.reports = append(r.reports, p)
	r.mu.Unlock()
}

func (r *recorder) all() []agent.PushReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.PushReport(nil), r.reports...)
}

// await waits for a report matching pred and returns it.
func (r *recorder) await(t testing.TB, what string, pred func(agent.PushReport) bool) agent.PushReport {
	t.Helper()
	var got agent.PushReport
	waitFor(t, what, func() bool {
		for _, p := range r.all() {
			if pred(p) {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

func (r *recorder) states() []agent.PushState {
	var s []agent.PushState
	for _, p := range r.all() {
		s = append(s, p.State)
	}
	return s
}

func stateIs(s agent.PushState) func(agent.PushReport) bool {
	return func(p agent.PushReport) bool { return p.State == s }
}

// hit is one request a receiver got.
type hit struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a loopback webhook recording what it gets; handle (nil: 200)
// answers the n-th request (from 0).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	hits   []hit
	handle func(w http.ResponseWriter, r *http.Request, n int)
}

func newReceiver(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	rc := &receiver{handle: handle}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.hits)
		rc.hits = append(rc.hits, hit{path: r.URL.Path, header: r.Header.Clone(), body: b, at: time.Now()})
		rc.mu.Unlock()
		if rc.handle != nil {
			rc.handle(w, r, n)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) all() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// gate makes a handler whose first request waits until release is closed
// (or the request is abandoned); later ones answer 200 at once.
func gate(t testing.TB) (handle func(w http.ResponseWriter, r *http.Request, n int), release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release) // before the server's Close, which waits for handlers
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			select {
			case <-ch:
			case <-r.Context().Done():
			}
		}
	}, release
}

// newSender makes a Sender for loopback receivers, closed (abandoning what
// is left) at the end of the test.
func newSender(t testing.TB, cfg Config) *Sender {
	t.Helper()
	cfg.AllowLoopback = true
	return newPolicySender(t, cfg)
}

// newPolicySender is newSender with the address policy of cfg.
func newPolicySender(t testing.TB, cfg Config) *Sender {
	t.Helper()
	if cfg.RetryWaitMin == 0 {
		cfg.RetryWaitMin = time.Millisecond
	}
	if cfg.RetryWaitMax == 0 {
		cfg.RetryWaitMax = 5 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Close(ctx)
	})
	return s
}

func config(rc *receiver, task, id string) a2a.TaskPushNotificationConfig {
	return a2a.TaskPushNotificationConfig{ID: id, TaskID: task, URL: rc.srv.URL + "/hook/" + task + "/" + id}
}

// statusEvent is a status update numbered seq (in its metadata).
func statusEvent(task string, seq int, state a2a.TaskState) *a2a.StreamResponse {
	return &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{
		TaskID: task, ContextID: "ctx-" + task,
		Status:   &a2a.TaskStatus{State: state, Timestamp: "2026-01-02T03:04:05Z"},
		Metadata: map[string]any{"seq": float64(seq)},
	}}
}

func working(task string, seq int) *a2a.StreamResponse {
	return statusEvent(task, seq, a2a.TaskStateWorking)
}

// decode parses and validates a notification with the generated code, and
// returns it with its sequence number.
func decode(t testing.TB, body []byte) (*a2a.StreamResponse, int) {
	t.Helper()
	ev, err := a2a.ParseStreamResponseJSON(body)
	if err != nil {
		t.Fatalf("notification does not parse: %v\n%s", err, body)
	}
	if err := ev.Validate(); err != nil {
		t.Fatalf("notification is not valid: %v\n%s", err, body)
	}
	var md map[string]any
	switch p := ev.Payload.(type) {
	case *a2a.TaskStatusUpdateEvent:
		md = p.Metadata
	case *a2a.TaskArtifactUpdateEvent:
		md = p.Metadata
	}
	seq, ok := md["seq"].(float64)
	if !ok {
		return ev, -1
	}
	return ev, int(seq)
}

func seqs(t testing.TB, hits []hit) []int {
	var s []int
	for _, h := range hits {
		_, n := decode(t, h.body)
		s = append(s, n)
	}
	return s
}
