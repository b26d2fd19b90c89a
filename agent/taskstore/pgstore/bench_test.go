package pgstore

// Benchmarks of the PostgreSQL task store (figures in docs/benchmarks.md,
// "Task store on PostgreSQL"): a task created and completed through the
// Store against the floor of a plain pgx INSERT and UPDATE of a row of the
// same size, at 64 goroutines on pools of one size, in one run. Nothing
// here asserts on time.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
)

const (
	// benchWorkers is how many goroutines create and complete tasks.
	benchWorkers = 64
	// benchBlock is how many tasks a side of "paired" does in a block.
	benchBlock = 2000
	// benchText is the length of the message's and the artifact's text.
	benchText = 1024
)

// benchSeq numbers the tasks of every run of the binary: ids never repeat.
var benchSeq atomic.Int64

// benchRig is a Store and, on a pool of the same configuration, the
// floor's table.
type benchRig struct {
	store *Store
	pool  *pgxpool.Pool
	text  string
}

func startBenchRig(b *testing.B) *benchRig {
	b.Helper()
	return startBenchRigOn(b, pgtest.NewDatabase(b))
}

// startBenchRigOn is startBenchRig on the database dsn names.
func startBenchRigOn(b *testing.B, dsn string) *benchRig {
	b.Helper()
	s, err := Open(ctx, dsn, Options{Migrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	// The floor's pool: the store's configuration (its size included).
	pool, err := pgxpool.NewWithConfig(ctx, s.pool.Config())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_floor (id text PRIMARY KEY, context_id text NOT NULL,
		state text NOT NULL, updated timestamptz NOT NULL, task bytea NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.Logf("pool of %d connections, %d goroutines", pool.Config().MaxConns, benchWorkers)
	return &benchRig{store: s, pool: pool, text: strings.Repeat("lorem ipsum ", benchText/12+1)[:benchText]}
}

// created is the record of task n as Create is given it: a ~1 KiB
// message in its history, working.
func (r *benchRig) created(n int64) taskstore.Record {
	id := "task-" + strconv.FormatInt(n, 10)
	msgID := "msg-" + strconv.FormatInt(n, 10)
	return taskstore.Record{Task: a2a.Task{ID: id, ContextID: "ctx-" + strconv.FormatInt(n, 10),
		Status:  &a2a.TaskStatus{State: a2a.TaskStateWorking},
		History: []a2a.Message{{MessageID: msgID, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(r.text)}}}}},
		MessageIDs: []string{msgID}}
}

// complete completes a task with a ~1 KiB artifact.
func (r *benchRig) complete(rec *taskstore.Record) {
	rec.Task.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted}
	rec.Task.Artifacts = append(rec.Task.Artifacts, a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{{Content: a2a.PartText(r.text)}}})
}

// storeOp creates task n through the Store and completes it the way the
// agent writes each event of a task: ReplaceTask.
func (r *benchRig) storeOp(ctx context.Context, n int64) error {
	rec, err := r.store.Create(ctx, r.created(n))
	if err != nil {
		return err
	}
	r.complete(&rec)
	return r.store.ReplaceTask(ctx, rec.Task)
}

// updateOp creates task n through the Store and completes it with Update,
// which reads the task and runs a function on it while the row is locked.
func (r *benchRig) updateOp(ctx context.Context, n int64) error {
	rec, err := r.store.Create(ctx, r.created(n))
	if err != nil {
		return err
	}
	_, err = r.store.Update(ctx, rec.Task.ID, func(rec *taskstore.Record) error {
		r.complete(rec)
		return nil
	})
	return err
}

// floorOp inserts task n's row and updates it to its completed form, the
// same JSON the Store writes, each statement on its own.
func (r *benchRig) floorOp(ctx context.Context, n int64) error {
	rec := r.created(n)
	body, err := rec.Task.AppendJSON(nil)
	if err != nil {
		return err
	}
	if _, err := r.pool.Exec(ctx, "INSERT INTO bench_floor (id, context_id, state, updated, task) VALUES ($1, $2, $3, $4, $5)",
		rec.Task.ID, rec.Task.ContextID, string(rec.Task.Status.State), time.Now(), body); err != nil {
		return err
	}
	r.complete(&rec)
	if body, err = rec.Task.AppendJSON(body[:0]); err != nil {
		return err
	}
	_, err = r.pool.Exec(ctx, "UPDATE bench_floor SET state = $2, updated = $3, task = $4 WHERE id = $1",
		rec.Task.ID, string(rec.Task.Status.State), time.Now(), body)
	return err
}

// parallel runs op n times on benchWorkers goroutines and returns the
// rate achieved, in tasks a second.
func parallel(ctx context.Context, n int, op func(context.Context, int64) error) (float64, error) {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := op(ctx, benchSeq.Add(1)); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(t0).Seconds(), first
}

// BenchmarkCreateComplete creates a task (a ~1 KiB message, working) and
// completes it with a ~1 KiB artifact, at 64 goroutines: "store" through
// the Store as the agent does (Create, then ReplaceTask), "update" through
// Create and Update, "pgx" the floor (a plain INSERT then UPDATE of the
// same JSON into a table of its own, on a pool of the same size), each
// with b.RunParallel; "paired" runs blocks of benchBlock tasks of each in
// turn in one run and reports the rate of each and its ratio to pgx
// (target for store/pgx: at least 0.5). The store has its default bounds:
// once it holds DefaultMaxTasks tasks, each Create evicts a finished one.
func BenchmarkCreateComplete(b *testing.B) {
	benchCreateComplete(b, startBenchRig(b))
}

// BenchmarkCreateCompleteDurable is BenchmarkCreateComplete on a node of
// its own that flushes each commit to disk, PostgreSQL's default
// (pgtest.StartDurable): what a production node pays, the floor alike.
func BenchmarkCreateCompleteDurable(b *testing.B) {
	benchCreateComplete(b, startBenchRigOn(b, pgtest.StartDurable(b).NewDatabase(b)))
}

func benchCreateComplete(b *testing.B, r *benchRig) {
	sides := []struct {
		name string
		op   func(context.Context, int64) error
	}{{"store", r.storeOp}, {"update", r.updateOp}, {"pgx", r.floorOp}}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			b.SetParallelism(max(1, benchWorkers/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := side.op(ctx, benchSeq.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "tasks/s")
		})
	}
	b.Run("paired", func(b *testing.B) {
		for _, side := range sides {
			if _, err := parallel(ctx, 200, side.op); err != nil {
				b.Fatal(err)
			}
		}
		rates := make([][]float64, len(sides))
		b.ResetTimer()
		for done, round := 0, 0; done < b.N; round++ {
			n := min(benchBlock, b.N-done)
			for k := range sides {
				i := (round + k) % len(sides)
				rate, err := parallel(ctx, n, sides[i].op)
				if err != nil {
					b.Fatal(fmt.Errorf("%s: %w", sides[i].name, err))
				}
				rates[i] = append(rates[i], rate)
			}
			done += n
		}
		b.StopTimer()
		floor := median(rates[len(sides)-1])
		for i, side := range sides {
			rate := median(rates[i])
			b.ReportMetric(rate, side.name+"-tasks/s")
			if i < len(sides)-1 {
				b.ReportMetric(rate/floor, side.name+"/pgx")
			}
		}
	})
}

// median returns the median of v (which it sorts).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
