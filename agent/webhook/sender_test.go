package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

func TestNotificationCarriesHeadersAndGeneratedJSON(t *testing.T) {
	const token, secret = "tok-7f3a", "cred-91bc"
	artifact := &a2a.StreamResponse{Payload: &a2a.TaskArtifactUpdateEvent{
		TaskID: "t1", ContextID: "ctx-t1", LastChunk: true,
		Artifact: &a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText("hello")}}},
		Metadata: map[string]any{"seq": float64(1)},
	}}
	cases := []struct {
		name      string
		token     string
		auth      *a2a.AuthenticationInfo
		wantToken string
		wantAuth  string
	}{
		{name: "no token, no authentication"},
		{name: "token only", token: token, wantToken: token},
		{name: "bearer credentials", auth: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: secret}, wantAuth: "Bearer " + secret},
		{name: "token and bearer", token: token, auth: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: secret}, wantToken: token, wantAuth: "Bearer " + secret},
		{name: "scheme without credentials sends no Authorization", auth: &a2a.AuthenticationInfo{Scheme: "Bearer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, nil)
			rep := &recorder{}
			var logs bytes.Buffer
			s := newSender(t, Config{Reporter: rep, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			cfg := config(rc, "t1", "c1")
			cfg.Token, cfg.Authentication = tc.token, tc.auth
			events := []*a2a.StreamResponse{working("t1", 0), artifact, statusEvent("t1", 2, a2a.TaskStateCompleted)}
			for _, ev := range events {
				s.Notify(cfg, ev)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			hits := rc.all()
			if len(hits) != len(events) {
				t.Fatalf("receiver got %d requests, want %d", len(hits), len(events))
			}
			for i, h := range hits {
				if got := h.header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type = %q", got)
				}
				if got := h.header.Get("A2A-Notification-Token"); got != tc.wantToken {
					t.Errorf("A2A-Notification-Token = %q, want %q", got, tc.wantToken)
				}
				if got := h.header.Get("Authorization"); got != tc.wantAuth {
					t.Errorf("Authorization = %q, want %q", got, tc.wantAuth)
				}
				decode(t, h.body)
				want, err := events[i].MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(h.body, want) {
					t.Errorf("body %d = %s, want %s", i, h.body, want)
				}
			}
			if got, want := rep.states(), []agent.PushState{agent.PushDelivered}; !slices.Equal(got, want) {
				t.Errorf("reports = %v, want %v (changes only)", got, want)
			}
			if r := rep.all()[0]; r.TaskID != "t1" || r.ConfigID != "c1" || r.Status != http.StatusOK || r.At.IsZero() {
				t.Errorf("report = %+v", r)
			}
			if st := s.Stats(); st.Delivered != 3 || st.Attempts != 3 || st.Queued != 0 {
				t.Errorf("stats = %+v", st)
			}
			for _, secretText := range []string{token, secret} {
				if strings.Contains(logs.String(), secretText) {
					t.Errorf("log holds a token or credentials:\n%s", logs.String())
				}
			}
		})
	}
}

func TestEachConfigIsDeliveredInOrderUnderConcurrency(t *testing.T) {
	const configs, events = 40, 150
	rc := newReceiver(t, nil)
	s := newSender(t, Config{Workers: 8, QueueSize: events})
	var wg sync.WaitGroup
	for c := range configs {
		wg.Go(func() {
			task := fmt.Sprintf("t%d", c)
			cfg := config(rc, task, "c")
			for i := range events {
				s.Notify(cfg, working(task, i))
			}
		})
	}
	wg.Wait()
	waitFor(t, "every notification delivered", func() bool { return s.Stats().Delivered == configs*events })
	byPath := map[string][]int{}
	for _, h := range rc.all() {
		_, n := decode(t, h.body)
		byPath[h.path] = append(byPath[h.path], n)
	}
	if len(byPath) != configs {
		t.Fatalf("%d configs reached, want %d", len(byPath), configs)
	}
	for path, got := range byPath {
		if len(got) != events || !slices.IsSorted(got) || got[0] != 0 || got[events-1] != events-1 {
			t.Errorf("%s got %d notifications out of order or incomplete: %v", path, len(got), got)
		}
	}
	if st := s.Stats(); st.Dropped != 0 || st.Attempts != configs*events {
		t.Errorf("stats = %+v", st)
	}
}

