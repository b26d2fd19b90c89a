package pginbox

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/internal/pgschema"
	"github.com/a2abind/a2abind/statemachines/reach"
)

// Options configure a Store. The zero value has the defaults of the bbolt
// store (inbox.BoltOptions).
type Options struct {
	// Migrate applies the migrations the database lacks when the store
	// opens (Migrate). Without it Open refuses a database whose schema is
	// older than SchemaVersion.
	Migrate bool
	// MaxReplay is the most keys the replay cache holds, over the whole
	// database, before enqueues are refused with kind messages (0:
	// inbox.DefaultMaxReplay). A key takes a row of about 80 bytes and an
	// index entry of two.
	MaxReplay int
	// Now stamps the Enqueued time of records (nil: time.Now).
	Now func() time.Time
	// Logger receives a Warn when the connection Notify listens on is lost
	// or cannot be made (nil: nothing is logged).
	Logger *slog.Logger
	// Keys seals the payload of each record before it is written, as
	// inbox.BoltOptions.Keys does (the payload whole, bound to the
	// record's Peer and ids; these stay in clear), and opens it when
	// read. Without it payloads are written in clear. Rows written in
	// clear are read as they are. Next, Lookup and Expired return an error
	// naming the Seq of a row sealed with a key the ring lacks
	// (sealed.ErrUnknownKey), or read without a ring (inbox.ErrNoKeys);
	// Remove removes it all the same, and returns it without its payload.
	// Instances sharing a queue should share the ring (docs/guide.md,
	// "Secrets at rest").
	Keys *sealed.Ring
}

// MaxPayloadBytes is the largest payload the store takes: a bytea value
// holds at most 1 GB (PostgreSQL's documentation, "Binary Data Types"),
// and the record's other fields travel with it. A larger one is refused
// with an error before anything is stored; the bounds (MaxBytes) refuse
// far smaller ones first.
const MaxPayloadBytes = 1<<30 - 1<<20

// maxPayload is MaxPayloadBytes, lowered by tests.
var maxPayload = MaxPayloadBytes

// Store is an inbox.Store on PostgreSQL. It is safe for concurrent use,
// and several Stores, in one process or many, may share a queue (a
// database, or a schema of one): each record is taken by one of them
// (see the package documentation).
type Store struct {
	pool *pgxpool.Pool
	// own is set when Open made the pool: Close closes it.
	own       bool
	now       func() time.Time
	maxReplay int64
	// channel is the queue's NOTIFY channel.
	channel string
	lis     *listener
	closed  atomic.Bool
	keys    *sealed.Ring
}

// totalSlots is the number of rows of a2a_inbox_totals (migration 1); slot
// 0 is the enqueues'.
const totalSlots = 16

// maxAttempts is how many times a transaction PostgreSQL aborted to break
// a deadlock, or for a serialization failure, is run.
const maxAttempts = 5

// expireBatch is the most replay keys one statement of Expired deletes.
const expireBatch = 1000

var errNoExpiry = errors.New("pginbox: the record has no Expires")

// Open connects to the database dsn names and opens the store on it; Close
// closes the connections. Unless the DSN sets plan_cache_mode, the
// connections use force_generic_plan: the store's statements, prepared
// once a connection, find their rows by index whatever their arguments,
// and PostgreSQL would otherwise plan each execution anew.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	return pgschema.Open(ctx, schema, dsn, func(pool *pgxpool.Pool) (*Store, error) {
		s, err := OpenPool(ctx, pool, o)
		if err == nil {
			s.own = true
		}
		return s, err
	})
}

// OpenPool opens the store on a pool the caller keeps: Close leaves it
// open. It checks the schema version (see Options.Migrate). Give the
// pool's connections plan_cache_mode=force_generic_plan (a run-time
// parameter of its configuration) to save the planning Open saves. The
// connection Notify listens on is made from the pool's configuration.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	if err := schema.Check(ctx, pool, o.Migrate); err != nil {
		return nil, err
	}
	var oid uint32
	if err := pool.QueryRow(ctx, "SELECT 'a2a_inbox'::regclass::oid").Scan(&oid); err != nil {
		return nil, fmt.Errorf("pginbox: %w", err)
	}
	s := &Store{pool: pool, now: o.Now, maxReplay: int64(o.MaxReplay), channel: fmt.Sprintf("a2a_inbox_%d", oid), keys: o.Keys}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxReplay <= 0 {
		s.maxReplay = inbox.DefaultMaxReplay
	}
	s.lis = newListener(pool.Config().ConnConfig.Copy(), s.channel, o.Logger)
	return s, nil
}

