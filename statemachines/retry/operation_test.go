package retry

import (
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// half is a jitter source that always returns the middle: no spread.
func half() float64 { return 0.5 }

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// event is one input of a scenario, at a time in seconds after t0.
type event struct {
	at      float64
	tick    bool
	refused bool
	reply   *Reply
}

// expect is the decision an event must produce.
type expect struct {
	action  Action
	attempt int
	wake    float64 // seconds after t0; -1 for none
	outcome Outcome
	target  handover.Target
}

func tick(at float64) event           { return event{at: at, tick: true} }
func refused(at float64) event        { return event{at: at, refused: true} }
func reply(at float64, r Reply) event { return event{at: at, reply: &r} }

func TestScenarios(t *testing.T) {
	direct := handover.Target{Agent: "agent-b"}
	pool := handover.Target{Pool: "pool-1"}
	for _, c := range []struct {
		name    string
		profile mqttbind.RetryProfile
		start   handover.Target
		events  []event
		want    []expect // one per event, after the Start decision
	}{
		{"first reply in time: one attempt", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(3, Reply{Kind: ReplyFinal})},
			[]expect{{ActionFinish, 1, -1, OutcomeReplied, direct}}},
		{"no first reply: retried after 1 s and 2 s backoff, exhausted after 3 attempts", mqttbind.DefaultRetryProfile(), direct,
			[]event{tick(15), tick(16), tick(31), tick(33), tick(48)},
			[]expect{
				{ActionWait, 1, 16, OutcomePending, direct},
				{ActionPublish, 2, 31, OutcomePending, direct},
				{ActionWait, 2, 33, OutcomePending, direct},
				{ActionPublish, 3, 48, OutcomePending, direct},
				{ActionFinish, 3, -1, OutcomeExhausted, direct},
			}},
		{"an early tick changes nothing", mqttbind.DefaultRetryProfile(), direct,
			[]event{tick(10)},
			[]expect{{ActionWait, 1, 15, OutcomePending, direct}}},
		{"publish refused: the attempt failed at once", mqttbind.DefaultRetryProfile(), direct,
			[]event{refused(0.1), tick(1.1), reply(2, Reply{Kind: ReplyFinal})},
			[]expect{
				{ActionWait, 1, 1.1, OutcomePending, direct},
				{ActionPublish, 2, 16.1, OutcomePending, direct},
				{ActionFinish, 2, -1, OutcomeReplied, direct},
			}},
		{"request_expired (-32003) is retry-eligible", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenRequestExpired}), tick(2)},
			[]expect{{ActionWait, 1, 2, OutcomePending, direct}, {ActionPublish, 2, 17, OutcomePending, direct}}},
		{"responder_unavailable (-32004) is retry-eligible", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable}), tick(2)},
			[]expect{{ActionWait, 1, 2, OutcomePending, direct}, {ActionPublish, 2, 17, OutcomePending, direct}}},
		{"transport_protocol_error (-32005) is not retried", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenTransportProtocolError})},
			[]expect{{ActionFinish, 1, -1, OutcomeFailed, direct}}},
		{"unsupported_operation is not retried although it shares -32004", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenUnsupportedOperation})},
			[]expect{{ActionFinish, 1, -1, OutcomeFailed, direct}}},
		{"retry-eligible errors on every attempt exhaust the profile", mqttbind.DefaultRetryProfile(), direct,
			[]event{
				reply(1, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable}), tick(2),
				reply(3, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable}), tick(5),
				reply(6, Reply{Kind: ReplyError, Token: a2a.TokenRequestExpired}),
			},
			[]expect{
				{ActionWait, 1, 2, OutcomePending, direct}, {ActionPublish, 2, 17, OutcomePending, direct},
				{ActionWait, 2, 5, OutcomePending, direct}, {ActionPublish, 3, 20, OutcomePending, direct},
				{ActionFinish, 3, -1, OutcomeExhausted, direct},
			}},
		{"a late error to an earlier attempt does not fail the later one", mqttbind.DefaultRetryProfile(), direct,
			[]event{tick(15), tick(16), reply(17, Reply{Kind: ReplyError, Attempt: 1, Token: a2a.TokenResponderUnavailable})},
			[]expect{{ActionWait, 1, 16, OutcomePending, direct}, {ActionPublish, 2, 31, OutcomePending, direct}, {ActionWait, 2, 31, OutcomePending, direct}}},
		{"a late reply to an earlier attempt during the backoff ends the operation", mqttbind.DefaultRetryProfile(), direct,
			[]event{tick(15), reply(15.5, Reply{Kind: ReplyFinal, Attempt: 1})},
			[]expect{{ActionWait, 1, 16, OutcomePending, direct}, {ActionFinish, 1, -1, OutcomeReplied, direct}}},
		{"after a stream item silence means GetTask, never a republish", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyItem}), reply(20, Reply{Kind: ReplyItem}), tick(49), tick(50)},
			[]expect{
				{ActionWait, 1, 31, OutcomePending, direct},
				{ActionWait, 1, 50, OutcomePending, direct},
				{ActionWait, 1, 50, OutcomePending, direct},
				{ActionGetTask, 1, -1, OutcomeStalled, direct},
			}},
		{"after a stream item a retry-eligible error is not retried", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyItem}), reply(2, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable})},
			[]expect{{ActionWait, 1, 31, OutcomePending, direct}, {ActionFinish, 1, -1, OutcomeFailed, direct}}},
		{"a stream ends at its final item", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyItem}), reply(2, Reply{Kind: ReplyFinal})},
			[]expect{{ActionWait, 1, 31, OutcomePending, direct}, {ActionFinish, 1, -1, OutcomeReplied, direct}}},
		{"agent asleep and queued: never republished", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenAgentAsleep, Queued: true})},
			[]expect{{ActionFinish, 1, -1, OutcomeQueued, direct}}},
		{"agent asleep, not queued: the retry waits for retryAfterSec", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenAgentAsleep, RetryAfter: time.Minute}), tick(61)},
			[]expect{{ActionWait, 1, 61, OutcomePending, direct}, {ActionPublish, 2, 76, OutcomePending, direct}}},
		{"pooled: retries on the pool until a responder is named, then on its direct topic", mqttbind.DefaultRetryProfile(), pool,
			[]event{tick(15), tick(16), reply(17, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable, Responder: "member-2"}), tick(19)},
			[]expect{
				{ActionWait, 1, 16, OutcomePending, pool},
				{ActionPublish, 2, 31, OutcomePending, pool},
				{ActionWait, 2, 19, OutcomePending, handover.Target{Agent: "member-2"}},
				{ActionPublish, 3, 34, OutcomePending, handover.Target{Agent: "member-2"}},
			}},
		{"a handover named by an error reply moves the next attempt", mqttbind.DefaultRetryProfile(), direct,
			[]event{reply(1, Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable, Responder: "agent-c"}), tick(2)},
			[]expect{{ActionWait, 1, 2, OutcomePending, handover.Target{Agent: "agent-c"}}, {ActionPublish, 2, 17, OutcomePending, handover.Target{Agent: "agent-c"}}}},
		{"a configured profile: 2 attempts, 1 s timeout, 500 ms backoff", mqttbind.RetryProfile{ReplyFirstTimeout: time.Second, StreamIdleTimeout: time.Second, MaxAttempts: 2, RetryBackoff: []time.Duration{500 * time.Millisecond}}, direct,
			[]event{tick(1), tick(1.5), tick(2.5)},
			[]expect{{ActionWait, 1, 1.5, OutcomePending, direct}, {ActionPublish, 2, 2.5, OutcomePending, direct}, {ActionFinish, 2, -1, OutcomeExhausted, direct}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckProfile(c.profile); err != nil {
				t.Fatal(err)
			}
			op := New(c.profile, half)
			d := op.Start(c.start, t0)
			if d.Action != ActionPublish || d.Attempt != 1 || d.Target != c.start || !d.Wake.Equal(t0.Add(c.profile.ReplyFirstTimeout)) {
				t.Fatalf("start: %+v", d)
			}
			for i, ev := range c.events {
				now := sec(ev.at)
				switch {
				case ev.tick:
					d = op.Tick(now)
				case ev.refused:
					d = op.Refused(now)
				default:
					d = op.Reply(*ev.reply, now)
				}
				w := c.want[i]
				wake := time.Time{}
				if w.wake >= 0 {
					wake = sec(w.wake)
				}
				if d.Action != w.action || d.Attempt != w.attempt || !d.Wake.Equal(wake) || d.Outcome != w.outcome || d.Target != w.target {
					t.Fatalf("event %d at %vs: got %+v (wake %v), want %+v", i, ev.at, d, d.Wake.Sub(t0), w)
				}
			}
		})
	}
}

