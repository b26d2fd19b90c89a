package jsonsize

import (
	"strings"
	"testing"
)

// BenchmarkString is the estimate of a 300-byte text (a newline every 100
// bytes or so, as in docs/benchmarks.md's size benchmarks) and of a UUID:
// the strings of a small task.
func BenchmarkString(b *testing.B) {
	line := "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	for _, c := range []struct{ name, s string }{
		{"300B", strings.Repeat(line, 4)[:300]},
		{"uuid", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				if String(c.s) < len(c.s) {
					b.Fatal("short")
				}
			}
		})
	}
}
