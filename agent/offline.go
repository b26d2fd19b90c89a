package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/reach"
)

// ReachabilityExtensionURI identifies the agent card extension in which an
// agent publishes its reachability (docs/protocol.md §7): its mode, its
// accept windows, whether it stores and forwards, the queue bounds it
// applies and how it answers a message it does not accept live. Its params
// are an offline.ReachabilityParams.
const ReachabilityExtensionURI = "https://a2abind.dev/extensions/reachability/v1"

// StoresAndForwards reports whether an agent of reachability mode m
// queues what it gets while it cannot serve, for delivery at its next wake
// (docs/protocol.md §7.1): hourly_wake and sleep do; always and session
// never do.
func StoresAndForwards(m offline.ReachabilityMode) bool {
	return m == offline.ReachabilityModePeriodicallyAvailable || m == offline.ReachabilityModeUnavailableStoreForward
}

// DefaultDeliveryBatch is how many queued records a wake takes from the
// queue at a time (OfflineConfig.DeliveryBatch).
const DefaultDeliveryBatch = 64

// OfflineConfig configures how an agent that is not always reachable
// answers and queues (docs/protocol.md §7).
type OfflineConfig struct {
	// Mode is the reachability mode the agent exposes (required).
	Mode offline.ReachabilityMode
	// Schedule is the accept windows: required for hourly_wake; for sleep,
	// optional, when the agent wakes on a schedule (then messages are
	// delivered inside its windows, and senders are told when the next
	// one opens). Not allowed for always_on and session.
	Schedule *reach.Schedule
	// StoreForward queues the messages not accepted live (hourly_wake
	// outside its windows, sleep) for delivery at the next wake; without
	// it they are refused with agent_asleep, queued false. The session
	// mode never queues (docs/protocol.md §7.1).
	StoreForward bool
	// Queue is the durable queue (required with StoreForward); the Server
	// does not close it. Several agents may share one (instances of one
	// agent, each with a Store of its own on agent/inbox/pginbox's
	// database): each record is delivered by one of them. When Queue is an
	// inbox.Notifier, a record another agent queued, or put back, is
	// delivered at once by an agent that accepts work, without polling;
	// otherwise at its next wake, window or Idle pass.
	Queue inbox.Store
	// Bounds are the queue bounds; zero fields take the defaults of
	// offline.DefaultQueueBounds (500 messages, 2 MiB, 50 per peer, 7
	// days). They are published in the card.
	Bounds offline.QueueBounds
	// Validator checks each record when it is dequeued (default
	// ReplayByMessageID).
	Validator Validator
	// Answer selects how the HTTP binding answers a message not accepted
	// live: the offline profile's statuses and bodies (the default,
	// offline.AsleepAnswerHTTPStatus) or HTTP 200 with a JSON-RPC error
	// (offline.AsleepAnswerJSONRPC). It is stated in the card.
	Answer offline.AsleepAnswer
	// RequireCaller refuses to enqueue for a caller without a verified
	// identity (Caller.Subject empty) with unauthenticated: set it when the
	// card advertises authentication (docs/protocol.md §7.5). With
	// WithVerifier every call has one.
	RequireCaller bool
	// RetrySpread spreads the retryAfterSec given to senders over the
	// first part of the next window (reach.Availability.RetrySpread).
	RetrySpread time.Duration
	// DeliveryBatch is how many records a wake takes at a time (default
	// DefaultDeliveryBatch).
	DeliveryBatch int
	// Idle bounds how long the delivery loop sleeps without looking for
	// expired records or an opened window (default a minute).
	Idle time.Duration
}

// Offline is an agent's reachability and its offline queue. Create it with
// NewOffline and give it to one Server with WithOffline.
type Offline struct {
	cfg    OfflineConfig
	bounds offline.QueueBounds

	mu      sync.Mutex
	awake   bool
	server  *Server
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	rnd     *rand.Rand
	// delivered and drained count the records handed to the handler and
	// those removed undelivered, for Stats.
	delivered, drained int64
	// taken are the records taken from the queue whose turn has not
	// started yet, by task id: GetTask still finds them (SUBMITTED) and
	// CancelTask can still stop them.
	taken map[string]*takenRecord

	// For tests: cause is the wakeCause of the delivery loop's current
	// round, and roundEnded, when set before the Server starts, is called
	// by the loop after each round with its cause.
	cause      atomic.Int32
	roundEnded func(wakeCause)
}