func TestFinalAnswersOtherThan2xxMakeTheConfigDead(t *testing.T) {
	for _, code := range []int{http.StatusNotFound, http.StatusGone, http.StatusBadRequest, http.StatusForbidden, http.StatusNotImplemented} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(code) })
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep})
			cfg := config(rc, "t1", "c1")
			s.Notify(cfg, working("t1", 0))
			s.Notify(cfg, working("t1", 1)) // queued behind: dropped with the binding
			r := rep.await(t, "dead report", stateIs(agent.PushDead))
			if r.Status != code {
				t.Errorf("dead report status = %d, want %d (%+v)", r.Status, code, r)
			}
			before := s.Stats().Discarded
			for i := 2; i < 5; i++ {
				s.Notify(cfg, working("t1", i))
			}
			if got := s.Stats().Discarded - before; got != 3 {
				t.Errorf("%d notifications to a dead config discarded at once, want 3", got)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := rc.count(); n != 1 {
				t.Errorf("receiver got %d requests, want 1 (nothing after the dead answer)", n)
			}
			if got, want := rep.states(), []agent.PushState{agent.PushDead}; !slices.Equal(got, want) {
				t.Errorf("reports = %v, want %v", got, want)
			}
		})
	}
}

func TestANewURLRevivesADeadConfig(t *testing.T) {
	gone := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
	fresh := newReceiver(t, nil)
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep})
	s.Notify(config(gone, "t1", "c1"), working("t1", 0))
	rep.await(t, "dead report", stateIs(agent.PushDead))
	cfg := config(fresh, "t1", "c1")
	s.Notify(cfg, working("t1", 1))
	rep.await(t, "delivered report", stateIs(agent.PushDelivered))
	if got := seqs(t, fresh.all()); !slices.Equal(got, []int{1}) {
		t.Errorf("new receiver got %v, want [1]", got)
	}
}

