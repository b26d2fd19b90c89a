package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/a2abind/a2abind/agent"
)

// worker is one of the goroutines that deliver. Its ctx carries the worker
// itself, for the retry policy and hooks that retryablehttp calls on the
// same goroutine. A worker reuses its request, its encoding buffer and its
// deadline timer from one delivery to the next.
type worker struct {
	s *Sender

	// Under Sender.mu (and, for ctx and cancel, tmu as well):
	ctx      context.Context
	cancel   context.CancelFunc
	b        *binding // the binding being delivered
	waiting  bool     // between two attempts (a Forget then cancels ctx)
	canceled bool     // ctx was canceled by Forget

	// The deadline of the attempt under way (Config.Timeout). timer cancels
	// ctx once deadline has passed, if still armed.
	tmu      sync.Mutex
	timer    *time.Timer
	deadline time.Time
	armed    bool
	timedOut bool

	// Only on the worker's goroutine, for the delivery under way:
	req      *retryablehttp.Request // reused: Request is set for each delivery
	hreq     *http.Request          // reused while ctx is; nil: made anew
	getBody  func() (io.ReadCloser, error)
	body     []byte // the encoded notification (never reused: see open)
	enc      []byte // encoding buffer
	failures int    // attempts that failed and were retryable
	last     verdict
	drain    io.LimitedReader // reused to read what is left of an answer
}

type workerKey struct{}

func newWorker(s *Sender) *worker {
	w := &worker{s: s}
	w.renewLocked()
	w.timer = time.AfterFunc(time.Hour, w.expire)
	w.timer.Stop()
	// The request every delivery goes through: retryablehttp reads the
	// body through ReaderFunc for each attempt.
	w.req, _ = retryablehttp.FromRequest(new(http.Request))
	_ = w.req.SetBody(retryablehttp.ReaderFunc(w.open))
	w.getBody = w.req.GetBody
	return w
}

// renewLocked gives w a new context: at start, and once the old one was
// canceled by Forget or by the deadline.
func (w *worker) renewLocked() {
	ctx, cancel := context.WithCancel(w.s.base)
	ctx = context.WithValue(ctx, workerKey{}, w)
	w.tmu.Lock()
	old := w.cancel
	w.ctx, w.cancel = ctx, cancel
	w.tmu.Unlock()
	if old != nil {
		old()
	}
	w.hreq = nil
}

// open is the retryablehttp.ReaderFunc of the worker's request: a reader
// over the notification being delivered. The body is a *bytes.Reader,
// which net/http writes with the header in one write (it flushes the header
// apart for readers it does not know); it may still be read after the
// delivery ends, so w.body is never reused.
func (w *worker) open() (io.Reader, error) {
	return bytes.NewReader(w.body), nil
}

// arm starts the deadline of an attempt.
func (w *worker) arm() {
	d := w.s.timeout
	w.tmu.Lock()
	w.armed, w.timedOut, w.deadline = true, false, time.Now().Add(d)
	w.tmu.Unlock()
	w.timer.Reset(d)
}

// disarm stops it.
func (w *worker) disarm() {
	w.tmu.Lock()
	w.armed = false
	w.tmu.Unlock()
	w.timer.Stop()
}

// expired reports whether the deadline of the attempt under way expired.
func (w *worker) expired() bool {
	w.tmu.Lock()
	defer w.tmu.Unlock()
	return w.timedOut
}

// expire runs when the timer fires: a timer reset meanwhile (a later
// deadline) or disarmed does nothing.
func (w *worker) expire() {
	w.tmu.Lock()
	if !w.armed || time.Now().Before(w.deadline) {
		w.tmu.Unlock()
		return
	}
	w.armed, w.timedOut = false, true
	cancel := w.cancel
	w.tmu.Unlock()
	cancel()
}

