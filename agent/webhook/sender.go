package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// The defaults of Config.
const (
	defaultMaxRetries   = 4
	defaultRetryWaitMin = 500 * time.Millisecond
	defaultRetryWaitMax = 30 * time.Second
	defaultQueueSize    = 256
	defaultWorkers      = 32
	defaultTimeout      = 10 * time.Second
	defaultLinger       = time.Millisecond
	defaultMaxConfigs   = 100_000
	defaultMaxDead      = 10_000
)

// Config configures a Sender. Every field but Reporter has a default.
type Config struct {
	// Reporter receives the reports on each config (agent.PushReport);
	// nil: they are only logged.
	Reporter agent.PushReporter
	// HTTPClient, when set, is the client the POSTs go through (for
	// tests, or for TLS settings). It is copied: its redirect policy is
	// replaced (redirects are not followed), its cookie jar dropped and its
	// Timeout cleared (Config.Timeout bounds each attempt instead). When
	// its Transport is an *http.Transport (or nil), a clone of it is used
	// with the address policy in its dialer, no proxy and no compression;
	// any other RoundTripper is trusted to enforce the policy itself: only
	// literal addresses in URLs are checked then.
	HTTPClient *http.Client
	// AllowLoopback allows webhooks on loopback addresses (127.0.0.0/8,
	// ::1); AllowPrivate on private ones (RFC 1918, RFC 4193 fc00::/7,
	// RFC 6598 100.64.0.0/10). Both are off by default. Link-local,
	// multicast, broadcast and unspecified addresses are always refused.
	AllowLoopback, AllowPrivate bool
	// MaxRetries is how many times a notification is retried after a
	// retryable failure (5xx but 501, 429, timeout, connection error)
	// before its config is declared dead: 0 means 4, a negative value
	// none.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff between
	// attempts (defaults 500 ms and 30 s); RetryWaitMax also caps a
	// receiver's Retry-After.
	RetryWaitMin, RetryWaitMax time.Duration
	// QueueSize bounds each config's queue (default 256); see the package
	// documentation for what overflows.
	QueueSize int
	// Workers is how many deliveries may be under way at once, each to a
	// different config (default 32).
	Workers int
	// Timeout bounds each POST, from dialling to the end of the answer
	// (default 10 s).
	Timeout time.Duration
	// Linger is how long a config with nothing under way waits, once an
	// update is queued for it, before its delivery starts (default 1 ms;
	// a negative value: none). The reply that carries the same update to
	// the caller goes first: a delivery runs after the agent's work on
	// the request that caused it instead of competing with it for the
	// processors, at the price of a millisecond on a notification.
	// Updates queued while a config lingers, or while a delivery to it is
	// under way, follow without waiting again; Close sends what lingers at
	// once.
	Linger time.Duration
	// MaxConfigs bounds the configs the Sender keeps state for at once
	// (default 100,000). A config is kept from a notification until it
	// settles: see the package documentation ("Memory") for when it is
	// dropped, and for what happens to a new config past the bound.
	MaxConfigs int
	// MaxDeadConfigs bounds the dead and refused configs the Sender
	// remembers once dropped, so that notifications to them are still
	// discarded (default 10,000; past it, the oldest is forgotten).
	MaxDeadConfigs int
	// Logger receives the reports and the updates that could not be
	// encoded (default: nothing is logged).
	Logger *slog.Logger
	// Now is the clock of the reports and of Retry-After dates (default
	// time.Now).
	Now func() time.Time
}

