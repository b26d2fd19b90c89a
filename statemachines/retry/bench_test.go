package retry

import (
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// One operation through three attempts to exhaustion: each decision costs no
// allocation.
func BenchmarkRetryStep(b *testing.B) {
	p := mqttbind.DefaultRetryProfile()
	b.ReportAllocs()
	for b.Loop() {
		op := New(p, half)
		d := op.Start(handover.Target{Agent: "agent-b"}, t0)
		for d.Action != ActionFinish {
			d = op.Tick(d.Wake)
		}
	}
}