// Retrying is decided by token: for every token the library knows, an error
// reply to the first attempt is retried exactly when the token is marked
// retryable, whatever its code (several share -32003, -32004 and -32005).
func TestRetryByToken(t *testing.T) {
	byCode := map[int][]bool{}
	for _, info := range a2a.ErrorInfos() {
		op := New(mqttbind.DefaultRetryProfile(), half)
		op.Start(handover.Target{Agent: "b"}, t0)
		d := op.Reply(Reply{Kind: ReplyError, Token: info.Token}, sec(1))
		retried := d.Action == ActionWait && op.Phase() == PhaseBackoff
		if retried != info.Retryable {
			t.Errorf("%s (%d): retried %v, token says %v", info.Token, info.Code, retried, info.Retryable)
		}
		byCode[info.Code] = append(byCode[info.Code], retried)
	}
	for _, code := range []int{-32003, -32004, -32005} {
		if got := byCode[code]; len(got) < 2 {
			t.Errorf("code %d is no longer shared: %v", code, got)
		}
	}
	if r := byCode[-32004]; !contains(r, true) || !contains(r, false) {
		t.Errorf("-32004 should be retried for one token and not another: %v", r)
	}
}

func contains(s []bool, v bool) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestBackoff(t *testing.T) {
	p := mqttbind.DefaultRetryProfile()
	for _, c := range []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0.5, time.Second}, {2, 0.5, 2 * time.Second}, {3, 0.5, 4 * time.Second},
		{4, 0.5, 4 * time.Second}, // past the end: the last value
		{1, 0, 800 * time.Millisecond}, {2, 0, 1600 * time.Millisecond},
		{1, 0.75, 1100 * time.Millisecond},
		{0, 0.5, 0},
	} {
		if got := Backoff(p, c.n, c.u); got != c.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", c.n, c.u, got, c.want)
		}
	}
	// Just under the top of the range.
	if got := Backoff(p, 3, 0.999999); got < 4799*time.Millisecond || got >= 4800*time.Millisecond {
		t.Errorf("top of the jitter range: %v", got)
	}
	if Backoff(mqttbind.RetryProfile{}, 1, 0.5) != 0 {
		t.Errorf("no backoff list: want 0")
	}
}

