package runtime

import (
	"strings"
	"testing"
)

// benchText is 1 MB of plain text with a newline about every 100 bytes,
// the text of the size benchmarks of transport/mqtt and transport/http.
var benchText = strings.Repeat("The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n", 10_000)

// BenchmarkLongString times the passes over a 1 MB text a round trip is
// made of: encoding it, decoding it, reading it as a string it is
// expected to be (Expect), and skipping it (a raw member).
func BenchmarkLongString(b *testing.B) {
	enc := AppendString(nil, benchText)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(benchText)))
		buf := make([]byte, 0, len(enc)+16)
		for b.Loop() {
			buf = AppendString(buf[:0], benchText)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		var v Validator
		for b.Loop() {
			d := Decoder{data: enc, v: &v}
			if s, ok := d.String(nil); !ok || len(s) != len(benchText) {
				b.Fatal("decoded wrong")
			}
		}
	})
	b.Run("expected", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		var v Validator
		expect := []string{benchText}
		for b.Loop() {
			d := Decoder{data: enc, v: &v}
			d.Expect(expect)
			if s, ok := d.String(nil); !ok || len(s) != len(benchText) {
				b.Fatal("decoded wrong")
			}
		}
	})
	b.Run("skip", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		var v Validator
		for b.Loop() {
			d := Decoder{data: enc, v: &v}
			d.Skip()
			if d.pos != len(enc) || d.syntax != nil {
				b.Fatal("skipped wrong")
			}
		}
	})
}
