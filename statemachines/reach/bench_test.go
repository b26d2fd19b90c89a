package reach

import (
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

// A reachability decision, queue check and answer for one inbound message:
// no allocation.
func BenchmarkReachDecide(b *testing.B) {
	s := HourlyWake("sensor-17", 15*time.Minute, 10*time.Minute)
	a := Availability{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: &s, StoreForward: true, RetrySpread: time.Minute}
	bounds := offline.DefaultQueueBounds()
	u := func() float64 { return 0.25 }
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Minute)
		d, err := Decide(a, now, u)
		if err != nil {
			b.Fatal(err)
		}
		ok, kind := Fits(bounds, Occupancy{Messages: 10, Bytes: 4096, PeerMessages: 2}, 512)
		_ = Respond(d, Enqueue{Stored: ok, Full: kind})
	}
}