// takenRecord is a record between Take and the start of its turn.
type takenRecord struct {
	rec inbox.Record
	msg *a2a.Message
	// push is the push-notification config the message carries (nil for
	// none), its taskId set.
	push     *a2a.TaskPushNotificationConfig
	handing  bool // its turn is being started: too late to cancel
	canceled bool // CancelTask stopped it: never handed
}

// NewOffline checks cfg and returns the agent's offline state. An agent in
// mode session starts with its session active; one in mode sleep starts
// asleep (SetAwake changes both).
func NewOffline(cfg OfflineConfig) (*Offline, error) {
	if !cfg.Mode.Valid() {
		return nil, fmt.Errorf("agent: offline: unknown reachability mode %q (always_on, session, hourly_wake or sleep)", cfg.Mode)
	}
	if sc := cfg.Schedule; sc != nil {
		if err := sc.Check(); err != nil {
			return nil, fmt.Errorf("agent: offline: %w", err)
		}
		if sc.Period%time.Second != 0 || sc.Offset%time.Second != 0 || sc.Length%time.Second != 0 {
			return nil, errors.New("agent: offline: the schedule is published in whole seconds: period, offset and length must be whole seconds")
		}
		if sc.Period > 366*24*time.Hour {
			return nil, errors.New("agent: offline: the schedule's period is at most 366 days")
		}
	}
	switch cfg.Mode {
	case offline.ReachabilityModeAlwaysAvailable, offline.ReachabilityModeSessionOnly:
		if cfg.Schedule != nil {
			return nil, fmt.Errorf("agent: offline: mode %s has no schedule", cfg.Mode)
		}
		if cfg.StoreForward && cfg.Mode == offline.ReachabilityModeSessionOnly {
			return nil, errors.New("agent: offline: mode session never queues for later delivery (docs/protocol.md §7.1)")
		}
	case offline.ReachabilityModePeriodicallyAvailable:
		if cfg.Schedule == nil {
			return nil, errors.New("agent: offline: mode hourly_wake needs a schedule")
		}
	}
	if cfg.StoreForward && cfg.Queue == nil {
		return nil, errors.New("agent: offline: StoreForward needs a Queue")
	}
	if cfg.Answer == "" {
		cfg.Answer = offline.AsleepAnswerHTTPStatus
	}
	if !cfg.Answer.Valid() {
		return nil, fmt.Errorf("agent: offline: unknown answer %q (http_status or jsonrpc)", cfg.Answer)
	}
	if cfg.Validator == nil {
		cfg.Validator = ReplayByMessageID{}
	}
	if cfg.DeliveryBatch <= 0 {
		cfg.DeliveryBatch = DefaultDeliveryBatch
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Minute
	}
	b, def := cfg.Bounds, offline.DefaultQueueBounds()
	if b.MaxMessages <= 0 {
		b.MaxMessages = def.MaxMessages
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = def.MaxBytes
	}
	if b.MaxPerPeer <= 0 {
		b.MaxPerPeer = def.MaxPerPeer
	}
	if b.RecordTTL <= 0 {
		b.RecordTTL = def.RecordTTL
	}
	return &Offline{cfg: cfg, bounds: b, awake: cfg.Mode != offline.ReachabilityModeUnavailableStoreForward,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}), taken: map[string]*takenRecord{},
		rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

// WithOffline makes the server apply o's reachability to every message
// (SendMessage, SendStreamingMessage) over every transport, queue what it
// does not accept live, and deliver the queue when it wakes. GetTask and
// CancelTask also answer for a task still in the queue. o serves one server.
func WithOffline(o *Offline) Option { return func(s *Server) { s.offline = o } }

// Offline returns the server's offline state (nil without WithOffline).
func (s *Server) Offline() *Offline { return s.offline }

// Mode returns the reachability mode.
func (o *Offline) Mode() offline.ReachabilityMode { return o.cfg.Mode }

// Answer returns how the HTTP binding answers a message not accepted live.
func (o *Offline) Answer() offline.AsleepAnswer { return o.cfg.Answer }

// Bounds returns the queue bounds applied.
func (o *Offline) Bounds() offline.QueueBounds { return o.bounds }

// SetAwake says whether the agent accepts work now, where its mode leaves
// it to the agent: for session, whether a session is active; for sleep,
// whether it is awake (waking delivers the queue). always_on is always
// awake and hourly_wake follows its schedule: SetAwake has no effect on
// them.
func (o *Offline) SetAwake(awake bool) {
	o.mu.Lock()
	o.awake = awake
	o.mu.Unlock()
	o.wake()
}