// Stats is a snapshot of a Sender's counters.
type Stats struct {
	// Configs is how many configs the Sender keeps state for: notified,
	// and not yet settled, forgotten, evicted or abandoned by Close (at
	// most Config.MaxConfigs).
	Configs int
	// DeadConfigs is how many dead or refused configs the Sender
	// remembers after dropping them (at most Config.MaxDeadConfigs).
	DeadConfigs int
	// Queued is how many notifications wait in queues; InFlight how many
	// deliveries are under way.
	Queued, InFlight int
	// Delivered counts the notifications acknowledged with a 2xx.
	Delivered uint64
	// Attempts counts the POSTs made, retries included; Retries the
	// retries alone.
	Attempts, Retries uint64
	// Dropped counts the notifications dropped by queue overflow.
	Dropped uint64
	// Discarded counts the notifications never sent for another reason:
	// their config was dead, refused or forgotten, the Sender was closing,
	// or the update could not be encoded.
	Discarded uint64
	// Dead and Refused count the times a config became dead or refused
	// (Refused includes the configs refused for Config.MaxConfigs).
	Dead, Refused uint64
	// Evicted counts the idle configs dropped to make room for new ones
	// past Config.MaxConfigs.
	Evicted uint64
	// ReportsDropped counts the reports not handed to the Reporter
	// because Config.MaxConfigs reports were already waiting for it (a
	// Reporter slower than the updates: each config has at most one
	// state, so that many pending reports means it is far behind).
	ReportsDropped uint64
}

// Sender is the HTTP push-notification sender: an agent.Notifier. Its
// methods are safe for concurrent use. Make one with New and stop it with
// Close.
type Sender struct {
	reporter   agent.PushReporter
	log        *slog.Logger
	now        func() time.Time
	pol        policy
	maxRetries int
	waitMax    time.Duration
	timeout    time.Duration
	linger     time.Duration
	queueSize  int
	maxConfigs int
	maxDead    int
	overflow   string // the Reason of overflow reports
	full       string // the Reason of the refusals past maxConfigs
	client     *retryablehttp.Client
	transport  *http.Transport // nil when the caller's RoundTripper is not one
	base       context.Context
	abort      context.CancelFunc
	attempts   atomic.Uint64

	mu       sync.Mutex
	work     *sync.Cond // signalled when a binding is ready or the workers stop
	bindings map[key]*binding
	ready    ring[*binding]
	// lingering holds the bindings scheduled but not yet ready (Linger);
	// lingerTimer moves them to ready, armed while lingering is not empty.
	lingering   ring[lingerer]
	lingerTimer *time.Timer
	idle        binding // sentinel of the list of idle bindings, least recently idle first
	dead        map[key]tombstone
	deadList    ring[deadEntry] // the tombstones in dead, oldest first, and stale entries
	deadSeq     uint64
	inflight    int
	closing     bool // Close was called: Notify discards
	stopping    bool // the workers exit once nothing is ready
	isIdle      bool // drained is closed
	drained     chan struct{}
	st          Stats
	reports     []agent.PushReport // waiting for the reporting goroutine
	spare       []agent.PushReport

	wake       chan struct{} // a report is waiting
	stopReport chan struct{}
	reportDone chan struct{}
	stopOnce   sync.Once
	workers    sync.WaitGroup
}

var _ agent.Notifier = (*Sender)(nil)

type key struct{ task, config string }

// binding is the Sender's state for one config.
type binding struct {
	key       key
	target    *target
	q         ring[item]
	state     agent.PushState // the last state reported, overflow aside ("" before any)
	scheduled bool            // in Sender.ready
	running   *worker         // the worker delivering it, if any
	gone      bool            // dropped: nothing more is sent or reported

	// Links in Sender.idle while the binding is idle: nothing queued,
	// scheduled or under way.
	prev, next *binding

	dropped      int  // notifications dropped by overflow, in all
	overflowing  bool // dropped some since the queue was last empty
	lastOverflow int  // Dropped of the last overflow report
	reported     int  // Dropped of the last report
}

// tombstone is what the Sender remembers of a dead or refused config it
// dropped: which webhook it was (a hash, not the token or credentials), and
// its place in Sender.deadList.
type tombstone struct {
	fp, seq uint64
}

// deadEntry is a tombstone's place in Sender.deadList: stale once the
// tombstone of its key has another seq, or none.
type deadEntry struct {
	key key
	seq uint64
}