func TestCheckProfile(t *testing.T) {
	ok := mqttbind.DefaultRetryProfile()
	if err := CheckProfile(ok); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*mqttbind.RetryProfile){
		"no attempts":      func(p *mqttbind.RetryProfile) { p.MaxAttempts = 0 },
		"negative timeout": func(p *mqttbind.RetryProfile) { p.ReplyFirstTimeout = -1 },
		"negative idle":    func(p *mqttbind.RetryProfile) { p.StreamIdleTimeout = -1 },
		"jitter of 1":      func(p *mqttbind.RetryProfile) { p.BackoffJitter = 1 },
		"negative jitter":  func(p *mqttbind.RetryProfile) { p.BackoffJitter = -0.1 },
		"negative backoff": func(p *mqttbind.RetryProfile) { p.RetryBackoff = []time.Duration{-1} },
	} {
		p := mqttbind.DefaultRetryProfile()
		mut(&p)
		if CheckProfile(p) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	none := mqttbind.DefaultRetryProfile()
	none.ReplyFirstTimeout, none.StreamIdleTimeout = 0, 0
	if err := CheckProfile(none); err != nil {
		t.Errorf("zero timeouts (no deadline): %v", err)
	}
}

// TestZeroTimeoutsMeanNoDeadline: with no first-reply timeout an attempt
// waits (Wake is zero, Tick changes nothing however late) until a reply
// comes; with no stream idle timeout a stream never stalls.
func TestZeroTimeoutsMeanNoDeadline(t *testing.T) {
	p := mqttbind.DefaultRetryProfile()
	p.ReplyFirstTimeout, p.StreamIdleTimeout = 0, 0
	t0 := time.Unix(1_700_000_000, 0)
	late := t0.Add(240 * time.Hour)
	op := New(p, func() float64 { return 0.5 })
	d := op.Start(handover.Target{Agent: "b"}, t0)
	if d.Action != ActionPublish || !d.Wake.IsZero() {
		t.Fatalf("start: %+v, want a publish with no wake", d)
	}
	if d = op.Tick(late); d.Action != ActionWait || op.Phase() != PhaseAwaiting || op.Attempts() != 1 {
		t.Fatalf("tick ten days later: %+v in phase %v, want still awaiting the first attempt", d, op.Phase())
	}
	if d = op.Reply(Reply{Kind: ReplyItem}, late); d.Action != ActionWait || !d.Wake.IsZero() {
		t.Fatalf("stream item: %+v, want a wait with no wake", d)
	}
	if d = op.Tick(late.Add(240 * time.Hour)); d.Action != ActionWait || op.Phase() != PhaseStreaming {
		t.Fatalf("idle stream ten days on: %+v in phase %v, want still streaming", d, op.Phase())
	}
	// A refused attempt still backs off and retries.
	op = New(p, func() float64 { return 0.5 })
	op.Start(handover.Target{Agent: "b"}, t0)
	if d = op.Refused(t0); d.Action != ActionWait || d.Wake.IsZero() {
		t.Fatalf("refused: %+v, want a backoff with a wake", d)
	}
	if d = op.Tick(d.Wake); d.Action != ActionPublish || d.Attempt != 2 {
		t.Fatalf("after the backoff: %+v, want attempt 2", d)
	}
}