func TestRetryableAnswersAreRetriedThenDelivered(t *testing.T) {
	cases := []struct {
		name       string
		code       int
		retryAfter string
		minGap     time.Duration // the Retry-After honoured: a lower bound only
	}{
		{"503 with Retry-After", http.StatusServiceUnavailable, "1", time.Second},
		{"429 with Retry-After", http.StatusTooManyRequests, "1", time.Second},
		{"500 with backoff", http.StatusInternalServerError, "", 0},
		{"502 with backoff", http.StatusBadGateway, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n < 2 {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(tc.code)
				}
			})
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep, RetryWaitMax: 5 * time.Second})
			cfg := config(rc, "t1", "c1")
			s.Notify(cfg, working("t1", 0))
			s.Notify(cfg, working("t1", 1))
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			hits := rc.all()
			if got, want := seqs(t, hits), []int{0, 0, 0, 1}; !slices.Equal(got, want) {
				t.Fatalf("receiver got %v, want %v", got, want)
			}
			for i := 1; i < 3; i++ {
				if gap := hits[i].at.Sub(hits[i-1].at); gap < tc.minGap {
					t.Errorf("retry %d came %v after the answer, Retry-After asked %v", i, gap, tc.minGap)
				}
			}
			reps := rep.all()
			if got, want := rep.states(), []agent.PushState{agent.PushFailing, agent.PushDelivered}; !slices.Equal(got, want) {
				t.Fatalf("reports = %v, want %v", got, want)
			}
			if reps[0].Status != tc.code || reps[1].Status != http.StatusOK {
				t.Errorf("reports = %+v", reps)
			}
			if st := s.Stats(); st.Retries != 2 || st.Attempts != 4 || st.Delivered != 2 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestExhaustedRetriesMakeTheConfigDead(t *testing.T) {
	closed := newReceiver(t, nil)
	closedURL := closed.srv.URL
	closed.srv.Close() // connection refused from now on
	cases := []struct {
		name       string
		url        func(*receiver) string
		wantStatus int
		wantReason string
	}{
		{"always 503", func(rc *receiver) string { return rc.srv.URL + "/hook" }, http.StatusServiceUnavailable, "gave up after 3 attempts: 503 Service Unavailable"},
		{"connection refused", func(*receiver) string { return closedURL + "/hook" }, 0, "gave up after 3 attempts: dial"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusServiceUnavailable) })
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep, MaxRetries: 2})
			cfg := a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: tc.url(rc)}
			s.Notify(cfg, working("t1", 0))
			r := rep.await(t, "dead report", stateIs(agent.PushDead))
			if r.Status != tc.wantStatus || !strings.HasPrefix(r.Reason, tc.wantReason) {
				t.Errorf("dead report = %+v, want status %d, reason %q…", r, tc.wantStatus, tc.wantReason)
			}
			if strings.Contains(r.Reason, "http://") {
				t.Errorf("reason holds the URL: %q", r.Reason)
			}
			if got, want := rep.states(), []agent.PushState{agent.PushFailing, agent.PushDead}; !slices.Equal(got, want) {
				t.Errorf("reports = %v, want %v", got, want)
			}
			if st := s.Stats(); st.Attempts != 3 || st.Retries != 2 || st.Dead != 1 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestBackoffHonoursRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Sender{now: func() time.Time { return now }}
	cases := []struct {
		name       string
		retryAfter string
		attempt    int
		want       time.Duration
	}{
		{"seconds", "7", 0, 7 * time.Second},
		{"zero", "0", 3, 0},
		{"HTTP date", now.Add(45 * time.Second).Format(http.TimeFormat), 0, 45 * time.Second},
		{"date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0, 0},
		{"cut to RetryWaitMax", "3600", 0, time.Minute},
		{"absent: exponential", "", 2, 4 * time.Second},
		{"unparsable: exponential", "soon", 0, time.Second},
		{"exponential, capped", "", 10, time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			if got := s.backoff(time.Second, time.Minute, tc.attempt, resp); got != tc.want {
				t.Errorf("backoff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAddressPolicy(t *testing.T) {
	cases := []struct {
		addr              string
		strict, permitted bool // allowed with no Allow…, with both
	}{
		{"93.184.216.34", true, true},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true},
		{"127.0.0.1", false, true},
		{"127.8.9.10", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"10.1.2.3", false, true},
		{"172.16.0.1", false, true},
		{"192.168.1.1", false, true},
		{"fd12:3456::1", false, true},
		{"100.64.0.1", false, true},
		{"100.127.255.254", false, true},
		{"100.128.0.1", true, true},
		{"169.254.169.254", false, false},
		{"fe80::1%eth0", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"255.255.255.255", false, false},
		{"0.0.0.0", false, false},
		{"0.1.2.3", false, false},
		{"::", false, false},
		{"64:ff9b::a9fe:a9fe", false, false}, // 169.254.169.254 behind NAT64
		{"64:ff9b::808:808", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.addr)
			if err := (policy{}).check(ip); (err == nil) != tc.strict {
				t.Errorf("strict policy: check = %v, want allowed %v", err, tc.strict)
			}
			if err := (policy{loopback: true, private: true}).check(ip); (err == nil) != tc.permitted {
				t.Errorf("permissive policy: check = %v, want allowed %v", err, tc.permitted)
			}
		})
	}
}

func TestForbiddenAddressesAreRefused(t *testing.T) {
	cases := []struct {
		name          string
		allowLoopback bool
		url           func(rc *receiver) string
		want          agent.PushState
		reason        []string // one of them appears in the reason
	}{
		{"loopback literal", false, func(rc *receiver) string { return rc.srv.URL + "/hook" },
			agent.PushRefused, []string{"127.0.0.1 is loopback"}},
		{"name resolved to loopback, refused when dialled", false, func(rc *receiver) string {
			return fmt.Sprintf("http://localhost:%d/hook", rc.srv.Listener.Addr().(*net.TCPAddr).Port)
		}, agent.PushRefused, []string{"127.0.0.1 is loopback", "::1 is loopback"}},
		{"name resolved to loopback, allowed", true, func(rc *receiver) string {
			return fmt.Sprintf("http://localhost:%d/hook", rc.srv.Listener.Addr().(*net.TCPAddr).Port)
		}, agent.PushDelivered, nil},
		{"private literal", false, func(*receiver) string { return "http://10.20.30.40/hook" },
			agent.PushRefused, []string{"10.20.30.40 is private"}},
		{"metadata address, even allowed", true, func(*receiver) string { return "http://169.254.169.254/latest" },
			agent.PushRefused, []string{"link-local"}},
		{"not http", true, func(*receiver) string { return "ftp://example.com/hook" },
			agent.PushRefused, []string{"not http or https"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, nil)
			rep := &recorder{}
			s := newPolicySender(t, Config{Reporter: rep, AllowLoopback: tc.allowLoopback})
			cfg := a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: tc.url(rc)}
			s.Notify(cfg, working("t1", 0))
			r := rep.await(t, "a report", func(agent.PushReport) bool { return true })
			if r.State != tc.want {
				t.Fatalf("report = %+v, want %s", r, tc.want)
			}
			if tc.want == agent.PushRefused {
				if !slices.ContainsFunc(tc.reason, func(s string) bool { return strings.Contains(r.Reason, s) }) {
					t.Errorf("reason = %q, want one of %q", r.Reason, tc.reason)
				}
				s.Notify(cfg, working("t1", 1)) // not retried, not sent
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantHits := 0
			if tc.want == agent.PushDelivered {
				wantHits = 1
			}
			if n := rc.count(); n != wantHits {
				t.Errorf("receiver got %d requests, want %d", n, wantHits)
			}
			if got := rep.states(); len(got) != 1 {
				t.Errorf("reports = %v, want one", got)
			}
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	target := newReceiver(t, nil)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				http.Redirect(w, r, target.srv.URL+"/elsewhere", code)
			})
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep})
			s.Notify(config(rc, "t1", "c1"), working("t1", 0))
			r := rep.await(t, "dead report", stateIs(agent.PushDead))
			if r.Status != code || !strings.Contains(r.Reason, "redirect not followed") {
				t.Errorf("report = %+v", r)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := target.count(); n != 0 {
				t.Errorf("redirect target got %d requests", n)
			}
		})
	}
}