// target is where and how a config's notifications are sent.
type target struct {
	url, token, scheme, credentials string
	fp                              uint64      // fingerprint of the four
	u                               *url.URL    // parsed url: shared, read-only
	host                            string      // the Host of the requests
	header                          http.Header // read-only once made: shared by the requests
	refusal                         string      // not "": refused before any dial
}

func (t *target) same(cfg *a2a.TaskPushNotificationConfig) bool {
	scheme, credentials := authOf(cfg)
	return t.url == cfg.URL && t.token == cfg.Token && t.scheme == scheme && t.credentials == credentials
}

func authOf(cfg *a2a.TaskPushNotificationConfig) (scheme, credentials string) {
	if a := cfg.Authentication; a != nil {
		return a.Scheme, a.Credentials
	}
	return "", ""
}

// fingerprint is the 64-bit FNV-1a hash of a config's webhook: its URL,
// token and authentication, each followed by a 0xff byte. Tombstones keep
// it instead of the secrets.
func fingerprint(cfg *a2a.TaskPushNotificationConfig) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	scheme, credentials := authOf(cfg)
	h := uint64(offset)
	for _, s := range [...]string{cfg.URL, cfg.Token, scheme, credentials} {
		for i := range len(s) {
			h = (h ^ uint64(s[i])) * prime
		}
		h = (h ^ 0xff) * prime
	}
	return h
}

// New returns a Sender whose workers are running.
func New(cfg Config) (*Sender, error) {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = defaultMaxRetries
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	if cfg.RetryWaitMin <= 0 {
		cfg.RetryWaitMin = defaultRetryWaitMin
	}
	if cfg.RetryWaitMax <= 0 {
		cfg.RetryWaitMax = max(defaultRetryWaitMax, cfg.RetryWaitMin)
	}
	if cfg.RetryWaitMax < cfg.RetryWaitMin {
		return nil, errors.New("webhook: RetryWaitMax is less than RetryWaitMin")
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = defaultQueueSize
	}
	if cfg.Workers <= 0 {
		cfg.Workers = defaultWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.Linger == 0 {
		cfg.Linger = defaultLinger
	}
	if cfg.MaxConfigs <= 0 {
		cfg.MaxConfigs = defaultMaxConfigs
	}
	if cfg.MaxDeadConfigs <= 0 {
		cfg.MaxDeadConfigs = defaultMaxDead
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sender{
		reporter:   cfg.Reporter,
		log:        cfg.Logger,
		now:        cfg.Now,
		pol:        policy{loopback: cfg.AllowLoopback, private: cfg.AllowPrivate},
		maxRetries: cfg.MaxRetries,
		waitMax:    cfg.RetryWaitMax,
		timeout:    cfg.Timeout,
		linger:     max(cfg.Linger, 0),
		queueSize:  cfg.QueueSize,
		maxConfigs: cfg.MaxConfigs,
		maxDead:    cfg.MaxDeadConfigs,
		overflow:   "queue full (" + strconv.Itoa(cfg.QueueSize) + "): oldest update dropped",
		full:       "the sender is delivering to " + strconv.Itoa(cfg.MaxConfigs) + " configs already (MaxConfigs), none idle: update discarded",
		bindings:   make(map[key]*binding),
		dead:       make(map[key]tombstone),
		drained:    make(chan struct{}),
		wake:       make(chan struct{}, 1),
		stopReport: make(chan struct{}),
		reportDone: make(chan struct{}),
	}
	s.idle.prev, s.idle.next = &s.idle, &s.idle
	s.work = sync.NewCond(&s.mu)
	s.lingerTimer = time.AfterFunc(time.Hour, s.endLinger)
	s.lingerTimer.Stop()
	hc := s.httpClient(cfg)
	s.client = &retryablehttp.Client{
		HTTPClient:     hc,
		RetryWaitMin:   cfg.RetryWaitMin,
		RetryWaitMax:   cfg.RetryWaitMax,
		RetryMax:       cfg.MaxRetries,
		CheckRetry:     s.checkRetry,
		Backoff:        s.backoff,
		PrepareRetry:   s.prepareRetry,
		RequestLogHook: s.startAttempt,
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
	}
	s.base, s.abort = context.WithCancel(context.Background())
	s.workers.Add(cfg.Workers)
	for range cfg.Workers {
		go newWorker(s).run()
	}
	go s.reportLoop()
	return s, nil
}

// httpClient returns the http.Client of the POSTs (see Config.HTTPClient).
func (s *Sender) httpClient(cfg Config) *http.Client {
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	rt := hc.Transport
	switch t := rt.(type) {
	case nil:
		s.transport = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		s.transport = t.Clone()
	}
	if tr := s.transport; tr != nil {
		d := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Control: s.pol.control}
		tr.DialContext = d.DialContext
		tr.DialTLSContext = nil // TLS runs over DialContext, so over the policy
		tr.Proxy = nil          // the policy is on the webhook's address, not a proxy's
		// The answer's body is read only to keep the connection: no
		// Accept-Encoding, no gzip reader.
		tr.DisableCompression = true
		// One kept-alive connection per worker to the same receiver.
		tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, cfg.Workers)
		if tr.MaxIdleConns != 0 {
			tr.MaxIdleConns = max(tr.MaxIdleConns, 4*cfg.Workers)
		}
		rt = tr
	}
	// A transport without CloseIdleConnections: retryablehttp calls it on
	// the client after every failed delivery, which would close the
	// kept-alive connections of every other worker.
	hc.Transport = roundTripper{rt}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	hc.Jar = nil
	// No client Timeout: with one, net/http arms a timer and a context per
	// request, and for a RoundTripper it does not know (roundTripper) also
	// starts a goroutine per request. Each worker arms its own reused timer
	// instead (worker.arm).
	hc.Timeout = 0
	return &hc
}

