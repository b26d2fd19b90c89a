package reach

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

// 10:00 UTC on the hour; the test schedule opens at :10 for 15 minutes.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

var window = &Schedule{Period: time.Hour, Offset: 10 * time.Minute, Length: 15 * time.Minute}

// docs/protocol.md §7.1 (reachability modes): live inbound and
// store-and-forward per mode.
func TestModes(t *testing.T) {
	const (
		always  = offline.ReachabilityModeAlwaysAvailable
		session = offline.ReachabilityModeSessionOnly
		hourly  = offline.ReachabilityModePeriodicallyAvailable
		sleep   = offline.ReachabilityModeUnavailableStoreForward
	)
	for _, c := range []struct {
		name  string
		a     Availability
		at    time.Duration // after t0
		want  Verdict
		after int64 // expected retryAfterSec, -1 for none
	}{
		{"AlwaysAvailable accepts", Availability{Mode: always}, 0, VerdictAccept, -1},
		{"AlwaysAvailable accepts whatever the queue offer", Availability{Mode: always, StoreForward: true}, 0, VerdictAccept, -1},
		{"SessionOnly accepts while the session is active", Availability{Mode: session, SessionActive: true}, 0, VerdictAccept, -1},
		{"SessionOnly without a session refuses", Availability{Mode: session}, 0, VerdictRefuse, -1},
		{"SessionOnly never queues, even when store-and-forward is offered", Availability{Mode: session, StoreForward: true}, 0, VerdictRefuse, -1},
		{"PeriodicallyAvailable accepts inside its window", Availability{Mode: hourly, Schedule: window}, 12 * time.Minute, VerdictAccept, -1},
		{"PeriodicallyAvailable accepts at the window's first instant", Availability{Mode: hourly, Schedule: window}, 10 * time.Minute, VerdictAccept, -1},
		{"PeriodicallyAvailable queues outside its window, retry at the next one", Availability{Mode: hourly, Schedule: window, StoreForward: true}, 0, VerdictQueue, 600},
		{"PeriodicallyAvailable queues right after its window closes", Availability{Mode: hourly, Schedule: window, StoreForward: true}, 25 * time.Minute, VerdictQueue, 2700},
		{"PeriodicallyAvailable without store-and-forward refuses outside its window", Availability{Mode: hourly, Schedule: window}, 30*time.Minute + 500*time.Millisecond, VerdictRefuse, 2400},
		{"UnavailableStoreForward refuses live and queues", Availability{Mode: sleep, StoreForward: true}, 0, VerdictQueue, -1},
		{"UnavailableStoreForward with a known wake time gives retryAfterSec", Availability{Mode: sleep, StoreForward: true, Schedule: window}, 0, VerdictQueue, 600},
		{"UnavailableStoreForward without a queue refuses", Availability{Mode: sleep}, 0, VerdictRefuse, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.a, t0.Add(c.at), nil)
			if err != nil {
				t.Fatal(err)
			}
			after := int64(-1)
			if d.HasRetryAfter {
				after = d.RetryAfterSec
			}
			if d.Verdict != c.want || after != c.after {
				t.Errorf("got %v retryAfter %d, want %v %d", d.Verdict, after, c.want, c.after)
			}
		})
	}
}