// Close stops the listener of Notify and closes the pool if Open made it;
// every later call returns inbox.ErrClosed. Closing twice returns nil.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.lis.stop()
	if s.own {
		s.pool.Close()
	}
	return nil
}

// begin checks that the store is open and ctx live.
func (s *Store) begin(ctx context.Context) error {
	if s.closed.Load() {
		return inbox.ErrClosed
	}
	return ctx.Err()
}

// fail maps an error of the database: inbox.ErrClosed once the store is
// closed, ctx's error once it ended, else the error, wrapped.
func (s *Store) fail(ctx context.Context, err error) error {
	switch {
	case s.closed.Load():
		return inbox.ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("pginbox: %w", err)
}

// tx runs fn in a transaction (READ COMMITTED, the default), again when
// PostgreSQL aborted it to break a deadlock or for a serialization
// failure: fn starts over from its own beginning.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		var pe *pgconn.PgError
		if err == nil || attempt == maxAttempts || ctx.Err() != nil || !errors.As(err, &pe) ||
			pe.Code != "40P01" && pe.Code != "40001" { // deadlock_detected, serialization_failure
			return err
		}
	}
}

// slot picks a slot of the totals for a change other than an enqueue.
func slot() int16 { return int16(1 + rand.IntN(totalSlots-1)) }