type roundTripper struct{ rt http.RoundTripper }

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.rt.RoundTrip(req)
}

// Notify queues ev for the webhook of cfg and returns: it never waits for
// the network, a receiver or the encoding of ev, which the worker that
// delivers it does (ev must not change afterwards: agent.Notifier). An
// update for a config that is dead or refused, or sent once Close has
// begun, is discarded. A config notified with a different URL, token or
// authentication than before is taken as a new registration: a dead or
// refused config lives again, and the notifications queued before go where
// the config pointed then.
func (s *Sender) Notify(cfg a2a.TaskPushNotificationConfig, ev *a2a.StreamResponse) {
	if ev == nil {
		return
	}
	it := item{ev: ev, terminal: terminal(ev)}
	k := key{cfg.TaskID, cfg.ID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		s.st.Discarded++
		return
	}
	b := s.bindings[k]
	if b == nil {
		if d, ok := s.dead[k]; ok {
			if d.fp == fingerprint(&cfg) {
				s.st.Discarded++
				return
			}
			delete(s.dead, k) // a new registration
		}
		if len(s.bindings) >= s.maxConfigs && !s.evictLocked() {
			s.st.Refused++
			s.st.Discarded++
			s.queueReportLocked(agent.PushReport{TaskID: k.task, ConfigID: k.config, State: agent.PushRefused, Reason: s.full, At: s.now()})
			return
		}
		b = &binding{key: k}
		s.bindings[k] = b
	}
	if b.target == nil || !b.target.same(&cfg) {
		b.target = s.newTarget(&cfg)
		if b.target.refusal != "" {
			s.st.Discarded++
			s.stopLocked(b, agent.PushRefused, 0, b.target.refusal)
			return
		}
	}
	it.target = b.target
	if b.q.len() >= s.queueSize && !s.makeRoomLocked(b, &it) {
		return
	}
	s.unlinkLocked(b)
	b.q.push(it)
	s.st.Queued++
	if !b.scheduled && b.running == nil {
		b.scheduled = true
		if s.linger > 0 {
			if s.lingering.len() == 0 {
				s.lingerTimer.Reset(s.linger)
			}
			s.lingering.push(lingerer{b, time.Now().Add(s.linger)})
			return
		}
		s.ready.push(b)
		s.work.Signal()
	}
}

