package handover

import "testing"

// One routing transition per reply (the latest responder wins): no
// allocation.
func BenchmarkHandoverStep(b *testing.B) {
	tb := NewTable()
	if _, err := tb.Start("t", "agent-b"); err != nil {
		b.Fatal(err)
	}
	replies := [][]string{{"agent-c"}, nil, {"agent-d"}, {"agent-b"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := tb.Reply("t", replies[i&3]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