func TestSlowReceiverBlocksNeitherNotifyNorOtherConfigs(t *testing.T) {
	handle, release := gate(t)
	slow := newReceiver(t, handle)
	fast := newReceiver(t, nil)
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep, Workers: 2, QueueSize: 100})
	slowCfg := config(slow, "slow", "c")
	s.Notify(slowCfg, working("slow", 0))
	waitFor(t, "the slow receiver to hold a delivery", func() bool { return slow.count() == 1 })

	// Notify returns while the slow receiver holds a worker and its queue
	// is full: it only queues (or drops).
	for i := 1; i <= 150; i++ {
		s.Notify(slowCfg, working("slow", i))
	}
	const fastConfigs, events = 5, 100
	for c := range fastConfigs {
		task := fmt.Sprintf("fast%d", c)
		for i := range events {
			s.Notify(config(fast, task, "c"), working(task, i))
		}
	}
	waitFor(t, "the fast configs delivered", func() bool { return fast.count() == fastConfigs*events })
	if n := slow.count(); n != 1 {
		t.Errorf("slow receiver got %d requests while holding the first", n)
	}
	release()
	waitFor(t, "the slow config drained", func() bool { st := s.Stats(); return st.Queued == 0 && st.InFlight == 0 })
	want := []int{0}
	for i := 51; i <= 150; i++ {
		want = append(want, i)
	}
	if got := seqs(t, slow.all()); !slices.Equal(got, want) {
		t.Errorf("slow receiver got %v, want %v", got, want)
	}
	if st := s.Stats(); st.Dropped != 50 || st.Delivered != fastConfigs*events+101 {
		t.Errorf("stats = %+v", st)
	}
}

func TestOverflowDropsTheOldestAndKeepsTheTerminalUpdate(t *testing.T) {
	cases := []struct {
		name        string
		queue       int
		events      func(task string) []*a2a.StreamResponse // the first is held by the receiver
		wantSeqs    []int
		wantDropped int
		wantReports []int // Dropped of the overflow reports
	}{
		{
			name:  "working updates then completed",
			queue: 3,
			events: func(task string) []*a2a.StreamResponse {
				var evs []*a2a.StreamResponse
				for i := range 10 {
					evs = append(evs, working(task, i))
				}
				return append(evs, statusEvent(task, 10, a2a.TaskStateCompleted))
			},
			wantSeqs: []int{0, 8, 9, 10}, wantDropped: 7, wantReports: []int{1, 2, 4},
		},
		{
			name:  "a queue of one keeps the failure",
			queue: 1,
			events: func(task string) []*a2a.StreamResponse {
				return []*a2a.StreamResponse{working(task, 0), working(task, 1), working(task, 2), working(task, 3),
					statusEvent(task, 4, a2a.TaskStateFailed)}
			},
			wantSeqs: []int{0, 4}, wantDropped: 3, wantReports: []int{1, 2},
		},
		{
			name:  "updates after a terminal one drop around it",
			queue: 2,
			events: func(task string) []*a2a.StreamResponse {
				return []*a2a.StreamResponse{working(task, 0), statusEvent(task, 1, a2a.TaskStateCanceled),
					working(task, 2), working(task, 3), working(task, 4)}
			},
			wantSeqs: []int{0, 1, 4}, wantDropped: 2, wantReports: []int{1, 2},
		},
		{
			name:  "a queue of terminal updates grows past its bound",
			queue: 1,
			events: func(task string) []*a2a.StreamResponse {
				return []*a2a.StreamResponse{working(task, 0), statusEvent(task, 1, a2a.TaskStateRejected),
					working(task, 2), statusEvent(task, 3, a2a.TaskStateCompleted)}
			},
			wantSeqs: []int{0, 1, 3}, wantDropped: 1, wantReports: []int{1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			handle, release := gate(t)
			rc := newReceiver(t, handle)
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep, QueueSize: tc.queue})
			cfg := config(rc, "t1", "c1")
			evs := tc.events("t1")
			s.Notify(cfg, evs[0])
			waitFor(t, "the first delivery held", func() bool { return rc.count() == 1 })
			for _, ev := range evs[1:] {
				s.Notify(cfg, ev)
			}
			if st := s.Stats(); st.Dropped != uint64(tc.wantDropped) {
				t.Errorf("Dropped = %d right after Notify, want %d", st.Dropped, tc.wantDropped)
			}
			release()
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := seqs(t, rc.all()); !slices.Equal(got, tc.wantSeqs) {
				t.Errorf("receiver got %v, want %v", got, tc.wantSeqs)
			}
			var overflow []int
			for _, r := range rep.all() {
				if r.State == agent.PushOverflow {
					overflow = append(overflow, r.Dropped)
				}
			}
			if !slices.Equal(overflow, tc.wantReports) {
				t.Errorf("overflow reports with Dropped %v, want %v", overflow, tc.wantReports)
			}
			if all := rep.all(); all[len(all)-1].State != agent.PushDelivered || all[len(all)-1].Dropped != tc.wantDropped {
				t.Errorf("last report is not the final count %d: %+v", tc.wantDropped, all)
			}
		})
	}
}