// lingerer is a binding waiting out Linger, and when it is due.
type lingerer struct {
	b   *binding
	due time.Time
}

// endLinger makes the lingering bindings that are due ready when the
// linger timer fires, and sets it for the next.
func (s *Sender) endLinger() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for s.lingering.len() > 0 && !s.lingering.at(0).due.After(now) {
		s.ready.push(s.lingering.pop().b)
		n++
	}
	if s.lingering.len() > 0 {
		s.lingerTimer.Reset(s.lingering.at(0).due.Sub(now))
	}
	s.wakeLocked(n)
}

// readyLingeringLocked makes every lingering binding ready at once.
func (s *Sender) readyLingeringLocked() {
	s.lingerTimer.Stop()
	n := s.lingering.len()
	for s.lingering.len() > 0 {
		s.ready.push(s.lingering.pop().b)
	}
	s.wakeLocked(n)
}

// wakeLocked wakes workers for n bindings made ready.
func (s *Sender) wakeLocked(n int) {
	switch {
	case n == 1:
		s.work.Signal()
	case n > 1:
		s.work.Broadcast()
	}
}

// makeRoomLocked drops the oldest queued update of b that is not terminal,
// and reports whether it did; when every queued update is terminal, it
// drops the new one unless that is terminal too (then it returns true and
// the queue grows past its bound).
func (s *Sender) makeRoomLocked(b *binding, it *item) bool {
	for i := range b.q.len() {
		if !b.q.at(i).terminal {
			b.q.removeAt(i)
			s.st.Queued--
			s.droppedLocked(b)
			return true
		}
	}
	if it.terminal {
		return true
	}
	s.droppedLocked(b)
	return false
}

// droppedLocked counts a dropped notification of b and reports the overflow
// at the first drop since the queue was last empty, then each time the
// count has doubled.
func (s *Sender) droppedLocked(b *binding) {
	b.dropped++
	s.st.Dropped++
	if !b.overflowing || b.dropped >= 2*b.lastOverflow {
		b.overflowing = true
		b.lastOverflow = b.dropped
		s.reportLocked(b, agent.PushOverflow, 0, s.overflow)
	}
}

// terminal reports whether ev carries a terminal task status.
func terminal(ev *a2a.StreamResponse) bool {
	var st *a2a.TaskStatus
	switch p := ev.Payload.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if p != nil {
			st = p.Status
		}
	case *a2a.Task:
		if p != nil {
			st = p.Status
		}
	}
	if st == nil {
		return false
	}
	c, err := tasklife.Classify(st.State)
	return err == nil && c == tasklife.ClassTerminal
}

// contentTypeJSON is the Content-Type of every notification (shared,
// read-only).
var contentTypeJSON = []string{"application/json"}

// newTarget checks and prepares the webhook of cfg: its URL parsed and its
// header made once, for all its requests.
func (s *Sender) newTarget(cfg *a2a.TaskPushNotificationConfig) *target {
	t := &target{url: cfg.URL, token: cfg.Token, fp: fingerprint(cfg)}
	t.scheme, t.credentials = authOf(cfg)
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil:
		t.refusal = "URL does not parse"
		return t
	case u.Scheme != "http" && u.Scheme != "https":
		t.refusal = "URL scheme is not http or https"
		return t
	case u.Hostname() == "":
		t.refusal = "URL has no host"
		return t
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := s.pol.check(ip); err != nil {
			t.refusal = err.Error()
			return t
		}
	}
	if !headerValue(t.token) || !headerValue(t.scheme) || !headerValue(t.credentials) {
		t.refusal = "token or authentication is not a valid header value"
		return t
	}
	// As http.NewRequest makes a request's URL and Host: an empty port
	// dropped.
	u.Host = strings.TrimSuffix(u.Host, ":")
	t.u, t.host = u, u.Host
	// The keys in their canonical form (net/textproto).
	h := make(http.Header, 3)
	h["Content-Type"] = contentTypeJSON
	if t.token != "" {
		h["A2a-Notification-Token"] = []string{t.token}
	}
	if t.scheme != "" && t.credentials != "" {
		h["Authorization"] = []string{t.scheme + " " + t.credentials}
	}
	t.header = h
	return t
}

