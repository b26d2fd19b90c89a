package mqtt

// Benchmark of SendMessage on each task store (figures in
// docs/benchmarks.md, "Task store on PostgreSQL"): SendMessage round trips
// over the embedded broker to two agents alike but for their task store,
// Bolt and PostgreSQL, in one run.
// Nothing here asserts on time.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// storeBenchBlock is how many round trips a kind makes in a block of
// "paired".
const storeBenchBlock = 500

// storeBench is one client and, on one broker, an agent per task store
// whose handler completes every task at once.
type storeBench struct {
	client *Client
	msg    *a2a.Message
}

// startStoreBench starts the embedded broker, a PostgreSQL node of the
// benchmark's own (the package's TestMain is goleak's, not pgtest.Main),
// the agents "bolt-agent" and "postgres-agent", and a client.
func startStoreBench(b *testing.B) *storeBench {
	b.Helper()
	ctx := benchCtx(b)
	brokerURL := mqtttest.StartEmbedded(b).URL()

	bolt, err := taskstore.OpenBolt(filepath.Join(b.TempDir(), "tasks.db"), nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bolt.Close() })
	pg, err := pgstore.Open(ctx, pgtest.Start(b).NewDatabase(b), pgstore.Options{Migrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })

	for _, st := range []struct {
		id    string
		store taskstore.Store
	}{{"bolt-agent", bolt}, {"postgres-agent", pg}} {
		srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }), agent.WithStore(st.store))
		b.Cleanup(func() { srv.Close(context.Background()) })
		a, err := NewAgent(ctx, AgentConfig{Connection: Connection{Broker: brokerURL}, Org: benchOrg, Unit: benchUnit, ID: st.id, Card: testCard("Bench"), Server: srv})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close(context.Background()) })
	}
	c, err := NewClient(ctx, ClientConfig{Connection: Connection{Broker: brokerURL}, Org: benchOrg, Unit: benchUnit, ID: "sdk-client"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(context.Background()) })
	text := strings.Repeat("lorem ipsum ", 1024/12+1)[:1024]
	return &storeBench{client: c, msg: &a2a.Message{Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}}
}

// call is one SendMessage round trip to the agent id (a new task, ~1 KiB
// of text); the task must come back completed.
func (s *storeBench) call(ctx context.Context, id string) error {
	res, err := s.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: s.msg}, requester.To(requester.Target{Agent: id}))
	if err != nil {
		return err
	}
	if res.Task == nil || res.Task.Status == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("SendMessage to %s: want a completed task, got %+v", id, res)
	}
	return nil
}

// BenchmarkSendMessageStore times SendMessage round trips, one at a time,
// through the embedded broker to an agent on Bolt ("bolt") and one on
// PostgreSQL ("postgres"), both with the stores' default bounds; "paired"
// alternates blocks of storeBenchBlock round trips of the two and reports
// the medians, the 99th percentiles and postgres/bolt of the medians
// (target: at most 1.5). The PostgreSQL node is pgtest's: fsync off.
func BenchmarkSendMessageStore(b *testing.B) {
	s := startStoreBench(b)
	kinds := []struct{ name, agent string }{{"bolt", "bolt-agent"}, {"postgres", "postgres-agent"}}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			ctx := benchCtx(b)
			for range 50 {
				if err := s.call(ctx, k.agent); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := s.call(ctx, k.agent); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
	b.Run("paired", func(b *testing.B) {
		ctx := benchCtx(b)
		for range 50 {
			for _, k := range kinds {
				if err := s.call(ctx, k.agent); err != nil {
					b.Fatal(err)
				}
			}
		}
		lat := [][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
		b.ResetTimer()
		for round := 0; len(lat[0]) < b.N; round++ {
			n := min(storeBenchBlock, b.N-len(lat[0]))
			for j := range kinds {
				i := (round + j) % len(kinds)
				for range n {
					t0 := time.Now()
					if err := s.call(ctx, kinds[i].agent); err != nil {
						b.Fatal(err)
					}
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		}
		b.StopTimer()
		b50, b99 := percentiles(lat[0])
		p50, p99 := percentiles(lat[1])
		b.ReportMetric(b50, "bolt-p50-µs")
		b.ReportMetric(p50, "postgres-p50-µs")
		b.ReportMetric(b99, "bolt-p99-µs")
		b.ReportMetric(p99, "postgres-p99-µs")
		b.ReportMetric(p50/b50, "postgres/bolt-p50")
	})
}
