package pginbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/inboxtest"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

// roomy bounds refuse nothing the tests enqueue.
var roomy = offline.QueueBounds{MaxMessages: 1 << 30, MaxBytes: 1 << 40, MaxPerPeer: 1 << 30, RecordTTL: time.Hour}

// open opens a store on dsn, closed when the test ends.
func open(t *testing.T, dsn string, o Options) *Store {
	t.Helper()
	s, err := Open(ctx, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func msg(peer, id string) inbox.Record {
	return inbox.Record{Peer: peer, MessageID: id, TaskID: "task-" + id, Payload: []byte(`{"id":"` + id + `"}`),
		Expires: inboxtest.T0.Add(time.Hour)}
}

// The contract of every store, each case on a schema of its own, then
// the totals checked against the rows.
func TestContract(t *testing.T) {
	inboxtest.Run(t, func(t *testing.T, c inboxtest.Config) func() inbox.Store {
		dsn := pgtest.NewSchema(t)
		return func() inbox.Store {
			return open(t, dsn, Options{Migrate: true, Now: c.Now, MaxReplay: c.MaxReplay})
		}
	}, inboxtest.WithCheck(func(t *testing.T, s inbox.Store) { checkTotals(t, s.(*Store)) }))
}

// checkTotals checks that the totals match the rows, and the sequence the
// Seqs.
func checkTotals(t *testing.T, s *Store) {
	t.Helper()
	var messages, bytes, replay, rows, size, keys, bad, over, badSize int64
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT coalesce(sum(messages), 0)::bigint FROM a2a_inbox_totals),
		(SELECT coalesce(sum(bytes), 0)::bigint FROM a2a_inbox_totals),
		(SELECT coalesce(sum(replay), 0)::bigint FROM a2a_inbox_totals),
		(SELECT count(*) FROM a2a_inbox),
		(SELECT coalesce(sum(size), 0)::bigint FROM a2a_inbox),
		(SELECT count(*) FROM a2a_inbox_replay),
		(SELECT count(*) FROM a2a_inbox_replay WHERE octet_length(key) <> 32),
		(SELECT count(*) FROM a2a_inbox WHERE seq > (SELECT last_value FROM a2a_inbox_seq)),
		(SELECT count(*) FROM a2a_inbox WHERE size <> octet_length(payload) - CASE WHEN sealed THEN $1::int ELSE 0 END)`, sealOverhead(s)).
		Scan(&messages, &bytes, &replay, &rows, &size, &keys, &bad, &over, &badSize)
	if err != nil {
		t.Fatal(err)
	}
	if messages != rows || bytes != size || replay != keys || bad != 0 || over != 0 || badSize != 0 {
		t.Fatalf("totals %d records %d bytes %d keys; rows %d records %d bytes %d keys; %d keys not a SHA-256, %d Seqs past the sequence, %d rows of a wrong size",
			messages, bytes, replay, rows, size, keys, bad, over, badSize)
	}
}

// sealOverhead is how much longer than its request a payload s seals is
// (0 without a ring).
func sealOverhead(s *Store) int {
	if s.keys == nil {
		return 0
	}
	return s.keys.Overhead()
}

// Two Stores on one queue (two instances of an agent) racing to take
// 1,000 records while senders enqueue them through both: each record is
// taken by exactly one, none is lost. The takers wait on Notify, not on
// a timer, when the queue is empty.
func TestTwoStoresTakeEachRecordOnce(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true}), open(t, dsn, Options{Migrate: true})
	stores := []*Store{a, b}
	const senders, each = 4, 250
	const total = senders * each
	for _, s := range stores {
		<-s.Notify() // listening
	}
	// done is closed once every record is taken, or on a failure.
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		finish()
	}
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				s := stores[(g+i)%2]
				if _, _, full, err := s.Enqueue(ctx, msg(fmt.Sprint("p", g), fmt.Sprint(i)), roomy); full != "" || err != nil {
					fail("Enqueue: %q, %v", full, err)
					return
				}
			}
		})
	}
	var takenCount atomic.Int64
	taken := make([][]uint64, len(stores))
	var missing [2]int
	for k, s := range stores {
		wg.Go(func() {
			for {
				rs, err := s.Next(ctx, 0, 16)
				if err != nil {
					fail("Next: %v", err)
					return
				}
				if len(rs) == 0 {
					select {
					case <-s.Notify():
						continue
					case <-done:
						return
					}
				}
				takes := make([]inbox.Taken, len(rs))
				for i, r := range rs {
					takes[i] = inbox.Taken{Seq: r.Seq, ReplayKey: r.Peer + "/" + r.MessageID, Until: inboxtest.T0.Add(time.Hour)}
				}
				replayed, miss, err := s.Take(ctx, takes)
				if err != nil {
					fail("Take: %v", err)
					return
				}
				for i, r := range rs {
					switch {
					case replayed[i]:
						fail("record %d replayed", r.Seq)
					case miss[i]:
						missing[k]++
					default:
						taken[k] = append(taken[k], r.Seq)
						if takenCount.Add(1) == total {
							finish()
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[uint64]int{}
	for _, seqs := range taken {
		for _, seq := range seqs {
			seen[seq]++
		}
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("record %d taken %d times", seq, n)
		}
	}
	if len(seen) != total || len(taken[0])+len(taken[1]) != total {
		t.Fatalf("%d records taken (%d and %d), %d distinct; want %d", len(taken[0])+len(taken[1]), len(taken[0]), len(taken[1]), len(seen), total)
	}
	for seq := uint64(1); seq <= total; seq++ {
		if seen[seq] != 1 {
			t.Fatalf("record %d lost", seq)
		}
	}
	if st, err := a.Stats(ctx); err != nil || st != (inbox.Stats{Replay: total}) {
		t.Fatalf("Stats %+v, %v", st, err)
	}
	checkTotals(t, a)
	t.Logf("taken %d and %d; %d and %d found missing (taken by the other)", len(taken[0]), len(taken[1]), missing[0], missing[1])
}

// waitForLockWait returns once a session of the database waits for a
// lock (pg_stat_activity's wait_event_type).
func waitForLockWait(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	for {
		var waiting int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Take passes over a record another transaction holds (FOR UPDATE SKIP
// LOCKED): it is missing at once, and still pending once that transaction
// ends without deleting it. Remove waits for the holder instead.
func TestTakeSkipsARecordAnotherTransactionHolds(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s := open(t, dsn, Options{Migrate: true})
	for _, id := range []string{"a", "b"} {
		if _, _, _, err := s.Enqueue(ctx, msg("p1", id), roomy); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM a2a_inbox WHERE seq = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	replayed, missing, err := s.Take(ctx, []inbox.Taken{{Seq: 1, ReplayKey: "k1"}, {Seq: 2, ReplayKey: "k2"}})
	if err != nil || !slices.Equal(missing, []bool{true, false}) || slices.Contains(replayed, true) {
		t.Fatalf("Take while record 1 is held = %v, %v, %v", replayed, missing, err)
	}
	removed := make(chan []inbox.Record, 1)
	go func() {
		rs, err := s.Remove(ctx, []uint64{1})
		if err != nil {
			t.Error(err)
		}
		removed <- rs
	}()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	waitForLockWait(t, admin) // Remove waits for the holder
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rs := <-removed; len(rs) != 1 || rs[0].Seq != 1 {
		t.Fatalf("Remove once the holder let go = %v", rs)
	}
	if st, _ := s.Stats(ctx); st != (inbox.Stats{Replay: 1}) {
		t.Fatalf("Stats %+v", st)
	}
	checkTotals(t, s)
}

// expectHeard reads the payloads of the notifications a listener heard
// and fails the test unless they are want, in order.
func expectHeard(t *testing.T, heard chan string, want ...string) {
	t.Helper()
	for i, w := range want {
		if got := <-heard; got != w {
			t.Fatalf("notification %d: %q, want %q (all wanted: %q)", i, got, w, want)
		}
	}
}

// notify sends a notification with payload on a store's channel, from a
// session of the test's.
func notify(t *testing.T, admin *pgx.Conn, s *Store, payload string) {
	t.Helper()
	if _, err := admin.Exec(ctx, "SELECT pg_notify($1, $2)", s.channel, payload); err != nil {
		t.Fatal(err)
	}
}

// A LISTEN wake arrives in one Store after an Enqueue through another, and
// after an Untake that puts a record back, and after nothing else; the
// listener connects again when its connection is ended, and wakes its
// Store then. Notifications reach a session in the order of their
// commits (PostgreSQL's documentation, NOTIFY): a marker the test sends
// last tells that nothing else was heard before it.
func TestNotifyWakesOnAnotherStoresEnqueueAndSurvivesALostConnection(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true}), open(t, dsn, Options{Migrate: true})
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	heard := make(chan string, 16)
	b.lis.heard = heard
	wake := b.Notify()
	if wake != b.Notify() {
		t.Fatal("Notify returned two channels")
	}
	<-wake // listening: records may have come before
	if n := b.lis.listens.Load(); n != 1 {
		t.Fatalf("%d connections listened", n)
	}
	r, _, _, err := a.Enqueue(ctx, msg("p1", "a"), roomy)
	if err != nil {
		t.Fatal(err)
	}
	<-wake
	expectHeard(t, heard, "")
	if got, err := b.Next(ctx, 0, 10); err != nil || len(got) != 1 || got[0].Seq != r.Seq {
		t.Fatalf("Next after the wake = %v, %v", got, err)
	}

	// Take, a duplicate and a refused enqueue commit no record and notify
	// nothing; an Untake that puts a record back does, one that puts none
	// does not.
	if _, _, err := a.Take(ctx, []inbox.Taken{{Seq: r.Seq, ReplayKey: "k"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, full, err := a.Enqueue(ctx, msg("p1", "b"), offline.QueueBounds{}); full == "" || err != nil {
		t.Fatalf("Enqueue over the bounds: %q, %v", full, err)
	}
	if err := a.Untake(ctx, []inbox.Record{r}, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if _, dup, _, err := a.Enqueue(ctx, msg("p1", "a"), roomy); !dup || err != nil {
		t.Fatalf("a duplicate: %v, %v", dup, err)
	}
	if err := a.Untake(ctx, []inbox.Record{r}, nil); err != nil {
		t.Fatal(err)
	}
	notify(t, admin, b, "marker")
	expectHeard(t, heard, "", "marker")
	<-wake // signalled before the marker was passed on: nothing else waits

	// The listening session is ended: the listener connects again and
	// wakes its store, then hears the next enqueue.
	var ended bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(b.lis.pid.Load())).Scan(&ended); err != nil || !ended {
		t.Fatalf("pg_terminate_backend: %v, %v", ended, err)
	}
	<-wake
	if n := b.lis.listens.Load(); n != 2 {
		t.Fatalf("woken with %d connections listened, want 2: the wake was not the reconnection's", n)
	}
	if _, _, _, err := a.Enqueue(ctx, msg("p1", "c"), roomy); err != nil {
		t.Fatal(err)
	}
	<-wake
	expectHeard(t, heard, "")
	if got, err := b.Next(ctx, 0, 10); err != nil || len(got) != 2 {
		t.Fatalf("Next after the wake = %v, %v", got, err)
	}

	// Closed, the store stops listening; Notify starts nothing.
	b.Close()
	if b.lis.ctx.Err() == nil {
		t.Fatal("the listener runs on")
	}
	<-b.lis.done
	if b.Notify() != wake {
		t.Fatal("Notify after Close returned another channel")
	}
}

// The queues of two schemas of one database have channels of their own:
// one's enqueue does not wake the other's Stores.
func TestTheQueuesOfTwoSchemasHaveTheirOwnChannels(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA one; CREATE SCHEMA two"); err != nil {
		t.Fatal(err)
	}
	one := open(t, dsn+"&search_path=one", Options{Migrate: true})
	two := open(t, dsn+"&search_path=two", Options{Migrate: true})
	if one.channel == two.channel {
		t.Fatalf("both on channel %s", one.channel)
	}
	heard := make(chan string, 16)
	one.lis.heard = heard
	<-one.Notify()
	if _, _, _, err := two.Enqueue(ctx, msg("p1", "a"), roomy); err != nil {
		t.Fatal(err)
	}
	notify(t, admin, one, "marker")
	expectHeard(t, heard, "marker")
	if _, _, _, err := one.Enqueue(ctx, msg("p1", "b"), roomy); err != nil {
		t.Fatal(err)
	}
	expectHeard(t, heard, "")
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM one.a2a_inbox").Scan(&n); err != nil || n != 1 {
		t.Fatalf("one.a2a_inbox: %d %v", n, err)
	}
}

// Open checks the offline queue's schema (the versioning itself is
// internal/pgschema's, tested there, with the task store's migrations
// beside it): a database without it is refused unless Options.Migrate
// applies it, one newer either way, with a *SchemaError naming both
// versions. OpenPool leaves the caller's pool open, its listener stopped.
func TestOpenChecksTheSchemaVersion(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	_, err := Open(ctx, dsn, Options{})
	var se *SchemaError
	if !errors.As(err, &se) || *se != (SchemaError{Database: 0, Known: SchemaVersion}) || se.Newer() ||
		!strings.HasPrefix(err.Error(), fmt.Sprintf("pginbox: the database's offline queue schema is version 0, this program needs version %d: ", SchemaVersion)) {
		t.Fatalf("a database without the schema: %v", err)
	}
	pool := open(t, dsn, Options{Migrate: true}).pool
	if v, err := Version(ctx, pool); v != SchemaVersion || err != nil {
		t.Fatalf("version after Options.Migrate: %d %v", v, err)
	}
	s, err := OpenPool(ctx, pool, Options{})
	if err != nil {
		t.Fatalf("a migrated database: %v", err)
	}
	<-s.Notify()
	s.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("Close closed the caller's pool: %v", err)
	}
	newer := SchemaVersion + 1
	if _, err := pool.Exec(ctx, "UPDATE a2abind_schema SET version = $1 WHERE component = 'inbox'", newer); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{Migrate: true}); !errors.As(err, &se) || se.Database != newer || !se.Newer() ||
		!strings.Contains(err.Error(), fmt.Sprintf("offline queue schema is version %d, newer than version %d", newer, SchemaVersion)) {
		t.Fatalf("a newer schema: %v", err)
	}
	if from, err := Migrate(ctx, pool); from != newer || !errors.As(err, &se) || se.Database != newer {
		t.Fatalf("migrate a newer schema: %d %v", from, err)
	}
}

// The bounds and the replay cache are the queue's, whichever Store
// enqueues.
func TestBoundsAreSharedByTheStoresOfAQueue(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true, MaxReplay: 3}), open(t, dsn, Options{Migrate: true, MaxReplay: 3})
	bounds := offline.QueueBounds{MaxMessages: 4, MaxBytes: 1 << 20, MaxPerPeer: 2}
	for i, want := range []offline.QueueFullKind{"", "", offline.QueueFullKindPeer, offline.QueueFullKindPeer} {
		s := []*Store{a, b}[i%2]
		if _, _, full, err := s.Enqueue(ctx, msg("p1", fmt.Sprint(i)), bounds); full != want || err != nil {
			t.Fatalf("p1's enqueue %d: %q, %v; want %q", i, full, err, want)
		}
	}
	for i, want := range []offline.QueueFullKind{"", "", offline.QueueFullKindMessages} {
		s := []*Store{b, a}[i%2]
		if _, _, full, err := s.Enqueue(ctx, msg(fmt.Sprint("q", i), "x"), bounds); full != want || err != nil {
			t.Fatalf("q%d's enqueue: %q, %v; want %q", i, full, err, want)
		}
	}
	rs, err := b.Next(ctx, 0, 10)
	if err != nil || len(rs) != 4 {
		t.Fatalf("Next = %v, %v", rs, err)
	}
	var takes []inbox.Taken
	for _, r := range rs[:3] {
		takes = append(takes, inbox.Taken{Seq: r.Seq, ReplayKey: r.Peer + "/" + r.MessageID, Until: inboxtest.T0.Add(time.Hour)})
	}
	if _, _, err := b.Take(ctx, takes); err != nil {
		t.Fatal(err)
	}
	// Three keys entered through b fill a's cache too.
	if _, _, full, err := a.Enqueue(ctx, msg("r", "x"), roomy); full != offline.QueueFullKindMessages || err != nil {
		t.Fatalf("with the replay cache full: %q, %v", full, err)
	}
	if st, _ := a.Stats(ctx); st != (inbox.Stats{Messages: 1, Bytes: rs[3].Size(), Replay: 3}) {
		t.Fatalf("Stats %+v", st)
	}
}

// A payload over MaxPayloadBytes is refused before anything is sent
// (the limit lowered, not to allocate a gigabyte).
func TestAPayloadOverTheLimitIsRefused(t *testing.T) {
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true})
	defer func(old int) { maxPayload = old }(maxPayload)
	maxPayload = 100
	r := msg("p1", "a")
	r.Payload = make([]byte, maxPayload+1)
	if _, _, _, err := s.Enqueue(ctx, r, roomy); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Fatalf("Enqueue = %v", err)
	}
	r.Seq = 1
	if err := s.Untake(ctx, []inbox.Record{r}, nil); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Fatalf("Untake = %v", err)
	}
	if st, _ := s.Stats(ctx); st != (inbox.Stats{}) {
		t.Fatalf("Stats %+v", st)
	}
}