// headerValue reports whether v can be sent as a header field value
// (RFC 9110 §5.5: no control characters but horizontal tab).
func headerValue(v string) bool {
	for i := range len(v) {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Forget drops what is queued for a config and stops delivering to it. A
// POST already on the wire may finish, but is not retried; a wait before a
// retry is cut short. Nothing more is reported for the config, and a dead
// or refused config is no longer remembered: a later notification starts
// anew.
func (s *Sender) Forget(taskID, configID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{taskID, configID}
	delete(s.dead, k)
	b := s.bindings[k]
	if b == nil {
		return
	}
	s.discardLocked(b)
	s.dropLocked(b)
	if w := b.running; w != nil && w.waiting {
		w.cancel()
		w.canceled = true
	}
}

// discardLocked empties the queue of b.
func (s *Sender) discardLocked(b *binding) {
	for b.q.len() > 0 {
		b.q.pop()
		s.st.Queued--
		s.st.Discarded++
	}
}

// dropLocked forgets b: nothing more is sent or reported for it, and a
// later notification of its config makes a new binding.
func (s *Sender) dropLocked(b *binding) {
	if s.bindings[b.key] == b {
		delete(s.bindings, b.key)
	}
	s.unlinkLocked(b)
	b.gone = true
}

// parkLocked puts b, idle, at the end of the idle list.
func (s *Sender) parkLocked(b *binding) {
	if b.next != nil || b.gone {
		return
	}
	b.prev, b.next = s.idle.prev, &s.idle
	b.prev.next, s.idle.prev = b, b
}

// unlinkLocked takes b off the idle list, if it is on it.
func (s *Sender) unlinkLocked(b *binding) {
	if b.next == nil {
		return
	}
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
}

// evictLocked drops the binding idle for longest, to make room for a new
// one; it reports false when none is idle.
func (s *Sender) evictLocked() bool {
	b := s.idle.next
	if b == &s.idle {
		return false
	}
	s.dropLocked(b)
	s.st.Evicted++
	return true
}

// stopLocked marks b dead or refused, empties its queue, reports it and
// drops it, remembering it (Config.MaxDeadConfigs) so that later
// notifications to the same webhook are discarded.
func (s *Sender) stopLocked(b *binding, state agent.PushState, status int, reason string) {
	if state == agent.PushDead {
		s.st.Dead++
	} else {
		s.st.Refused++
	}
	s.discardLocked(b)
	s.reportLocked(b, state, status, reason)
	if b.gone {
		return
	}
	s.dropLocked(b)
	s.rememberLocked(b.key, b.target.fp)
}

// rememberLocked keeps a tombstone for a dead or refused config, forgetting
// the oldest past Config.MaxDeadConfigs.
func (s *Sender) rememberLocked(k key, fp uint64) {
	s.deadSeq++
	s.dead[k] = tombstone{fp: fp, seq: s.deadSeq}
	s.deadList.push(deadEntry{k, s.deadSeq})
	for len(s.dead) > s.maxDead {
		e := s.deadList.pop()
		if d, ok := s.dead[e.key]; ok && d.seq == e.seq {
			delete(s.dead, e.key)
		}
	}
	// A tombstone removed by a new registration or Forget leaves its entry
	// in deadList: compact it when half of it is such.
	if n := s.deadList.len(); n > 64 && n > 2*len(s.dead) {
		for range n {
			e := s.deadList.pop()
			if d, ok := s.dead[e.key]; ok && d.seq == e.seq {
				s.deadList.push(e)
			}
		}
	}
}

// reportLocked queues a report on b for the reporting goroutine.
func (s *Sender) reportLocked(b *binding, state agent.PushState, status int, reason string) {
	if b.gone {
		return
	}
	if state != agent.PushOverflow {
		b.state = state
	}
	b.reported = b.dropped
	s.queueReportLocked(agent.PushReport{
		TaskID: b.key.task, ConfigID: b.key.config, State: state,
		Status: status, Reason: reason, Dropped: b.dropped, At: s.now(),
	})
}

// queueReportLocked queues r for the reporting goroutine; past maxConfigs
// waiting reports it is dropped and counted (Stats.ReportsDropped), so a
// slow Reporter cannot make the queue grow with the updates.
func (s *Sender) queueReportLocked(r agent.PushReport) {
	if len(s.reports) >= s.maxConfigs {
		s.st.ReportsDropped++
		return
	}
	s.reports = append(s.reports, r)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reportLoop hands the reports to the Reporter and the Logger, in order,
// outside the Sender's lock.
func (s *Sender) reportLoop() {
	defer close(s.reportDone)
	for {
		select {
		case <-s.wake:
			s.flushReports()
		case <-s.stopReport:
			s.flushReports()
			return
		}
	}
}

func (s *Sender) flushReports() {
	s.mu.Lock()
	batch := s.reports
	s.reports = s.spare[:0]
	s.mu.Unlock()
	ctx := context.Background()
	for _, r := range batch {
		lvl := slog.LevelWarn
		if r.State == agent.PushDelivered {
			lvl = slog.LevelInfo
		}
		if s.log.Enabled(ctx, lvl) {
			s.log.LogAttrs(ctx, lvl, "push notification "+string(r.State),
				slog.String("task", r.TaskID), slog.String("config", r.ConfigID),
				slog.Int("status", r.Status), slog.String("reason", r.Reason), slog.Int("dropped", r.Dropped))
		}
		if s.reporter != nil {
			s.reporter.PushReport(r)
		}
	}
	clear(batch)
	s.mu.Lock()
	s.spare = batch[:0]
	s.mu.Unlock()
}

// Stats returns a snapshot of the Sender's counters.
func (s *Sender) Stats() Stats {
	s.mu.Lock()
	st := s.st
	st.Configs = len(s.bindings)
	st.DeadConfigs = len(s.dead)
	st.InFlight = s.inflight
	s.mu.Unlock()
	st.Attempts = s.attempts.Load()
	return st
}

// Close stops the Sender. Notify discards from the moment it is called;
// what is queued is delivered (retries included) until ctx is done, and
// then abandoned: the deliveries under way are cut short and the queues
// dropped, and Close returns ctx's error. Close returns once every
// goroutine of the Sender has exited and the last report was made.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.readyLingeringLocked() // what is queued goes now
	s.idleLocked()
	s.mu.Unlock()
	var err error
	select {
	case <-s.drained:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		for _, b := range s.bindings {
			s.discardLocked(b)
			s.dropLocked(b)
		}
		s.mu.Unlock()
		s.abort()
	}
	s.mu.Lock()
	s.stopping = true
	s.work.Broadcast()
	s.mu.Unlock()
	s.workers.Wait()
	s.stopOnce.Do(func() { close(s.stopReport) })
	<-s.reportDone
	s.abort()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	return err
}

// idleLocked closes drained once Close was called and nothing is queued or
// under way.
func (s *Sender) idleLocked() {
	if s.closing && !s.isIdle && s.st.Queued == 0 && s.inflight == 0 {
		s.isIdle = true
		close(s.drained)
	}
}
