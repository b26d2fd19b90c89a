package jsonrpc

import (
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// benchSendRequest is a SendMessage request whose message has one text part
// of n bytes: plain words with a newline about every 100 bytes, as the size
// benchmarks of the transports send (transport/mqtt/bench_size_test.go).
func benchSendRequest(tb testing.TB, n int) []byte {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	text := strings.Repeat(line, n/len(line)+1)[:n]
	params := &a2a.SendMessageRequest{Message: &a2a.Message{
		MessageID: "9a1f0c2e-5b7d-4c1e-9f2a-8b5d4e3c2a10",
		Role:      a2a.RoleUser,
		Parts:     []a2a.Part{{Content: a2a.PartText(text)}},
	}}
	b, err := EncodeRequest([]byte(`"r1"`), a2a.MethodSendMessage, params)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkDecodeRequest decodes a SendMessage request with one text part
// of each size within the default limits, as a responder does
// (agent.Server.DecodeRequest): the bytes and allocations per request are
// the figures to read (-benchmem).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"300B", 300}, {"10KB", 10_000}, {"1MB", 1_000_000}} {
		b.Run(sz.name, func(b *testing.B) {
			in := benchSendRequest(b, sz.n)
			l := DefaultLimits()
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := l.DecodeRequest(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
