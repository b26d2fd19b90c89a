package webhook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

// TestSettledConfigsAreDropped: 10,000 tasks, each with a config, each
// pushed to completion; once the pushes are acknowledged the Sender keeps
// nothing of them (package documentation, "Memory").
func TestSettledConfigsAreDropped(t *testing.T) {
	const tasks = 10_000
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	var reports atomic.Int64
	s := newSender(t, Config{Reporter: reporterFunc(func(r agent.PushReport) {
		if r.State != agent.PushDelivered {
			t.Errorf("report %+v", r)
		}
		reports.Add(1)
	})})
	for i := range tasks {
		task := fmt.Sprintf("task-%05d", i)
		cfg := a2a.TaskPushNotificationConfig{ID: "c", TaskID: task, URL: srv.URL + "/hook", Token: "tok-" + task}
		s.Notify(cfg, working(task, 0))
		s.Notify(cfg, statusEvent(task, 1, a2a.TaskStateCompleted))
	}
	waitFor(t, "every push acknowledged", func() bool { return s.Stats().Delivered == 2*tasks })
	waitFor(t, "every config dropped", func() bool { return s.Stats().Configs == 0 })
	if st := s.Stats(); st.Queued != 0 || st.InFlight != 0 || st.Dropped != 0 || st.Discarded != 0 || st.DeadConfigs != 0 || st.Evicted != 0 {
		t.Errorf("stats = %+v", st)
	}
	if n := got.Load(); n != 2*tasks {
		t.Errorf("receiver got %d pushes, want %d", n, 2*tasks)
	}
	waitFor(t, "one delivered report a config", func() bool { return reports.Load() == tasks })

	// A later update of a dropped config is delivered: the binding is
	// made anew.
	cfg := a2a.TaskPushNotificationConfig{ID: "c", TaskID: "task-00000", URL: srv.URL + "/hook"}
	s.Notify(cfg, statusEvent("task-00000", 2, a2a.TaskStateCompleted))
	waitFor(t, "the late push", func() bool { return s.Stats().Delivered == 2*tasks+1 })
	waitFor(t, "dropped again", func() bool { return s.Stats().Configs == 0 })
}

// TestIdleConfigsStayUntilTheirTaskEnds: a config whose last update was not
// terminal (a task waiting for input, say) is kept; its terminal update
// drops it.
func TestIdleConfigsStayUntilTheirTaskEnds(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSender(t, Config{})
	cfg := config(rc, "t1", "c1")
	s.Notify(cfg, working("t1", 0))
	s.Notify(cfg, statusEvent("t1", 1, a2a.TaskStateInputRequired))
	waitFor(t, "two pushes", func() bool { return s.Stats().Delivered == 2 })
	if st := s.Stats(); st.Configs != 1 {
		t.Errorf("a config of a task waiting for input: stats %+v, want it kept", st)
	}
	s.Notify(cfg, statusEvent("t1", 2, a2a.TaskStateFailed))
	waitFor(t, "dropped after the terminal push", func() bool { return s.Stats().Configs == 0 })
	if got := seqs(t, rc.all()); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("receiver got %v", got)
	}
}

// TestADeadConfigStaysDead: a dead config is dropped, but remembered: a
// later update for the same webhook is discarded, neither sent nor
// reported; a new URL is a new registration.
func TestADeadConfigStaysDead(t *testing.T) {
	gone := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
	fresh := newReceiver(t, nil)
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep})
	cfg := config(gone, "t1", "c1")
	s.Notify(cfg, working("t1", 0))
	rep.await(t, "dead report", stateIs(agent.PushDead))
	waitFor(t, "the dead config dropped", func() bool { st := s.Stats(); return st.Configs == 0 && st.InFlight == 0 })
	if st := s.Stats(); st.DeadConfigs != 1 {
		t.Fatalf("stats = %+v, want the dead config remembered", st)
	}
	for i := 1; i <= 3; i++ {
		s.Notify(cfg, working("t1", i))
	}
	s.Notify(cfg, statusEvent("t1", 4, a2a.TaskStateCompleted))
	if st := s.Stats(); st.Discarded != 4 || st.Configs != 0 || st.Queued != 0 {
		t.Errorf("stats = %+v, want 4 discarded at once", st)
	}
	time.Sleep(20 * time.Millisecond)
	if n := gone.count(); n != 1 {
		t.Errorf("the dead webhook got %d requests, want 1", n)
	}
	if got := rep.states(); !slices.Equal(got, []agent.PushState{agent.PushDead}) {
		t.Errorf("reports = %v, want one dead", got)
	}

	// The same config with another token is a new registration too.
	tokened := cfg
	tokened.Token = "new-token"
	s.Notify(tokened, working("t1", 5))
	waitFor(t, "the new registration dead again", func() bool { return gone.count() == 2 })
	rep.await(t, "second dead report", func(agent.PushReport) bool { return len(rep.all()) == 2 })

	revived := config(fresh, "t1", "c1")
	s.Notify(revived, statusEvent("t1", 6, a2a.TaskStateCompleted))
	rep.await(t, "delivered report", stateIs(agent.PushDelivered))
	waitFor(t, "settled", func() bool { st := s.Stats(); return st.Configs == 0 && st.DeadConfigs == 0 })

	// Forget forgets a dead config too.
	s.Notify(cfg, working("t1", 7))
	waitFor(t, "dead again", func() bool { return s.Stats().DeadConfigs == 1 })
	s.Forget("t1", "c1")
	if st := s.Stats(); st.DeadConfigs != 0 {
		t.Errorf("stats after Forget = %+v", st)
	}
}

