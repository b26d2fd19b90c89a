package taskstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// The bounds of a store without options (docs/protocol.md §14).
const (
	// DefaultMaxTasks is how many tasks a store keeps by default
	// (MaxTasks).
	DefaultMaxTasks = 10_000
	// DefaultMaxBytes is how many bytes of tasks a store keeps by default
	// (MaxBytes): 64 MiB.
	DefaultMaxBytes = 64 << 20
	// DefaultIdleExpiry is how long a task waiting for input or
	// authentication may stay unchanged by default before it expires
	// (ExpireInterruptedAfter): a day.
	DefaultIdleExpiry = 24 * time.Hour
	// RememberExpired is how many expired tasks and contexts a store
	// remembers, the most recent, to answer a message to one of them with
	// ErrExpired rather than as an unknown id.
	RememberExpired = 10_000
)

// ErrFull is matched (errors.Is) by the error of a change refused because
// the store is at its bounds (MaxTasks, MaxBytes) with no finished task left
// to evict. The error's text says which bound and how much is kept. Nothing
// was stored: the change may be retried once tasks finish or expire (the
// agent runtime answers responder_unavailable, which requesters retry).
var ErrFull = errors.New("taskstore: full")

// ErrExpired is matched (errors.Is) by the error for a task that waited for
// input or authentication (INPUT_REQUIRED, AUTH_REQUIRED) unchanged for
// longer than the store's idle expiry and was dropped (Get, Update), and
// for a context whose last task went so (Context), as long as the store
// remembers them (RememberExpired). The error is an *ExpiredError, and it
// matches ErrNotFound too: for anything but a new message the task is
// simply gone.
var ErrExpired = errors.New("taskstore: task expired")

// ExpiredError reports a task dropped by the idle expiry, or a context
// whose last task was.
type ExpiredError struct {
	// ID is the task's or the context's id.
	ID string
	// Context is set for a context.
	Context bool
	// At is when the task expired: its last change plus the idle expiry.
	At time.Time
}

// Error says which task or context expired, and when.
func (e *ExpiredError) Error() string {
	at := e.At.UTC().Format(time.RFC3339)
	if e.Context {
		return "context " + e.ID + " expired at " + at + ": its last task was left waiting for input or authentication too long"
	}
	return "task " + e.ID + " expired at " + at + ", unchanged too long while waiting for input or authentication"
}

// Is matches ErrExpired.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired }

// Unwrap returns the task_not_found error the expiry amounts to, so that
// the error matches ErrNotFound (which a context unknown to a store
// returns too).
func (e *ExpiredError) Unwrap() error { return a2a.NewError(a2a.TokenTaskNotFound, e.Error()) }

// Option configures a store, Memory (NewMemory) or Bolt (OpenBolt);
// SealSecrets is the Bolt store's alone.
type Option func(*config)

// MemoryOption is an Option; the name is kept for the callers of
// NewMemory.
type MemoryOption = Option

// config is what the options set.
type config struct {
	keepFinished time.Duration
	maxTasks     int
	maxBytes     int64
	idle         time.Duration
	// keys seals the secrets of push configs (SealSecrets; Bolt only).
	keys *sealed.Ring
}

func newConfig(opts []Option) config {
	c := config{maxTasks: DefaultMaxTasks, maxBytes: DefaultMaxBytes, idle: DefaultIdleExpiry}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// KeepFinishedFor drops a task once it has been in a final state
// (COMPLETED, FAILED, CANCELED, REJECTED) for longer than d, so that the
// store follows an agent's recent work, not its whole history. A dropped
// task is unknown from then on: GetTask answers task_not_found, and a
// message naming its id starts a new task, so d must be well beyond the
// requesters' retry window (a few minutes for the default MQTT profile).
// Zero or less, the default, keeps finished tasks until the store's bounds
// evict them (MaxTasks, MaxBytes).
func KeepFinishedFor(d time.Duration) Option {
	return func(c *config) { c.keepFinished = max(d, 0) }
}

// MaxTasks bounds the tasks a store keeps (default DefaultMaxTasks). A new
// task past the bound first evicts the finished task that changed least
// recently; when no finished task is left, it is refused with ErrFull. Zero
// or less removes the bound.
func MaxTasks(n int) Option { return func(c *config) { c.maxTasks = max(n, 0) } }

// MaxBytes bounds the bytes of the tasks a store keeps (default
// DefaultMaxBytes): each task counts the length of its JSON encoding and
// of its ids (a Bolt store counts its stored values). Create, and an
// Update that grows a task, evict finished tasks as MaxTasks does, and are
// refused with ErrFull when that is not enough. ReplaceTask, which the agent
// runtime uses for the events of a running turn, is never refused: a turn
// once admitted can finish, and finished tasks are evicted after it until
// the store is back within its bounds. Zero or less removes the bound.
func MaxBytes(n int64) Option { return func(c *config) { c.maxBytes = max(n, 0) } }

// ExpireInterruptedAfter drops a task waiting for input or authentication
// (INPUT_REQUIRED, AUTH_REQUIRED) once it has stayed unchanged for longer
// than d (default DefaultIdleExpiry), so that tasks abandoned by their
// requesters do not pile up. Until RememberExpired later expiries push it
// out, the store answers the id with an *ExpiredError (ErrExpired) rather
// than as unknown. Zero or less keeps such tasks until they change.
func ExpireInterruptedAfter(d time.Duration) Option {
	return func(c *config) { c.idle = max(d, 0) }
}

// fits reports whether a store holding tasks tasks of bytes bytes is within
// the bounds.
func (c *config) fits(tasks int, bytes int64) bool {
	return (c.maxTasks <= 0 || tasks <= c.maxTasks) && (c.maxBytes <= 0 || bytes <= c.maxBytes)
}

// full is the error for a change refused at the bounds: a store keeping
// tasks tasks of bytes bytes, none of them finished, that needed adding
// more and more bytes.
func (c *config) full(tasks int, bytes int64, more int, moreBytes int64) error {
	return FullError(int64(c.maxTasks), c.maxBytes, int64(tasks), bytes, more, moreBytes)
}

// FullError is the error, matching ErrFull, of a change refused at the
// bounds maxTasks and maxBytes (0: none): a store keeping tasks tasks of
// bytes bytes, none of them finished and free, that needed adding more
// tasks and moreBytes bytes. The stores of this module (Memory, Bolt and
// pgstore) answer it.
func FullError(maxTasks, maxBytes, tasks, bytes int64, more int, moreBytes int64) error {
	if maxTasks > 0 && tasks+int64(more) > maxTasks {
		return fmt.Errorf("%w: %d tasks kept, the limit, none of them finished to make room; retry once tasks finish or expire", ErrFull, tasks)
	}
	return fmt.Errorf("%w: %d more bytes would pass the limit of %d bytes (%d bytes kept in %d tasks, none of them finished to make room); retry once tasks finish or expire",
		ErrFull, moreBytes, maxBytes, bytes, tasks)
}

// interrupted reports whether a task state waits for input or
// authentication.
func interrupted(s a2a.TaskState) bool {
	st, err := tasklife.StateOf(s)
	return err == nil && st.IsResumable()
}
