package retry

import (
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// Every phase × every input: where the operation goes. This is the retry
// machine's table; it has no generated one because its guards are times and
// counters.
func TestPhaseMatrix(t *testing.T) {
	// setup returns an operation in the phase, its first attempt published at
	// t0 (Backoff: failed at 15 s; Streaming: an item at 1 s).
	setup := func(ph Phase, attempts int) Operation {
		p := mqttbind.DefaultRetryProfile()
		op := New(p, half)
		if ph == PhaseIdle {
			return op
		}
		op.Start(handover.Target{Agent: "b"}, t0)
		for op.Attempts() < attempts {
			op.Tick(op.deadline)
			op.Tick(op.deadline)
		}
		switch ph {
		case PhaseBackoff:
			op.Tick(op.deadline)
		case PhaseStreaming:
			op.Reply(Reply{Kind: ReplyItem}, op.deadline.Add(-time.Second))
		case PhaseDone:
			op.Reply(Reply{Kind: ReplyFinal}, op.deadline.Add(-time.Second))
		}
		if op.Phase() != ph {
			t.Fatalf("setup: phase %v, want %v", op.Phase(), ph)
		}
		return op
	}
	type input struct {
		name string
		do   func(*Operation) Decision
	}
	due := func(op *Operation) Decision { return op.Tick(op.deadline) }
	early := func(op *Operation) Decision { return op.Tick(op.deadline.Add(-time.Millisecond)) }
	at := func(op *Operation) time.Time {
		if op.deadline.IsZero() {
			return t0.Add(time.Hour)
		}
		return op.deadline.Add(-time.Millisecond)
	}
	inputs := []input{
		{"tick when due", due},
		{"tick early", early},
		{"publish refused", func(op *Operation) Decision { return op.Refused(at(op)) }},
		{"final reply", func(op *Operation) Decision { return op.Reply(Reply{Kind: ReplyFinal}, at(op)) }},
		{"stream item", func(op *Operation) Decision { return op.Reply(Reply{Kind: ReplyItem}, at(op)) }},
		{"retry-eligible error", func(op *Operation) Decision {
			return op.Reply(Reply{Kind: ReplyError, Token: a2a.TokenResponderUnavailable}, at(op))
		}},
		{"non-retryable error", func(op *Operation) Decision {
			return op.Reply(Reply{Kind: ReplyError, Token: a2a.TokenTransportProtocolError}, at(op))
		}},
	}
	const (
		I, A, B, S, D = PhaseIdle, PhaseAwaiting, PhaseBackoff, PhaseStreaming, PhaseDone
	)
	for _, c := range []struct {
		phase    Phase
		attempts int
		want     [7]Phase // per input, in the order above
		outcome  [7]Outcome
	}{
		{I, 0, [7]Phase{I, I, I, I, I, I, I}, [7]Outcome{}},
		{A, 1, [7]Phase{B, A, B, D, S, B, D}, [7]Outcome{3: OutcomeReplied, 6: OutcomeFailed}},
		{A, 3, [7]Phase{D, A, D, D, S, D, D}, [7]Outcome{OutcomeExhausted, 0, OutcomeExhausted, OutcomeReplied, 0, OutcomeExhausted, OutcomeFailed}},
		{B, 1, [7]Phase{A, B, B, D, S, B, D}, [7]Outcome{3: OutcomeReplied, 6: OutcomeFailed}},
		{S, 1, [7]Phase{D, S, S, D, S, D, D}, [7]Outcome{OutcomeStalled, 0, 0, OutcomeReplied, 0, OutcomeFailed, OutcomeFailed}},
		{D, 1, [7]Phase{D, D, D, D, D, D, D}, [7]Outcome{OutcomeReplied, OutcomeReplied, OutcomeReplied, OutcomeReplied, OutcomeReplied, OutcomeReplied, OutcomeReplied}},
	} {
		for i, in := range inputs {
			op := setup(c.phase, c.attempts)
			d := in.do(&op)
			if op.Phase() != c.want[i] || d.Outcome != c.outcome[i] {
				t.Errorf("phase %v after %d attempts + %s: got %v %v, want %v %v", c.phase, c.attempts, in.name, op.Phase(), d.Outcome, c.want[i], c.outcome[i])
			}
			if d.Action == ActionPublish && (c.phase != B || in.name != "tick when due") {
				t.Errorf("phase %v + %s: published", c.phase, in.name)
			}
		}
	}
}