// TestDeadConfigsRememberedAreBounded: past MaxDeadConfigs the oldest dead
// config is forgotten, and a later update for it is sent again.
func TestDeadConfigsRememberedAreBounded(t *testing.T) {
	gone := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep, MaxDeadConfigs: 3})
	for i := range 5 {
		task := fmt.Sprintf("t%d", i)
		s.Notify(config(gone, task, "c"), working(task, 0))
		waitFor(t, "dead", func() bool { return s.Stats().Dead == uint64(i+1) })
	}
	if st := s.Stats(); st.DeadConfigs != 3 || st.Configs != 0 {
		t.Errorf("stats = %+v, want 3 remembered", st)
	}
	s.Notify(config(gone, "t4", "c"), working("t4", 1)) // remembered: discarded
	s.Notify(config(gone, "t0", "c"), working("t0", 1)) // forgotten: sent, dead again
	waitFor(t, "t0 dead again", func() bool { return s.Stats().Dead == 6 })
	if n := gone.count(); n != 6 {
		t.Errorf("receiver got %d requests, want 6", n)
	}
	// Revivals and deaths many times over leave the memory bounded.
	for i := range 300 {
		cfg := config(gone, "t1", "c")
		cfg.Token = fmt.Sprint(i)
		s.Notify(cfg, working("t1", 2))
		waitFor(t, "dead", func() bool { return s.Stats().Dead == uint64(7+i) })
	}
	s.mu.Lock()
	n, listed := len(s.dead), s.deadList.len()
	s.mu.Unlock()
	if n != 3 || listed > 64 {
		t.Errorf("%d tombstones, %d listed: want 3, at most 64", n, listed)
	}
}

// TestMaxConfigs: past MaxConfigs the config idle for longest is evicted;
// when none is idle, a new config is refused (and not remembered).
func TestMaxConfigs(t *testing.T) {
	rc := newReceiver(t, nil)
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep, MaxConfigs: 2})
	for _, task := range []string{"t1", "t2"} {
		s.Notify(config(rc, task, "c"), working(task, 0))
		waitFor(t, "delivered", func() bool { st := s.Stats(); return st.Queued == 0 && st.InFlight == 0 })
	}
	s.Notify(config(rc, "t1", "c"), working("t1", 1)) // t2 is now the idlest
	s.Notify(config(rc, "t3", "c"), working("t3", 0))
	waitFor(t, "delivered", func() bool { return s.Stats().Delivered == 4 })
	s.mu.Lock()
	_, t1 := s.bindings[key{"t1", "c"}]
	_, t2 := s.bindings[key{"t2", "c"}]
	s.mu.Unlock()
	if st := s.Stats(); st.Evicted != 1 || st.Configs != 2 || !t1 || t2 {
		t.Errorf("stats = %+v, t1 kept %v, t2 kept %v: want t2 evicted", st, t1, t2)
	}

	handle, release := gate(t)
	held := newReceiver(t, handle)
	busy := newSender(t, Config{Reporter: rep, MaxConfigs: 1})
	busy.Notify(config(held, "b1", "c"), statusEvent("b1", 0, a2a.TaskStateCompleted))
	waitFor(t, "held", func() bool { return held.count() == 1 })
	busy.Notify(config(held, "b2", "c"), working("b2", 0))
	r := rep.await(t, "refused report", func(r agent.PushReport) bool { return r.TaskID == "b2" })
	if r.State != agent.PushRefused || !strings.Contains(r.Reason, "MaxConfigs") {
		t.Errorf("report = %+v", r)
	}
	if st := busy.Stats(); st.Refused != 1 || st.Discarded != 1 || st.DeadConfigs != 0 || st.Configs != 1 {
		t.Errorf("stats = %+v", st)
	}
	release()
	waitFor(t, "b1 settled", func() bool { return busy.Stats().Configs == 0 })
	busy.Notify(config(held, "b2", "c"), working("b2", 1))
	waitFor(t, "b2 delivered", func() bool { return busy.Stats().Delivered == 2 })
}