func TestForgetStopsDeliveries(t *testing.T) {
	t.Run("queue dropped, delivery under way finishes, nothing reported", func(t *testing.T) {
		handle, release := gate(t)
		rc := newReceiver(t, handle)
		rep := &recorder{}
		s := newSender(t, Config{Reporter: rep})
		cfg := config(rc, "t1", "c1")
		s.Notify(cfg, working("t1", 0))
		waitFor(t, "the first delivery held", func() bool { return rc.count() == 1 })
		for i := 1; i <= 5; i++ {
			s.Notify(cfg, working("t1", i))
		}
		s.Forget("t1", "c1")
		if st := s.Stats(); st.Discarded != 5 || st.Queued != 0 || st.Configs != 0 {
			t.Errorf("stats after Forget = %+v", st)
		}
		release()
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Delivered != 1 {
			t.Errorf("stats = %+v, want the delivery under way finished", st)
		}
		if n := rc.count(); n != 1 {
			t.Errorf("receiver got %d requests, want 1", n)
		}
		if got := rep.all(); len(got) != 0 {
			t.Errorf("reports after Forget: %+v", got)
		}
	})
	t.Run("a wait before a retry is cut short", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		rep := &recorder{}
		s := newSender(t, Config{Reporter: rep, RetryWaitMax: time.Hour})
		s.Notify(config(rc, "t1", "c1"), working("t1", 0))
		rep.await(t, "failing report", stateIs(agent.PushFailing))
		s.Forget("t1", "c1")
		waitFor(t, "the worker freed", func() bool { return s.Stats().InFlight == 0 })
		if n := rc.count(); n != 1 {
			t.Errorf("receiver got %d requests, want 1", n)
		}
		if got := rep.states(); !slices.Equal(got, []agent.PushState{agent.PushFailing}) {
			t.Errorf("reports = %v", got)
		}
	})
}