// docs/protocol.md §7.2 (the asleep signal): 503 with agent_asleep; queued
// true only after the enqueue succeeded; retryAfterSec and Retry-After when
// the next window is known.
func TestAsleepSignal(t *testing.T) {
	a := Availability{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: window, StoreForward: true}
	d, _ := Decide(a, t0, nil)
	t.Run("stored: queued true, retryAfterSec and Retry-After 600", func(t *testing.T) {
		r := Respond(d, Enqueue{Stored: true})
		body := r.AsleepBody("agent asleep until the next window")
		if r.Token != a2a.TokenAgentAsleep || r.HTTPStatus != 503 || !r.Queued || !body.Queued || body.Error != "agent_asleep" ||
			body.RetryAfterSec == nil || *body.RetryAfterSec != 600 || !r.HasRetryAfter || r.RetryAfterSec != 600 {
			t.Errorf("got %+v, body %+v", r, body)
		}
		if data := r.ErrorData(); data.Error != "agent_asleep" || !data.Queued || data.RetryAfterSec == nil || *data.RetryAfterSec != 600 {
			t.Errorf("JSON-RPC data %+v", data)
		}
		if info, _ := r.Token.Info(); info.Code != -32003 || info.HTTPStatus != 503 {
			t.Errorf("token info %+v", info)
		}
	})
	t.Run("refused without a queue: queued false", func(t *testing.T) {
		d, _ := Decide(Availability{Mode: offline.ReachabilityModeUnavailableStoreForward}, t0, nil)
		r := Respond(d, Enqueue{Stored: true}) // a caller bug: nothing may be stored for a refusal
		if r.Token != a2a.TokenAgentAsleep || r.HTTPStatus != 503 || r.Queued || r.AsleepBody("").Queued || r.HasRetryAfter {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("accepted live: no refusal", func(t *testing.T) {
		d, _ := Decide(a, t0.Add(11*time.Minute), nil)
		if r := Respond(d, Enqueue{}); !r.Live || r.Token != "" {
			t.Errorf("got %+v", r)
		}
	})
}

// docs/protocol.md §7.4 (backpressure): a bound that refuses the enqueue is
// answered with asleep_queue_full and its kind (507 global, 429 per peer),
// queued false, never agent_asleep; the bounds are checked in the order
// messages, bytes, peer.
func TestBackpressure(t *testing.T) {
	b := offline.DefaultQueueBounds()
	d := Decision{Verdict: VerdictQueue, RetryAfterSec: 600, HasRetryAfter: true}
	for _, c := range []struct {
		name   string
		occ    Occupancy
		size   int64
		kind   offline.QueueFullKind
		status int
	}{
		{"room left", Occupancy{Messages: 499, Bytes: 1 << 20, PeerMessages: 49}, 1024, "", 503},
		{"message cap", Occupancy{Messages: 500}, 1, offline.QueueFullKindMessages, 507},
		{"byte cap", Occupancy{Messages: 10, Bytes: 2<<20 - 100}, 101, offline.QueueFullKindBytes, 507},
		{"exactly at the byte cap fits", Occupancy{Messages: 10, Bytes: 2<<20 - 100}, 100, "", 503},
		{"per-peer cap", Occupancy{Messages: 60, PeerMessages: 50}, 1, offline.QueueFullKindPeer, 429},
		{"message cap before peer cap", Occupancy{Messages: 500, PeerMessages: 50}, 1, offline.QueueFullKindMessages, 507},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, kind := Fits(b, c.occ, c.size)
			if ok != (c.kind == "") || kind != c.kind {
				t.Fatalf("Fits: %v %q, want %q", ok, kind, c.kind)
			}
			r := Respond(d, Enqueue{Stored: ok, Full: kind})
			if r.HTTPStatus != c.status {
				t.Errorf("status %d, want %d", r.HTTPStatus, c.status)
			}
			if !ok {
				body := r.QueueFullBody("queue full")
				if r.Token != a2a.TokenAsleepQueueFull || r.Queued || body.Queued || body.Kind != c.kind || body.Error != "asleep_queue_full" || r.ErrorData().RetryAfterSec != nil {
					t.Errorf("got %+v, body %+v", r, body)
				}
			}
		})
	}
	t.Run("enqueue failed without a bound: not agent_asleep", func(t *testing.T) {
		if r := Respond(d, Enqueue{}); r.Token == a2a.TokenAgentAsleep || r.Queued || r.HTTPStatus != 500 {
			t.Errorf("got %+v", r)
		}
	})
}

// docs/protocol.md §7.8 (wake storms): wake windows jittered across agents.
// A thousand agents on an hourly schedule with a 10-minute spread: no
// minute of the spread holds more than twice its share, the windows of one
// agent never move, and every one of them still opens once an hour.
func TestWakeJitter(t *testing.T) {
	const agents = 1000
	spread := 10 * time.Minute
	perMinute := map[time.Duration]int{}
	for i := range agents {
		id := fmt.Sprintf("sensor-%04d", i)
		s := HourlyWake(id, 5*time.Minute, spread)
		if s != HourlyWake(id, 5*time.Minute, spread) {
			t.Fatalf("%s: schedule not stable", id)
		}
		if err := s.Check(); err != nil || s.Offset < 0 || s.Offset >= spread {
			t.Fatalf("%s: %+v, %v", id, s, err)
		}
		perMinute[s.Offset.Truncate(time.Minute)]++
	}
	share := agents / 10
	for m, n := range perMinute {
		if n > 2*share {
			t.Errorf("%d agents wake in minute %v (share %d)", n, m, share)
		}
	}
	if len(perMinute) != 10 {
		t.Errorf("wake times use %d of 10 minutes", len(perMinute))
	}
}

// retryAfterSec spread over the start of the next window, per message.
func TestRetrySpread(t *testing.T) {
	a := Availability{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: window, StoreForward: true, RetrySpread: 2 * time.Minute}
	for _, c := range []struct {
		u    float64
		want int64
	}{{0, 600}, {0.5, 660}, {0.999, 720}} {
		d, _ := Decide(a, t0, func() float64 { return c.u })
		if d.RetryAfterSec != c.want {
			t.Errorf("u=%v: %d, want %d", c.u, d.RetryAfterSec, c.want)
		}
		if !window.Open(t0.Add(time.Duration(d.RetryAfterSec) * time.Second)) {
			t.Errorf("u=%v: retry lands outside the window", c.u)
		}
	}
}

func TestDecideRefusesBadInput(t *testing.T) {
	for _, a := range []Availability{
		{Mode: "weekly"},
		{Mode: offline.ReachabilityModePeriodicallyAvailable},
		{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: &Schedule{Period: time.Hour, Length: time.Hour}},
		{Mode: offline.ReachabilityModeUnavailableStoreForward, Schedule: &Schedule{Period: time.Hour, Offset: -time.Minute, Length: time.Minute}},
		{Mode: offline.ReachabilityModeAlwaysAvailable, Schedule: &Schedule{}},
	} {
		if _, err := Decide(a, t0, nil); err == nil {
			t.Errorf("%+v accepted", a)
		}
	}
}

func TestSchedule(t *testing.T) {
	s := *window
	for _, c := range []struct {
		at   time.Duration
		open bool
		next time.Duration
	}{
		{0, false, 10 * time.Minute},
		{10*time.Minute - 1, false, 10 * time.Minute},
		{10 * time.Minute, true, 10 * time.Minute},
		{25*time.Minute - 1, true, 25*time.Minute - 1},
		{25 * time.Minute, false, 70 * time.Minute},
		{59 * time.Minute, false, 70 * time.Minute},
	} {
		now := t0.Add(c.at)
		if s.Open(now) != c.open || !s.NextOpen(now).Equal(t0.Add(c.next)) {
			t.Errorf("at +%v: open %v next +%v", c.at, s.Open(now), s.NextOpen(now).Sub(t0))
		}
	}
	// Before the Unix epoch the arithmetic still holds.
	old := time.Date(1960, 1, 1, 0, 5, 0, 0, time.UTC)
	if s.Open(old) || !s.NextOpen(old).Equal(old.Add(5*time.Minute)) {
		t.Errorf("before 1970: open %v next %v", s.Open(old), s.NextOpen(old))
	}
	if j := s.Jittered(0.5, 2*time.Hour); j.Offset != 10*time.Minute {
		t.Errorf("jitter wraps within the period: %v", j.Offset)
	}
}
