package mqtt

// Benchmarks of the cost per byte (figures in docs/benchmarks.md, section
// "Large messages"): the request/reply and 64-in-flight benchmarks of
// bench_test.go, paired, with a message of one text part of 300 B, 10 KB
// and 1 MB, and the bytes each side allocates per round trip.

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// benchSizes are the text parts of the size benchmarks: the name of the
// sub-benchmark and the length in bytes.
var benchSizes = []struct {
	name string
	n    int
}{{"300B", 300}, {"10KB", 10_000}, {"1MB", 1_000_000}}

// benchText returns n bytes of plain text: words, a newline every 100 bytes
// or so (escaped in JSON as \n), no other character JSON escapes.
func benchText(n int) string {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// sizeBlock is the number of round trips of one side in a row in
// BenchmarkSizeRequestReply: about a second's worth at 1 MB.
func sizeBlock(n int) int {
	if n >= 500_000 {
		return 50
	}
	return 500
}

// allocated returns the bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// BenchmarkSizeRequestReply times request/reply round trips with a text
// part of each size, paired as BenchmarkRequestReply's paired: blocks of
// the raw floor and of the SDK alternate (the tuned floor is left out).
// Besides the percentiles and their ratios it reports the bytes allocated
// per round trip by the whole process (requester, responder, and the
// embedded broker when it is the broker), per side, and divided by the
// text's size.
func BenchmarkSizeRequestReply(b *testing.B) {
	for _, bk := range benchBrokers {
		b.Run(bk.name, func(b *testing.B) {
			url := bk.start(b).URL()
			for _, sz := range benchSizes {
				b.Run(sz.name, func(b *testing.B) {
					p := startPairText(b, url, benchText(sz.n))
					ctx := benchCtx(b)
					sides := []func(context.Context) error{p.rawCall, p.sdkCall}
					for range 20 {
						for _, call := range sides {
							if err := call(ctx); err != nil {
								b.Fatal(err)
							}
						}
					}
					block := sizeBlock(sz.n)
					lat := make([][]time.Duration, len(sides))
					for i := range lat {
						lat[i] = make([]time.Duration, 0, b.N)
					}
					var alloc [2]uint64
					b.ResetTimer()
					for len(lat[0]) < b.N {
						n := min(block, b.N-len(lat[0]))
						for i, call := range sides {
							a0 := allocated()
							for range n {
								t0 := time.Now()
								if err := call(ctx); err != nil {
									b.Fatal(err)
								}
								lat[i] = append(lat[i], time.Since(t0))
							}
							alloc[i] += allocated() - a0
						}
					}
					b.StopTimer()
					r50, r99 := percentiles(lat[0])
					s50, s99 := percentiles(lat[1])
					b.ReportMetric(r50, "raw-p50-µs")
					b.ReportMetric(s50, "sdk-p50-µs")
					b.ReportMetric(s50/r50, "p50-ratio")
					b.ReportMetric(r99, "raw-p99-µs")
					b.ReportMetric(s99, "sdk-p99-µs")
					b.ReportMetric(s99/r99, "p99-ratio")
					rawB, sdkB := float64(alloc[0])/float64(b.N), float64(alloc[1])/float64(b.N)
					b.ReportMetric(rawB, "raw-B/rt")
					b.ReportMetric(sdkB, "sdk-B/rt")
					b.ReportMetric(rawB/float64(sz.n), "raw-B/text-B")
					b.ReportMetric(sdkB/float64(sz.n), "sdk-B/text-B")
				})
			}
		})
	}
}

// BenchmarkSizePipelined64 measures throughput with 64 requests in flight
// and a text part of each size, paired as BenchmarkPipelined64's paired:
// ten rounds of b.N/10 round trips of the floor, then of the SDK (at least
// 64 each).
func BenchmarkSizePipelined64(b *testing.B) {
	for _, bk := range benchBrokers {
		b.Run(bk.name, func(b *testing.B) {
			url := bk.start(b).URL()
			for _, sz := range benchSizes {
				b.Run(sz.name, func(b *testing.B) {
					p := startPairText(b, url, benchText(sz.n))
					ctx := benchCtx(b)
					// Each call is bounded by benchDeadline: a message the
					// broker lost fails the run instead of hanging it.
					bounded := func(call func(context.Context) error) func(context.Context) error {
						return func(ctx context.Context) error {
							ctx, cancel := context.WithTimeout(ctx, benchDeadline)
							defer cancel()
							return call(ctx)
						}
					}
					sides := []func(context.Context) error{bounded(p.rawCall), bounded(p.sdkCall)}
					for _, call := range sides {
						if _, err := pipeline(ctx, 2*benchInFlight, call); err != nil {
							b.Fatal(err)
						}
					}
					const rounds = 10
					per := max(int64(b.N)/rounds, benchInFlight)
					var wall [2]time.Duration
					b.ResetTimer()
					for range rounds {
						for i, call := range sides {
							t0 := time.Now()
							if _, err := pipeline(ctx, per, call); err != nil {
								b.Fatal(err)
							}
							wall[i] += time.Since(t0)
						}
					}
					b.StopTimer()
					raw := float64(per*rounds) / wall[0].Seconds()
					sdk := float64(per*rounds) / wall[1].Seconds()
					b.ReportMetric(raw, "raw-req/s")
					b.ReportMetric(sdk, "sdk-req/s")
					b.ReportMetric(sdk/raw, "req/s-ratio")
				})
			}
		})
	}
}