func TestCloseDrainsWhatIsQueued(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSender(t, Config{Workers: 3})
	for c := range 4 {
		task := fmt.Sprintf("t%d", c)
		for i := range 25 {
			s.Notify(config(rc, task, "c"), working(task, i))
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := rc.count(); n != 100 {
		t.Errorf("receiver got %d requests, want 100", n)
	}
	s.Notify(config(rc, "t0", "c"), working("t0", 25))
	if st := s.Stats(); st.Delivered != 100 || st.Discarded != 1 || st.Queued != 0 {
		t.Errorf("stats = %+v", st)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCloseAbandonsWhenItsContextEnds(t *testing.T) {
	handle, _ := gate(t)
	rc := newReceiver(t, handle)
	rep := &recorder{}
	s := newSender(t, Config{Reporter: rep})
	cfg := config(rc, "t1", "c1")
	s.Notify(cfg, working("t1", 0))
	waitFor(t, "the first delivery held", func() bool { return rc.count() == 1 })
	for i := 1; i < 5; i++ {
		s.Notify(cfg, working("t1", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); err != context.Canceled {
		t.Errorf("Close = %v, want %v", err, context.Canceled)
	}
	if st := s.Stats(); st.Discarded != 4 || st.Queued != 0 || st.InFlight != 0 || st.Configs != 0 || st.Delivered != 0 {
		t.Errorf("stats = %+v", st)
	}
	if got := rep.all(); len(got) != 0 {
		t.Errorf("reports of abandoned configs: %+v", got)
	}
}

func TestReporterMayCallBack(t *testing.T) {
	// A reporter that forgets a dead config (as a server deleting it would)
	// from inside PushReport does not deadlock the Sender.
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
	var s *Sender
	forgot := make(chan struct{})
	s = newSender(t, Config{Reporter: reporterFunc(func(r agent.PushReport) {
		if r.State == agent.PushDead && r.TaskID == "t1" {
			s.Forget(r.TaskID, r.ConfigID)
			s.Notify(config(rc, "t2", "c"), working("t2", 0))
			close(forgot)
		}
	})})
	s.Notify(config(rc, "t1", "c"), working("t1", 0))
	<-forgot
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Both dropped once dead; t2 remembered, t1 forgotten.
	if st := s.Stats(); st.Dead != 2 || st.Configs != 0 || st.DeadConfigs != 1 {
		t.Errorf("stats = %+v", st)
	}
}

type reporterFunc func(agent.PushReport)

func (f reporterFunc) PushReport(r agent.PushReport) { f(r) }

func TestNewRejectsInconsistentWaits(t *testing.T) {
	if _, err := New(Config{RetryWaitMin: time.Minute, RetryWaitMax: time.Second}); err == nil {
		t.Error("New accepted RetryWaitMax < RetryWaitMin")
	}
}

func TestHTTPSThroughTheCallersClient(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cases := []struct {
		name   string
		client *http.Client
		want   agent.PushState
	}{
		{"the caller's client trusts the receiver's certificate", srv.Client(), agent.PushDelivered},
		{"the default client does not: dead, not retried", nil, agent.PushDead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := &recorder{}
			s := newSender(t, Config{Reporter: rep, HTTPClient: tc.client})
			s.Notify(a2a.TaskPushNotificationConfig{ID: "c1", TaskID: "t1", URL: srv.URL + "/hook"}, working("t1", 0))
			r := rep.await(t, "a report", func(agent.PushReport) bool { return true })
			if r.State != tc.want {
				t.Errorf("report = %+v, want %s", r, tc.want)
			}
			if tc.want == agent.PushDead && (!strings.HasPrefix(r.Reason, "TLS: ") || s.Stats().Attempts != 1) {
				t.Errorf("report = %+v, stats = %+v", r, s.Stats())
			}
		})
	}
}

// A config with nothing under way waits Linger before its delivery starts;
// the updates queued meanwhile follow in order without waiting again, and
// Close delivers what lingers at once.
func TestDeliveriesLinger(t *testing.T) {
	const linger = 200 * time.Millisecond
	cases := []struct {
		name   string
		linger time.Duration
		close  bool // Close right after the notifications
	}{
		{"a config waits Linger, then its updates go in order", linger, false},
		// An hour: a Close that waited for it would never return.
		{"Close sends what lingers without waiting", time.Hour, true},
		{"a negative Linger starts at once", -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, nil)
			s := newSender(t, Config{Linger: tc.linger})
			t0 := time.Now()
			for i := range 5 {
				s.Notify(config(rc, "t1", "c"), working("t1", i))
			}
			s.Notify(config(rc, "t2", "c"), working("t2", 0))
			if tc.close {
				if err := s.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "every notification delivered", func() bool { return s.Stats().Delivered == 6 })
			hits := rc.all()
			var t1 []hit
			for _, h := range hits {
				if h.path == "/hook/t1/c" {
					t1 = append(t1, h)
				}
			}
			if got := seqs(t, t1); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
				t.Fatalf("t1's updates arrived as %v", got)
			}
			first := hits[0].at.Sub(t0)
			for _, h := range hits {
				first = min(first, h.at.Sub(t0))
			}
			// A lower bound only: a delivery may start later, never sooner.
			if tc.linger > 0 && !tc.close && first < tc.linger {
				t.Fatalf("the first delivery started %v after the notification, before Linger %v", first, tc.linger)
			}
		})
	}
}