// TestTimeoutBoundsEachAttempt: an attempt with no answer within Timeout
// is cut and retried; so is one whose answer does not end in time, and an
// answer whose body trickles does not hold the worker.
func TestTimeoutBoundsEachAttempt(t *testing.T) {
	t.Run("no answer: retried, then delivered", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				<-r.Context().Done()
			}
		})
		rep := &recorder{}
		s := newSender(t, Config{Reporter: rep, Timeout: 100 * time.Millisecond})
		cfg := config(rc, "t1", "c1")
		s.Notify(cfg, working("t1", 0))
		s.Notify(cfg, working("t1", 1))
		waitFor(t, "delivered", func() bool { return s.Stats().Delivered == 2 })
		reps := rep.all()
		if got := rep.states(); !slices.Equal(got, []agent.PushState{agent.PushFailing, agent.PushDelivered}) {
			t.Fatalf("reports = %v", got)
		}
		if reps[0].Reason != "no answer in time" {
			t.Errorf("failing report = %+v", reps[0])
		}
		if got := seqs(t, rc.all()); !slices.Equal(got, []int{0, 0, 1}) {
			t.Errorf("receiver got %v", got)
		}
	})
	t.Run("never an answer: dead", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
		rep := &recorder{}
		s := newSender(t, Config{Reporter: rep, Timeout: 50 * time.Millisecond, MaxRetries: 2})
		s.Notify(config(rc, "t1", "c1"), working("t1", 0))
		r := rep.await(t, "dead report", stateIs(agent.PushDead))
		if r.Reason != "gave up after 3 attempts: no answer in time" {
			t.Errorf("report = %+v", r)
		}
		if st := s.Stats(); st.Attempts != 3 || st.Retries != 2 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("a body that trickles is cut", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte("{"))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		})
		s := newSender(t, Config{Timeout: 100 * time.Millisecond})
		cfg := config(rc, "t1", "c1")
		s.Notify(cfg, working("t1", 0))
		s.Notify(cfg, working("t1", 1))
		waitFor(t, "both delivered", func() bool { st := s.Stats(); return st.Delivered == 2 && st.InFlight == 0 })
		if st := s.Stats(); st.Attempts != 2 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("a wait before a retry is not cut by the deadline", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		s := newSender(t, Config{Timeout: 100 * time.Millisecond, RetryWaitMax: 2 * time.Second})
		s.Notify(config(rc, "t1", "c1"), working("t1", 0))
		waitFor(t, "delivered", func() bool { return s.Stats().Delivered == 1 })
		hits := rc.all()
		if len(hits) != 2 || hits[1].at.Sub(hits[0].at) < time.Second {
			t.Errorf("%d requests; the retry came %v after the first", len(hits), hits[len(hits)-1].at.Sub(hits[0].at))
		}
	})
}

// TestCloseCutsAnAttemptUnderWay: abandoning cancels the request even with
// its deadline far off.
func TestCloseCutsAnAttemptUnderWay(t *testing.T) {
	handle, _ := gate(t)
	rc := newReceiver(t, handle)
	s := newSender(t, Config{Timeout: time.Hour})
	s.Notify(config(rc, "t1", "c1"), working("t1", 0))
	waitFor(t, "held", func() bool { return rc.count() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); err != context.DeadlineExceeded {
		t.Errorf("Close = %v", err)
	}
}

// blockedReporter holds the first report until released, and counts the
// reports it gets.
type blockedReporter struct {
	first   chan struct{}
	release chan struct{}
	mu      sync.Mutex
	n       int
}

func (r *blockedReporter) PushReport(agent.PushReport) {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	if n == 1 {
		close(r.first)
		<-r.release
	}
}

// TestPendingReportsBounded: with the Reporter stuck, the reports waiting
// for it stop at MaxConfigs; the rest are counted, not kept.
func TestPendingReportsBounded(t *testing.T) {
	handle, release := gate(t)
	held := newReceiver(t, handle)
	rep := &blockedReporter{first: make(chan struct{}), release: make(chan struct{})}
	s := newSender(t, Config{Reporter: rep, MaxConfigs: 1})
	s.Notify(config(held, "b0", "c"), working("b0", 0))
	waitFor(t, "held", func() bool { return held.count() == 1 })
	// Every other config is refused for MaxConfigs, each with a report.
	s.Notify(config(held, "r0", "c"), working("r0", 0))
	<-rep.first // the reporting goroutine is stuck on r0's report
	const more = 50
	for i := range more {
		task := fmt.Sprintf("r%d", i+1)
		s.Notify(config(held, task, "c"), working(task, 0))
	}
	s.mu.Lock()
	pending := len(s.reports)
	s.mu.Unlock()
	if st := s.Stats(); pending != 1 || st.ReportsDropped != more-1 {
		t.Errorf("pending %d, dropped %d; want 1 and %d", pending, st.ReportsDropped, more-1)
	}
	close(rep.release)
	release()
}