// replayKey is how the replay cache holds a key: its SHA-256 (FIPS 180-4).
func replayKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// stamp is a time as PostgreSQL's timestamptz keeps it, to the
// microsecond.
func stamp(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// recordColumns are the columns of a record, in the order scan reads them:
// sealed says whether the payload is sealed, size is its length in clear.
const recordColumns = "seq, peer, message_id, task_id, context_id, payload, enqueued, expires, sealed, size"

// stored is a record as read: its payload sealed when isSealed.
type stored struct {
	inbox.Record
	isSealed bool
}

// scanRecord reads a row of recordColumns.
func scanRecord(row pgx.Row) (stored, error) {
	var r stored
	var seq, size int64
	var peer, messageID, taskID, contextID []byte
	if err := row.Scan(&seq, &peer, &messageID, &taskID, &contextID, &r.Payload, &r.Enqueued, &r.Expires, &r.isSealed, &size); err != nil {
		return stored{}, err
	}
	r.Seq = uint64(seq)
	r.Peer, r.MessageID, r.TaskID, r.ContextID = string(peer), string(messageID), string(taskID), string(contextID)
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	return r, nil
}

// collect reads the records of rows, their payloads still sealed.
func collect(rows pgx.Rows) ([]stored, error) {
	var out []stored
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// seal returns the payload to store for r, and whether it is sealed.
func (s *Store) seal(r *inbox.Record) ([]byte, bool, error) {
	if s.keys == nil {
		return r.Payload, false, nil
	}
	v, err := inbox.SealPayload(s.keys, r)
	return v, true, err
}

// open returns the record of a row, its payload opened.
func (s *Store) open(r stored) (inbox.Record, error) {
	if !r.isSealed {
		return r.Record, nil
	}
	if s.keys == nil {
		return inbox.Record{}, fmt.Errorf("%w (seq %d)", inbox.ErrNoKeys, r.Seq)
	}
	// The payload is sealed as the bbolt store's are: it does not open in
	// another record.
	if err := inbox.OpenPayload(&r.Record, s.keys); err != nil {
		return inbox.Record{}, fmt.Errorf("pginbox: %w (seq %d)", err, r.Seq)
	}
	return r.Record, nil
}

// openAll opens the payloads of rows.
func (s *Store) openAll(rows []stored) ([]inbox.Record, error) {
	var out []inbox.Record
	for _, r := range rows {
		rec, err := s.open(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// Enqueue implements inbox.Store. Enqueues take turns: each locks slot 0
// of the totals for its transaction, then finds a duplicate, checks the
// replay cache and the bounds against the committed totals, inserts the
// record and adds it to the totals; so the bounds hold exactly, over every
// Store of the queue. The record is committed (with the durability of the
// server's settings: synchronous_commit) when Enqueue returns, and a
// notification wakes the Stores listening (Notify). Enqueued is the
// store's clock; Enqueued and Expires are kept to the microsecond.
//
// If ctx ends first, nothing is stored and ctx.Err() is returned (unless
// it ended while the commit was under way: then the record may be
// stored).
func (s *Store) Enqueue(ctx context.Context, r inbox.Record, b offline.QueueBounds) (stored inbox.Record, dup bool, full offline.QueueFullKind, err error) {
	if err := s.begin(ctx); err != nil {
		return inbox.Record{}, false, "", err
	}
	if r.Expires.IsZero() {
		return inbox.Record{}, false, "", errNoExpiry
	}
	if len(r.Payload) > maxPayload {
		return inbox.Record{}, false, "", fmt.Errorf("pginbox: a payload of %d bytes is over the %d the store takes (MaxPayloadBytes)", len(r.Payload), maxPayload)
	}
	r.Seq = 0
	r.Enqueued = stamp(s.now())
	r.Expires = stamp(r.Expires)
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	peer, messageID := []byte(r.Peer), []byte(r.MessageID)
	payload, isSealed, err := s.seal(&r)
	if err != nil {
		return inbox.Record{}, false, "", fmt.Errorf("pginbox: %w", err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		stored, dup, full = inbox.Record{}, false, ""
		if _, err := tx.Exec(ctx, "SELECT 1 FROM a2a_inbox_totals WHERE slot = 0 FOR UPDATE"); err != nil {
			return err
		}
		// Statements after the lock: they see every enqueue committed
		// before it.
		if r.MessageID != "" {
			row, err := scanRecord(tx.QueryRow(ctx, `SELECT `+recordColumns+` FROM a2a_inbox
				WHERE message_id <> '\x'::bytea AND sha256(message_id) = sha256($1) AND message_id = $1 AND peer = $2
				ORDER BY seq DESC LIMIT 1`, messageID, peer))
			if err == nil {
				first, err := s.open(row)
				if err != nil {
					return err
				}
				stored, dup = first, true
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		var occ reach.Occupancy
		var messages, replay, perPeer int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(messages), 0)::bigint, coalesce(sum(bytes), 0)::bigint, coalesce(sum(replay), 0)::bigint,
			(SELECT count(*) FROM a2a_inbox WHERE sha256(peer) = sha256($1) AND peer = $1)
			FROM a2a_inbox_totals`, peer).Scan(&messages, &occ.Bytes, &replay, &perPeer); err != nil {
			return err
		}
		if replay >= s.maxReplay {
			full = offline.QueueFullKindMessages
			return nil
		}
		occ.Messages, occ.PeerMessages = clampInt(messages), clampInt(perPeer)
		if ok, kind := reach.Fits(b, occ, r.Size()); !ok {
			full = kind
			return nil
		}
		var seq int64
		if err := tx.QueryRow(ctx, `INSERT INTO a2a_inbox (`+recordColumns+`)
			VALUES (nextval('a2a_inbox_seq'), $1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq`,
			peer, messageID, []byte(r.TaskID), []byte(r.ContextID), payload, r.Enqueued, r.Expires, isSealed, r.Size()).Scan(&seq); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue("UPDATE a2a_inbox_totals SET messages = messages + 1, bytes = bytes + $1 WHERE slot = 0", r.Size())
		batch.Queue("SELECT pg_notify($1, '')", s.channel)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		stored = r
		stored.Seq = uint64(seq)
		return nil
	})
	if err != nil {
		return inbox.Record{}, false, "", s.fail(ctx, err)
	}
	return stored, dup, full, nil
}

func clampInt(n int64) int { return int(min(n, math.MaxInt)) }

// Next implements inbox.Store: up to n pending records with Seq > after,
// oldest first, as committed when it reads them. Records another Store is
// taking at that moment may be among them: its Take, or the caller's,
// settles which takes each.
func (s *Store) Next(ctx context.Context, after uint64, n int) ([]inbox.Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if n <= 0 || after >= math.MaxInt64 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM a2a_inbox WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(after), n)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	got, err := collect(rows)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return s.openAll(got)
}

// Lookup implements inbox.Store: the oldest pending record of a task id
// ("" has none).
func (s *Store) Lookup(ctx context.Context, taskID string) (inbox.Record, bool, error) {
	if err := s.begin(ctx); err != nil {
		return inbox.Record{}, false, err
	}
	if taskID == "" {
		return inbox.Record{}, false, nil
	}
	row, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM a2a_inbox
		WHERE task_id <> '\x'::bytea AND sha256(task_id) = sha256($1) AND task_id = $1 ORDER BY seq LIMIT 1`, []byte(taskID)))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return inbox.Record{}, false, nil
	case err != nil:
		return inbox.Record{}, false, s.fail(ctx, err)
	}
	r, err := s.open(row)
	if err != nil {
		return inbox.Record{}, false, err
	}
	return r, true, nil
}

// Stats implements inbox.Store: the committed totals of the queue, over
// every Store sharing it.
func (s *Store) Stats(ctx context.Context) (inbox.Stats, error) {
	if err := s.begin(ctx); err != nil {
		return inbox.Stats{}, err
	}
	var messages, bytes, replay int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(messages), 0)::bigint, coalesce(sum(bytes), 0)::bigint, coalesce(sum(replay), 0)::bigint
		FROM a2a_inbox_totals`).Scan(&messages, &bytes, &replay); err != nil {
		return inbox.Stats{}, s.fail(ctx, err)
	}
	return inbox.Stats{Messages: clampInt(messages), Bytes: bytes, Replay: clampInt(replay)}, nil
}

// Take implements inbox.Store. It claims the records with SELECT ... FOR
// UPDATE SKIP LOCKED and deletes them in the same statement: a record
// another Store's Take holds at that moment, or has deleted, is reported
// missing at once, without waiting; so of several Stores taking one
// record, one takes it and the others find it missing. The replay keys
// of the records claimed are then entered, in the same transaction: a key
// already in the cache, or entered meanwhile by another Store's Take,
// marks its record replayed and keeps the later of its two Untils. A
// Taken with an empty ReplayKey enters no key and is never reported
// replayed. The transaction is committed when Take returns.
//
// A record reported missing because another Store's Take held it is still
// pending if that Take failed: a later Next returns it again.
func (s *Store) Take(ctx context.Context, takes []inbox.Taken) (replayed, missing []bool, err error) {
	if err := s.begin(ctx); err != nil {
		return nil, nil, err
	}
	seqs := make([]int64, 0, len(takes))
	for _, t := range takes {
		if t.Seq != 0 && t.Seq <= math.MaxInt64 {
			seqs = append(seqs, int64(t.Seq))
		}
	}
	type keyEntry struct {
		key   []byte
		until time.Time
		first int // the index of the Taken whose record enters it
	}
	sl := slot()
	err = s.tx(ctx, func(tx pgx.Tx) error {
		replayed, missing = make([]bool, len(takes)), make([]bool, len(takes))
		for i := range missing {
			missing[i] = true
		}
		if len(seqs) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `DELETE FROM a2a_inbox WHERE seq IN (SELECT seq FROM a2a_inbox WHERE seq = ANY($1) FOR UPDATE SKIP LOCKED)
			RETURNING seq, size`, seqs)
		if err != nil {
			return err
		}
		var claimed []int64
		var bytes int64
		var seq, size int64
		_, err = pgx.ForEachRow(rows, []any{&seq, &size}, func() error {
			claimed = append(claimed, seq)
			bytes += size
			return nil
		})
		if err != nil {
			return err
		}
		if len(claimed) == 0 {
			return nil
		}
		// The totals, last: every Take, Remove, Untake and Expired changes
		// one row of them, after the rows of records and keys.
		totals := func(replay int) error {
			_, err := tx.Exec(ctx, "UPDATE a2a_inbox_totals SET messages = messages - $1, bytes = bytes - $2, replay = replay + $3 WHERE slot = $4",
				len(claimed), bytes, replay, sl)
			return err
		}
		left := make(map[uint64]bool, len(claimed))
		for _, seq := range claimed {
			left[uint64(seq)] = true
		}
		var entries []keyEntry
		at := map[string]int{}
		for i, t := range takes {
			if !left[t.Seq] {
				continue
			}
			delete(left, t.Seq)
			missing[i] = false
			if t.ReplayKey == "" {
				continue
			}
			k := replayKey(t.ReplayKey)
			if j, ok := at[string(k)]; ok {
				replayed[i] = true // the key of an earlier record of this Take
				if t.Until.After(entries[j].until) {
					entries[j].until = t.Until
				}
				continue
			}
			at[string(k)] = len(entries)
			entries = append(entries, keyEntry{key: k, until: t.Until, first: i})
		}
		if len(entries) == 0 {
			return totals(0)
		}
		// In the order of the keys, so that Takes entering the same keys
		// lock them in the same order.
		slices.SortFunc(entries, func(a, b keyEntry) int { return cmp.Compare(string(a.key), string(b.key)) })
		keys, untils := make([][]byte, len(entries)), make([]time.Time, len(entries))
		for i, e := range entries {
			keys[i], untils[i] = e.key, stamp(e.until)
		}
		batch := &pgx.Batch{}
		// The keys already in the cache, locked: Expired passes over them.
		batch.Queue("SELECT key FROM a2a_inbox_replay WHERE key = ANY($1) ORDER BY key FOR UPDATE", keys)
		fresh := batch.Queue(`INSERT INTO a2a_inbox_replay (key, until)
			SELECT k, u FROM unnest($1::bytea[], $2::timestamptz[]) AS v(k, u) ORDER BY k
			ON CONFLICT (key) DO NOTHING RETURNING key`, keys, untils)
		entered := map[string]bool{}
		fresh.Query(func(rows pgx.Rows) error {
			ks, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			for _, k := range ks {
				entered[string(k)] = true
			}
			return err
		})
		batch.Queue(`UPDATE a2a_inbox_replay AS r SET until = v.u FROM unnest($1::bytea[], $2::timestamptz[]) AS v(k, u)
			WHERE r.key = v.k AND r.until < v.u`, keys, untils)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		for _, e := range entries {
			if !entered[string(e.key)] {
				replayed[e.first] = true
			}
		}
		return totals(len(entered))
	})
	if err != nil {
		return nil, nil, s.fail(ctx, err)
	}
	return replayed, missing, nil
}

// Untake implements inbox.Store: the records go back under their own Seq
// (a record whose Seq is pending already is left as it is, a record given
// twice goes back once), and the replay keys given are removed whatever
// entered them, in one transaction. The bounds are not checked: the
// records were admitted once. A record without a Seq or an Expires, or of
// a Seq the queue never assigned, is an error, and nothing is changed.
// Records put back wake the Stores listening (Notify).
func (s *Store) Untake(ctx context.Context, recs []inbox.Record, keys []string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	var top uint64
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Seq == 0:
			return errors.New("pginbox: Untake of a record without a Seq")
		case r.Expires.IsZero():
			return errNoExpiry
		case len(r.Payload) > maxPayload:
			return fmt.Errorf("pginbox: Untake of a payload of %d bytes, over the %d the store takes (MaxPayloadBytes)", len(r.Payload), maxPayload)
		}
		top = max(top, r.Seq)
	}
	// The records once each, in the order of their Seqs.
	back := slices.Clone(recs)
	slices.SortStableFunc(back, func(a, b inbox.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	back = slices.CompactFunc(back, func(a, b inbox.Record) bool { return a.Seq == b.Seq })
	n := len(back)
	seqs := make([]int64, n)
	peers, messageIDs, taskIDs, contextIDs, payloads := make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
	enqueued, expires := make([]time.Time, n), make([]time.Time, n)
	areSealed, sizes := make([]bool, n), make([]int64, n)
	for i, r := range back {
		seqs[i] = int64(min(r.Seq, math.MaxInt64))
		peers[i], messageIDs[i], taskIDs[i], contextIDs[i] = []byte(r.Peer), []byte(r.MessageID), []byte(r.TaskID), []byte(r.ContextID)
		var err error
		if payloads[i], areSealed[i], err = s.seal(&r); err != nil {
			return fmt.Errorf("pginbox: %w", err)
		}
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		enqueued[i], expires[i] = stamp(r.Enqueued), stamp(r.Expires)
		sizes[i] = r.Size()
	}
	var hashes [][]byte
	seen := map[string]bool{}
	for _, k := range keys {
		if h := replayKey(k); k != "" && !seen[string(h)] {
			seen[string(h)] = true
			hashes = append(hashes, h)
		}
	}
	slices.SortFunc(hashes, func(a, b []byte) int { return cmp.Compare(string(a), string(b)) })
	var refused error
	sl := slot()
	err := s.tx(ctx, func(tx pgx.Tx) error {
		refused = nil
		if n > 0 {
			var last int64
			if err := tx.QueryRow(ctx, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM a2a_inbox_seq").Scan(&last); err != nil {
				return err
			}
			if top > uint64(last) {
				refused = fmt.Errorf("pginbox: Untake of record %d, a Seq never assigned (the last is %d)", top, last)
				return refused
			}
		}
		batch := &pgx.Batch{}
		var messages, bytes, forgot int64
		if n > 0 {
			batch.Queue(`INSERT INTO a2a_inbox (`+recordColumns+`)
				SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bytea[], $7::timestamptz[], $8::timestamptz[],
					$9::boolean[], $10::bigint[])
				ORDER BY 1 ON CONFLICT (seq) DO NOTHING RETURNING size`,
				seqs, peers, messageIDs, taskIDs, contextIDs, payloads, enqueued, expires, areSealed, sizes).Query(func(rows pgx.Rows) error {
				sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				messages = int64(len(sizes))
				for _, sz := range sizes {
					bytes += sz
				}
				return err
			})
		}
		if len(hashes) > 0 {
			batch.Queue(`DELETE FROM a2a_inbox_replay WHERE key IN (SELECT key FROM a2a_inbox_replay WHERE key = ANY($1) ORDER BY key FOR UPDATE)`,
				hashes).Exec(func(ct pgconn.CommandTag) error {
				forgot = ct.RowsAffected()
				return nil
			})
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		if messages == 0 && forgot == 0 {
			return nil
		}
		batch = &pgx.Batch{}
		batch.Queue("UPDATE a2a_inbox_totals SET messages = messages + $1, bytes = bytes + $2, replay = replay - $3 WHERE slot = $4", messages, bytes, forgot, sl)
		if messages > 0 {
			batch.Queue("SELECT pg_notify($1, '')", s.channel)
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	switch {
	case err != nil && refused != nil && errors.Is(err, refused):
		return refused
	case err != nil:
		return s.fail(ctx, err)
	}
	return nil
}

// Remove implements inbox.Store: it deletes the pending records of seqs,
// waiting for a Take of another Store that holds one (which then is no
// longer pending), and returns them in the order of seqs.
func (s *Store) Remove(ctx context.Context, seqs []uint64) ([]inbox.Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	ask := make([]int64, 0, len(seqs))
	for _, seq := range seqs {
		if seq != 0 && seq <= math.MaxInt64 {
			ask = append(ask, int64(seq))
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	var got []stored
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH gone AS (
				DELETE FROM a2a_inbox WHERE seq IN (SELECT seq FROM a2a_inbox WHERE seq = ANY($1) ORDER BY seq FOR UPDATE)
				RETURNING `+recordColumns+`),
			totals AS (
				UPDATE a2a_inbox_totals SET messages = messages - (SELECT count(*) FROM gone), bytes = bytes - (SELECT coalesce(sum(size), 0) FROM gone)
				WHERE slot = $2 AND EXISTS (SELECT 1 FROM gone))
			SELECT `+recordColumns+` FROM gone`, ask, slot())
		if err != nil {
			return err
		}
		got, err = collect(rows)
		return err
	})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	bySeq := make(map[uint64]inbox.Record, len(got))
	for _, row := range got {
		r, err := s.open(row)
		if err != nil {
			// Sealed with a key the ring lacks: removed all the same,
			// returned without its payload.
			r = row.Record
			r.Payload = nil
		}
		bySeq[r.Seq] = r
	}
	var out []inbox.Record
	for _, seq := range seqs {
		if r, ok := bySeq[seq]; ok {
			out = append(out, r)
			delete(bySeq, seq)
		}
	}
	return out, nil
}

// Expired implements inbox.Store: up to n pending records whose Expires
// is not after now, oldest first, as committed when it reads them; and it
// deletes the replay keys whose Until is not after now, expireBatch a
// statement, passing over those a Take holds at that moment (they are
// deleted by a later call, if still due).
func (s *Store) Expired(ctx context.Context, now time.Time, n int) ([]inbox.Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	at := stamp(now)
	for {
		var deleted int64
		err := s.pool.QueryRow(ctx, `WITH gone AS (
				DELETE FROM a2a_inbox_replay WHERE key IN (
					SELECT key FROM a2a_inbox_replay WHERE until <= $1 ORDER BY until LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING 1),
			totals AS (
				UPDATE a2a_inbox_totals SET replay = replay - (SELECT count(*) FROM gone) WHERE slot = $3 AND EXISTS (SELECT 1 FROM gone))
			SELECT count(*) FROM gone`, at, expireBatch, slot()).Scan(&deleted)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		if deleted < expireBatch {
			break
		}
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM a2a_inbox WHERE expires <= $1 ORDER BY seq LIMIT $2`, at, n)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	got, err := collect(rows)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return s.openAll(got)
}

var _ inbox.Store = (*Store)(nil)
