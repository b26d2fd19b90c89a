package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// pginbox's Store wakes the agents sharing its queue.
var _ inbox.Notifier = (*pginbox.Store)(nil)

// fleetGuard bounds each wait of the fleet tests: a hang guard, not a
// measure (the waits are for events, never for time to pass).
const fleetGuard = time.Minute

// fleetTurns records the turns the agents of a fleet ran: the agent of
// each, by task, and the wakeCause of the delivery round it ran in.
type fleetTurns struct {
	mu    sync.Mutex
	by    map[string][]string // task id: the agents that ran a turn of it
	cause map[string]wakeCause
	ran   chan string // the task id of each turn, once it completed
}

func newFleetTurns() *fleetTurns {
	return &fleetTurns{by: map[string][]string{}, cause: map[string]wakeCause{}, ran: make(chan string, 1024)}
}

// fleetHandler is one agent's handler: it completes every turn and
// records it.
type fleetHandler struct {
	name  string
	turns *fleetTurns
	o     *Offline
}

func (h *fleetHandler) ServeTurn(ctx context.Context, t *Turn) error {
	h.turns.mu.Lock()
	h.turns.by[t.TaskID()] = append(h.turns.by[t.TaskID()], h.name)
	// A delivered turn runs while its round waits for it: the round's
	// cause is stable.
	h.turns.cause[t.TaskID()] = wakeCause(h.o.cause.Load())
	h.turns.mu.Unlock()
	err := t.Complete(ctx, "done by "+h.name)
	h.turns.ran <- t.TaskID()
	return err
}

// fleetMember is an agent in mode sleep, storing and forwarding, with a
// task store and an offline queue of its own on a shared database.
type fleetMember struct {
	*offlineFixture
	name  string
	store *pgstore.Store
	queue *pginbox.Store
	close func()
}

// newFleetMember starts an agent on dsn's database (migrating it). Idle
// is an hour: within a test the loop never polls, it delivers only when
// woken (SetAwake) or notified. roundEnded, when set, is the loop's hook.
func newFleetMember(t *testing.T, dsn, name string, turns *fleetTurns, roundEnded func(wakeCause)) *fleetMember {
	t.Helper()
	ctx := context.Background()
	store, err := pgstore.Open(ctx, dsn, pgstore.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	q, err := pginbox.Open(ctx, dsn, pginbox.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	o, err := NewOffline(OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q,
		DeliveryBatch: 4, Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	o.roundEnded = roundEnded
	h := &fleetHandler{name: name, turns: turns, o: o}
	f := newFixture(t, h, WithOffline(o), WithStore(store))
	f.ids = tasklife.ResponderIDs
	f.caller = Caller{Subject: "peer-a"}
	var once sync.Once
	m := &fleetMember{offlineFixture: &offlineFixture{fixture: f, o: o}, name: name, store: store, queue: q}
	m.close = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), fleetGuard)
			defer cancel()
			if err := f.srv.Close(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	return m
}

// waitTurns reads n turns from turns.ran.
func waitTurns(t *testing.T, turns *fleetTurns, n int) {
	t.Helper()
	guard := time.NewTimer(fleetGuard)
	defer guard.Stop()
	for i := range n {
		select {
		case <-turns.ran:
		case <-guard.C:
			t.Fatalf("%d of %d turns ran, then none for %v", i, n, fleetGuard)
		}
	}
}

// TestOfflineFleetSharesAPostgreSQLQueue: two agents share an offline
// queue on PostgreSQL (agent/inbox/pginbox) and a task store
// (agent/taskstore/pgstore), each with Stores of its own, as two
// processes would.
func TestOfflineFleetSharesAPostgreSQLQueue(t *testing.T) {
	node := pgtest.Start(t)

	// Messages queued through A while both sleep; both woken: each record
	// is delivered by one of them, once, and none is lost.
	t.Run("both woken: each record delivered once", func(t *testing.T) {
		const n = 40
		dsn := node.NewDatabase(t)
		turns := newFleetTurns()
		a := newFleetMember(t, dsn, "A", turns, nil)
		b := newFleetMember(t, dsn, "B", turns, nil)
		var ids []string
		for i := range n {
			ids = append(ids, queuedTaskID(t, a.sendAs("peer-a", msg("", "", fmt.Sprint("job ", i)))))
		}
		if st, err := b.o.Stats(context.Background()); err != nil || st.Messages != n {
			t.Fatalf("B sees %d queued messages (%v), want %d: one queue", st.Messages, err, n)
		}
		var wg sync.WaitGroup
		for _, m := range []*fleetMember{a, b} {
			wg.Go(func() { m.o.SetAwake(true) })
		}
		wg.Wait()
		waitTurns(t, turns, n)
		// Stopped, both loops and their turns are over: what ran, ran.
		a.close()
		b.close()
		stA, errA := a.o.Stats(context.Background())
		stB, errB := b.o.Stats(context.Background())
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		turns.mu.Lock()
		defer turns.mu.Unlock()
		for _, id := range ids {
			if by := turns.by[id]; len(by) != 1 {
				t.Errorf("task %s ran %d times (%v), want once", id, len(by), by)
			}
			got, err := a.store.Get(context.Background(), id)
			if err != nil || got.Task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("task %s: %v %v, want COMPLETED", id, got.Task.Status, err)
			}
		}
		if len(turns.by) != n {
			t.Errorf("%d tasks ran, want %d", len(turns.by), n)
		}
		if stA.Messages != 0 || stA.Delivered+stB.Delivered != n || stA.Drained+stB.Drained != 0 {
			t.Errorf("stats A %+v, B %+v: want an empty queue, %d delivered in all, none drained", stA, stB, n)
		}
		t.Logf("A delivered %d, B %d", stA.Delivered, stB.Delivered)
	})

	// B awake, A asleep: a message queued through A is delivered by B, in
	// a round its queue's notification started (the loops never poll:
	// Idle is an hour).
	t.Run("a notification wakes the agent that is awake", func(t *testing.T) {
		dsn := node.NewDatabase(t)
		turns := newFleetTurns()
		a := newFleetMember(t, dsn, "A", turns, nil)
		var mu sync.Mutex
		var ended []wakeCause
		endedOne := make(chan struct{}, 1)
		b := newFleetMember(t, dsn, "B", turns, func(c wakeCause) {
			mu.Lock()
			ended = append(ended, c)
			mu.Unlock()
			select {
			case endedOne <- struct{}{}:
			default:
			}
		})
		b.o.SetAwake(true)
		// The round SetAwake started is over: from now on only a
		// notification starts one.
		guard := time.NewTimer(fleetGuard)
		defer guard.Stop()
		for {
			mu.Lock()
			woken := slices.Contains(ended, wokenByKick)
			mu.Unlock()
			if woken {
				break
			}
			select {
			case <-endedOne:
			case <-guard.C:
				t.Fatalf("B's wake round did not end within %v", fleetGuard)
			}
		}
		id := queuedTaskID(t, a.sendAs("peer-a", msg("", "", "while B is awake")))
		waitTurns(t, turns, 1)
		turns.mu.Lock()
		by, cause := turns.by[id], turns.cause[id]
		turns.mu.Unlock()
		if !slices.Equal(by, []string{"B"}) || cause != wokenByAdded {
			t.Fatalf("task %s ran on %v in a round of cause %d, want on B in a round its notification started (%d)", id, by, cause, wokenByAdded)
		}
		// GetTask through the sleeping A reads the shared store.
		if task := a.waitState(id, a2a.TaskStateCompleted); agentText(task) != "done by B" {
			t.Errorf("GetTask through A: %q", agentText(task))
		}
	})
}
