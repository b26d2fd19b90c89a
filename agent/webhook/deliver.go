package webhook

import (
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
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/a2abind/a2abind/agent"
)

// worker is one of the goroutines that deliver. Its ctx carries the worker
// itself, for the retry policy that retryablehttp calls on the same
// goroutine.
type worker struct {
	s      *Sender
	ctx    context.Context
	cancel context.CancelFunc

	// Under Sender.mu:
	b        *binding // the binding being delivered
	waiting  bool     // between two attempts (a Forget then cancels ctx)
	canceled bool     // ctx was canceled by Forget: make a new one

	// Only on the worker's goroutine, for the delivery under way:
	failures int              // attempts that failed and were retryable
	drain    io.LimitedReader // reused to read what is left of an answer
}

type workerKey struct{}

// renew gives w a new context (at start, and after a Forget canceled it).
func (w *worker) renew() {
	ctx, cancel := context.WithCancel(w.s.base)
	w.ctx, w.cancel = context.WithValue(ctx, workerKey{}, w), cancel
}

func (w *worker) run() {
	s := w.s
	defer s.workers.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.ready.len() == 0 && !s.stopping {
			s.work.Wait()
		}
		if s.ready.len() == 0 {
			return
		}
		b := s.ready.pop()
		b.scheduled = false
		if b.gone || b.stopped() || b.q.len() == 0 {
			continue // forgotten, refused or dead while it waited
		}
		it := b.q.pop()
		s.st.Queued--
		b.running, w.b = w, b
		s.inflight++
		s.mu.Unlock()

		v := w.deliver(it)
		it.release()

		s.mu.Lock()
		s.inflight--
		b.running, w.b, w.waiting = nil, nil, false
		if w.canceled {
			w.cancel()
			w.renew()
			w.canceled = false
		}
		s.settleLocked(b, v)
		if !b.gone && !b.stopped() && b.q.len() > 0 {
			b.scheduled = true
			s.ready.push(b) // behind the other configs: each gets its turn
		}
		s.idleLocked()
	}
}

// What became of an attempt or a delivery.
type verdictKind uint8

const (
	delivered verdictKind = iota + 1
	retry                 // a retryable failure
	dead                  // a final answer other than 2xx
	refused               // the address policy
	canceled              // Forget or Close
)

type verdict struct {
	kind   verdictKind
	status int
	reason string
}

// deliver makes one notification's POST, retries included.
func (w *worker) deliver(it *item) verdict {
	w.failures = 0
	t := it.target
	req, err := retryablehttp.NewRequestWithContext(w.ctx, http.MethodPost, t.url, retryablehttp.ReaderFunc(it.open))
	if err != nil {
		return verdict{kind: refused, reason: "URL does not parse"}
	}
	req.Header = t.header
	resp, err := w.s.client.Do(req)
	if resp != nil {
		// Read the answer so that the connection is kept alive.
		w.drain.R, w.drain.N = resp.Body, 4<<10
		_, _ = io.Copy(io.Discard, &w.drain)
		w.drain.R = nil
		resp.Body.Close()
	}
	if w.ctx.Err() != nil || errors.Is(err, errForgotten) {
		return verdict{kind: canceled}
	}
	v := classify(resp, err)
	if v.kind == retry {
		v.kind = dead
		v.reason = "gave up after " + strconv.Itoa(w.failures) + " attempts: " + v.reason
	}
	return v
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
	v := verdict{status: c, reason: strconv.Itoa(c) + " " + http.StatusText(c)}
	switch {
	case c >= 200 && c < 300:
		v.kind, v.reason = delivered, ""
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

// checkRetry is the retryablehttp.CheckRetry of the Sender: it judges an
// attempt and reports the config failing when a retry follows.
func (s *Sender) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	s.attempts.Add(1)
	v := classify(resp, err)
	w, _ := ctx.Value(workerKey{}).(*worker)
	if w == nil {
		return v.kind == retry, nil
	}
	if v.kind != retry {
		return false, nil
	}
	w.failures++
	s.mu.Lock()
	defer s.mu.Unlock()
	b := w.b
	if b.gone {
		return false, errForgotten
	}
	if w.failures > s.maxRetries {
		return true, nil // retryablehttp stops: retries are exhausted
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

// settleLocked applies the verdict of a delivery of b.
func (s *Sender) settleLocked(b *binding, v verdict) {
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
	case canceled:
	}
}