func (w *worker) run() {
	s := w.s
	defer s.workers.Done()
	defer w.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.ready.len() == 0 && !s.stopping {
			s.work.Wait()
		}
		if s.ready.len() == 0 {
			w.cancel()
			return
		}
		b := s.ready.pop()
		b.scheduled = false
		if b.gone {
			continue // forgotten, refused or dead while it waited
		}
		if b.q.len() == 0 {
			s.parkLocked(b)
			continue
		}
		it := b.q.pop()
		s.st.Queued--
		b.running, w.b = w, b
		s.inflight++
		s.mu.Unlock()

		v := w.deliver(&it)

		s.mu.Lock()
		s.inflight--
		b.running, w.b, w.waiting = nil, nil, false
		if w.canceled || w.ctx.Err() != nil {
			w.canceled = false
			w.renewLocked()
		}
		s.settleLocked(b, v, it.terminal)
		s.idleLocked()
	}
}

// What became of an attempt or a delivery.
type verdictKind uint8

const (
	delivered   verdictKind = iota + 1
	retry                   // a retryable failure
	dead                    // a final answer other than 2xx
	refused                 // the address policy
	canceled                // Forget or Close
	unencodable             // the update does not encode: discarded
)

type verdict struct {
	kind   verdictKind
	status int
	reason string
}

// deliver makes one notification's POST, retries included.
func (w *worker) deliver(it *item) verdict {
	var err error
	if w.enc, err = it.ev.AppendJSON(w.enc[:0]); err != nil {
		// The encoder of (*a2a.StreamResponse).MarshalJSON.
		w.s.log.Warn("push notification not encodable: discarded", "task", w.b.key.task, "config", w.b.key.config, "error", err)
		return verdict{kind: unencodable}
	}
	w.body = bytes.Clone(w.enc)
	if cap(w.enc) > maxScratch {
		w.enc = nil
	}
	w.failures, w.last = 0, verdict{}
	t := it.target
	if w.hreq == nil {
		w.hreq = (&http.Request{Method: http.MethodPost, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(w.ctx)
	}
	// net/http copies a request before it changes anything (its transport
	// wraps the body), so the same one serves every delivery; URL and
	// header are the target's, shared and never changed.
	hr := w.hreq
	hr.URL, hr.Host, hr.Header = t.u, t.host, t.header
	hr.Body, hr.GetBody, hr.ContentLength = nil, w.getBody, int64(len(w.body))
	w.req.Request = hr
	resp, err := w.s.client.Do(w.req)
	if resp != nil {
		w.discard(resp)
	}
	w.disarm()
	w.body = nil
	if errors.Is(err, errForgotten) || w.s.base.Err() != nil {
		return verdict{kind: canceled}
	}
	v := w.last
	if v.kind == 0 {
		v = classify(resp, err) // no attempt was judged
	}
	if v.kind == retry {
		v.kind = dead
		v.reason = "gave up after " + strconv.Itoa(w.failures) + " attempts: " + v.reason
	}
	return v
}

// discard reads what is left of an answer, up to 4 KiB, so that the
// connection is kept alive, and closes it.
func (w *worker) discard(resp *http.Response) {
	if resp.Body == http.NoBody {
		return
	}
	w.drain.R, w.drain.N = resp.Body, 4<<10
	_, _ = io.Copy(io.Discard, &w.drain)
	w.drain.R = nil
	resp.Body.Close()
}

// classify judges one attempt (A2A v1.0 §4.3.3: a 2xx acknowledges;
// docs/protocol.md §8.3: 404, 410 and any other 4xx make the binding dead).
func classify(resp *http.Response, err error) verdict {
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return verdict{kind: refused, reason: r.Error()}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the URL, which may hold secrets
		}
		var ce *tls.CertificateVerificationError
		var ua x509.UnknownAuthorityError
		var hn x509.HostnameError
		var ci x509.CertificateInvalidError
		if errors.As(err, &ce) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
			return verdict{kind: dead, reason: "TLS: " + err.Error()}
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return verdict{kind: retry, reason: "no answer in time"}
		}
		return verdict{kind: retry, reason: err.Error()}
	}
	c := resp.StatusCode
	if c >= 200 && c < 300 {
		return verdict{kind: delivered, status: c}
	}
	v := verdict{status: c, reason: strconv.Itoa(c) + " " + http.StatusText(c)}
	switch {
	case c >= 300 && c < 400:
		v.kind, v.reason = dead, v.reason+": redirect not followed"
	case c == http.StatusTooManyRequests || (c >= 500 && c != http.StatusNotImplemented):
		v.kind = retry
	default:
		v.kind = dead
	}
	return v
}