// wake makes the delivery loop look at the queue now.
func (o *Offline) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// availability is the reach.Availability now.
func (o *Offline) availability() reach.Availability {
	o.mu.Lock()
	awake := o.awake
	o.mu.Unlock()
	return reach.Availability{Mode: o.cfg.Mode, Schedule: o.cfg.Schedule, SessionActive: awake,
		StoreForward: o.cfg.StoreForward, RetrySpread: o.cfg.RetrySpread}
}

// decide returns the verdict for a message arriving at now. A sleeping
// agent that is awake (SetAwake) accepts.
func (o *Offline) decide(now time.Time) reach.Decision {
	a := o.availability()
	if a.Mode == offline.ReachabilityModeUnavailableStoreForward && a.SessionActive {
		return reach.Decision{Verdict: reach.VerdictAccept}
	}
	o.mu.Lock()
	d, err := reach.Decide(a, now, o.rnd.Float64)
	o.mu.Unlock()
	if err != nil {
		// Not reached: NewOffline checked the mode and the schedule.
		return reach.Decision{Verdict: reach.VerdictRefuse}
	}
	return d
}

// accepting reports whether queued records may be delivered at now.
func (o *Offline) accepting(now time.Time) bool {
	return o.decide(now).Verdict == reach.VerdictAccept
}

// Params returns what the card's reachability extension publishes.
func (o *Offline) Params() offline.ReachabilityParams {
	p := offline.ReachabilityParams{Mode: o.cfg.Mode, StoreForward: o.cfg.StoreForward, AsleepAnswer: o.cfg.Answer}
	if s := o.cfg.Schedule; s != nil {
		p.Schedule = &offline.Schedule{PeriodSec: int32(s.Period / time.Second), OffsetSec: int32(s.Offset / time.Second),
			LengthSec: int32(s.Length / time.Second)}
	}
	if o.cfg.StoreForward {
		p.Queue = &offline.PublishedBounds{MaxMessages: int32(min(o.bounds.MaxMessages, math.MaxInt32)), MaxBytes: o.bounds.MaxBytes,
			MaxPerPeer: int32(min(o.bounds.MaxPerPeer, math.MaxInt32)), RecordTtlSec: int64(o.bounds.RecordTTL / time.Second)}
	}
	return p
}

// Extension returns the card extension that publishes Params.
func (o *Offline) Extension() a2a.AgentExtension {
	p := o.Params()
	params := map[string]any{}
	if b, err := p.MarshalJSON(); err == nil {
		params = jsonObject(b)
	}
	return a2a.AgentExtension{URI: ReachabilityExtensionURI, Params: params,
		Description: "Reachability of this agent (mode " + string(o.cfg.Mode) + "): a message it does not accept live is answered agent_asleep" +
			map[bool]string{true: " after it was queued for delivery at the next wake, within the published queue bounds", false: " and is not queued"}[o.cfg.StoreForward] +
			"; poll GetTask with the taskId given."}
}

// Publish adds Extension to card's capabilities, replacing an earlier one
// with the same URI.
func (o *Offline) Publish(card *a2a.AgentCard) {
	if card.Capabilities == nil {
		card.Capabilities = &a2a.AgentCapabilities{}
	}
	ext := o.Extension()
	exts := slices.DeleteFunc(slices.Clone(card.Capabilities.Extensions), func(e a2a.AgentExtension) bool { return e.URI == ext.URI })
	card.Capabilities.Extensions = append(exts, ext)
}

// OfflineStats counts what the queue holds and what happened to records.
type OfflineStats struct {
	inbox.Stats
	// Delivered is the records handed to the handler since the start;
	// Drained, those removed undelivered (invalid, replayed, expired,
	// canceled).
	Delivered, Drained int64
}

// Stats returns the queue's occupancy and the delivery counts.
func (o *Offline) Stats(ctx context.Context) (OfflineStats, error) {
	var st OfflineStats
	if o.cfg.Queue != nil {
		s, err := o.cfg.Queue.Stats(ctx)
		if err != nil {
			return st, err
		}
		st.Stats = s
	}
	o.mu.Lock()
	st.Delivered, st.Drained = o.delivered, o.drained
	o.mu.Unlock()
	return st, nil
}

// jsonObject decodes an encoded JSON object for a card's params.
func jsonObject(b []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	return m
}
