package pushbind

import (
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// Binding transitions with their guards and timers (an acknowledged push, a
// reconciliation tick, a poll): no allocation.
func BenchmarkPushBindingStep(b *testing.B) {
	bind := New("t", DefaultConfig(), t0)
	if _, err := bind.Registered(false, t0); err != nil {
		b.Fatal(err)
	}
	now := t0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now = now.Add(20 * time.Second)
		var err error
		switch i % 3 {
		case 0:
			_, err = bind.Receiver(200, a2a.TaskStateWorking, now)
		case 1:
			_, err = bind.Tick(now)
		case 2:
			_, err = bind.Polled(a2a.TaskStateWorking, now, now)
		}
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
}