var errForgotten = errors.New("webhook: config forgotten")

// startAttempt is the retryablehttp.RequestLogHook of the Sender, called
// before each attempt: it arms the worker's deadline.
func (s *Sender) startAttempt(_ retryablehttp.Logger, req *http.Request, _ int) {
	if w, _ := req.Context().Value(workerKey{}).(*worker); w != nil {
		w.arm()
	}
}

// checkRetry is the retryablehttp.CheckRetry of the Sender: it judges an
// attempt and reports the config failing when a retry follows. Before a
// retry it ends the attempt (its answer read, its deadline stopped) and,
// when the deadline canceled the worker's context, gives the request a new
// one, so that retryablehttp waits on a live context.
func (s *Sender) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	w, _ := ctx.Value(workerKey{}).(*worker)
	if w == nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return classify(resp, err).kind == retry, nil
	}
	timedOut := w.expired()
	if ctx.Err() != nil && !timedOut {
		return false, ctx.Err() // Close
	}
	s.attempts.Add(1)
	v := verdict{kind: retry, reason: "no answer in time"}
	if err == nil || !timedOut {
		v = classify(resp, err)
	}
	w.last = v
	if v.kind != retry {
		return false, nil
	}
	w.failures++
	if w.failures > s.maxRetries {
		return true, nil // retryablehttp stops: retries are exhausted
	}
	if resp != nil {
		w.discard(resp)
	}
	w.disarm()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := w.b
	if b.gone {
		return false, errForgotten
	}
	if w.ctx.Err() != nil {
		w.renewLocked()
		w.req.Request = w.req.Request.WithContext(w.ctx)
	}
	s.st.Retries++
	w.waiting = true
	if b.state != agent.PushFailing {
		s.reportLocked(b, agent.PushFailing, v.status, v.reason)
	}
	return true, nil
}

// prepareRetry is the retryablehttp.PrepareRetry of the Sender: the wait is
// over, a retry follows unless the config was forgotten meanwhile.
func (s *Sender) prepareRetry(req *http.Request) error {
	w, _ := req.Context().Value(workerKey{}).(*worker)
	if w == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.waiting = false
	if w.b.gone {
		return errForgotten
	}
	return nil
}

// backoff is the retryablehttp.Backoff of the Sender: the receiver's
// Retry-After when it sent one (RFC 9110 §10.2.3; RFC 6585 §4 for 429), cut
// to RetryWaitMax, else retryablehttp's exponential backoff.
func (s *Sender) backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), s.now()); ok {
			return minDuration(d, max)
		}
	}
	return retryablehttp.DefaultBackoff(min, max, attempt, nil)
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3). A date in the past is no wait.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 31); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// settleLocked applies the verdict of a delivery of b, whose update was
// terminal or not. A binding whose queue is empty and whose last update,
// delivered or given up on, was terminal is dropped; a dead or refused one
// is dropped by stopLocked.
func (s *Sender) settleLocked(b *binding, v verdict, terminal bool) {
	switch v.kind {
	case delivered:
		s.st.Delivered++
		if b.gone {
			return
		}
		report := b.state != agent.PushDelivered
		if b.overflowing && b.q.len() == 0 {
			b.overflowing = false
			report = report || b.dropped != b.reported
		}
		if report {
			s.reportLocked(b, agent.PushDelivered, v.status, "")
		}
	case dead, refused:
		if b.gone {
			return
		}
		state := agent.PushDead
		if v.kind == refused {
			state = agent.PushRefused
		}
		s.stopLocked(b, state, v.status, v.reason)
		return
	case unencodable:
		s.st.Discarded++
	case canceled:
		return
	}
	switch {
	case b.gone:
	case b.q.len() > 0:
		b.scheduled = true
		s.ready.push(b) // behind the other configs: each gets its turn
	case terminal:
		s.dropLocked(b) // the task ended and its webhook knows it
	default:
		s.parkLocked(b)
	}
}
