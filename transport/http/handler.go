package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Defaults of HandlerConfig.
const (
	// DefaultMaxBodyBytes bounds a request body: 4 MiB.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultEventWriteTimeout bounds the writing of one Server-Sent Event.
	DefaultEventWriteTimeout = 10 * time.Second
	// DefaultCardMaxAge is the max-age of the Agent Card's Cache-Control.
	DefaultCardMaxAge = 5 * time.Minute
)

// VersionHeader is the HTTP header that carries the A2A-Version service
// parameter (A2A v1.0 §3.2.6, §9.2).
const VersionHeader = "A2A-Version"

// versionKey is VersionHeader in the canonical form net/http keys headers
// by, so that looking it up costs no canonicalisation.
const versionKey = "A2a-Version"

// HandlerConfig configures a Handler. Only Server and Card are required;
// every other field has a documented default.
type HandlerConfig struct {
	// Server is the runtime that answers every request (required). It may
	// serve other transports at the same time; Handler.Close does not
	// close it.
	Server *agent.Server
	// Card is the public Agent Card, served at WellKnownCardPath
	// (required). It must be valid and list a JSONRPC interface (see
	// JSONRPCInterface); it may declare capabilities.pushNotifications only
	// when Server serves push notifications (agent.WithPush). Its
	// capabilities are enforced (A2A v1.0 §3.3.4): without
	// capabilities.streaming, SendStreamingMessage and SubscribeToTask are
	// answered unsupported_operation; without capabilities.extendedAgentCard,
	// so is GetExtendedAgentCard; without capabilities.pushNotifications, the
	// four push-notification config methods and a message carrying a config
	// are answered push_notification_not_supported.
	Card *a2a.AgentCard
	// MaxBodyBytes bounds the size of a request body (default
	// DefaultMaxBodyBytes, 4 MiB). A larger body is answered
	// invalid_request (-32600) without being read further. The Server's
	// own limits (agent.WithMaxRequestBytes, agent.WithMaxParts) apply to
	// what is read, as over every transport.
	MaxBodyBytes int64
	// AcceptMissingVersion serves a request without an A2A-Version header
	// (or with an empty one) as A2A 1.0. It is off by default: A2A v1.0
	// §3.6.2 reads a missing version as 0.3, which this binding does not
	// serve, so such requests are answered version_not_supported (-32009).
	// Turn it on only for clients known to speak 1.0 without saying so.
	AcceptMissingVersion bool
	// EventWriteTimeout bounds how long writing one Server-Sent Event to a
	// client may take (default DefaultEventWriteTimeout, 10 s; negative:
	// no bound). Events are written from the task's own goroutine, so a
	// client that stops reading would otherwise hold the task back; past
	// the bound its stream fails and ends, and the task goes on. It is
	// applied where the ResponseWriter supports write deadlines (net/http's
	// HTTP/1 and HTTP/2 writers do). Each event's deadline replaces the
	// connection's, so an http.Server WriteTimeout does not cut a stream
	// that keeps sending.
	EventWriteTimeout time.Duration
	// CardMaxAge is the max-age of the Cache-Control header served with
	// the Agent Card (A2A v1.0 §8.6.1; default DefaultCardMaxAge, 5 min;
	// negative: "no-cache").
	CardMaxAge time.Duration
	// Logger receives what no reply can carry: a reply that could not be
	// encoded, a stream that ended because its client went away (at debug
	// level). Default: discard. Bearer tokens are never logged.
	Logger *slog.Logger
}

// Handler serves the A2A v1.0 JSON-RPC binding (A2A v1.0 §9) through an
// agent.Server. ServeHTTP answers the JSON-RPC endpoint wherever the
// handler is mounted; CardHandler serves the Agent Card; Register mounts
// both on a mux; Serve runs them on a listener. Create it with NewHandler.
type Handler struct {
	srv         *agent.Server
	maxBody     int64
	allowNoVer  bool
	eventWrite  time.Duration
	cardMaxAge  time.Duration
	log         *slog.Logger
	card        cardState
	flushWarned sync.Once

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	streams  map[*exchange]context.CancelFunc
	servers  []*http.Server
}

// NewHandler returns a handler for cfg. It fails when Server or Card is
// missing or the card is unfit (see HandlerConfig.Card).
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Server == nil {
		return nil, errors.New("http: HandlerConfig.Server is required")
	}
	h := &Handler{srv: cfg.Server, maxBody: cfg.MaxBodyBytes, allowNoVer: cfg.AcceptMissingVersion,
		eventWrite: cfg.EventWriteTimeout, cardMaxAge: cfg.CardMaxAge, log: cfg.Logger,
		streams: map[*exchange]context.CancelFunc{}}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.eventWrite == 0 {
		h.eventWrite = DefaultEventWriteTimeout
	}
	if h.cardMaxAge == 0 {
		h.cardMaxAge = DefaultCardMaxAge
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if err := h.UpdateCard(cfg.Card); err != nil {
		return nil, err
	}
	return h, nil
}

// Content types.
var (
	contentJSON        = []string{"application/json"}
	contentEventStream = []string{"text/event-stream"}
	cacheNoCache       = []string{"no-cache"}
	connectionClose    = []string{"close"}
	allowPost          = []string{http.MethodPost}
)

// errNotification detaches a notification's stream after its first reply.
var errNotification = errors.New("http: a notification is not answered")

// ServeHTTP answers one JSON-RPC request (A2A v1.0 §9), whatever the path
// the handler is mounted at:
//
//   - a method other than POST is answered 405 with "Allow: POST";
//   - a Content-Type other than application/json (parameters allowed) is
//     answered 415; after Close every request is answered 503; a call the
//     runtime has no worker slot for (agent.WithMaxTurns) is answered 503
//     with "Retry-After: 1", stream or not; these carry a JSON-RPC error
//     body (responder_unavailable for the busy answer, code -32603);
//   - every other JSON-RPC answer is HTTP 200: application/json for the unary
//     methods, text/event-stream (one "data:" event per JSON-RPC response,
//     flushed each) for SendStreamingMessage and SubscribeToTask, whose
//     errors are sent as an error event inside the stream;
//   - a notification (a request without "id") is served and answered 204
//     No Content without a body (JSON-RPC 2.0 §4.1) as soon as the runtime
//     has accepted it: a SendMessage is served as with returnImmediately,
//     a stream is left after its first item; the task goes on.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header()["Allow"] = allowPost
		h.refuse(w, http.StatusMethodNotAllowed, a2a.NewError(a2a.TokenInvalidRequest,
			"the A2A JSON-RPC endpoint takes POST requests only, not "+r.Method))
		return
	}
	if !isJSON(r.Header["Content-Type"]) {
		h.refuse(w, http.StatusUnsupportedMediaType, a2a.NewError(a2a.TokenInvalidRequest,
			"the request's Content-Type must be application/json (A2A v1.0 §9.1)"))
		return
	}
	if !h.enter() {
		// The connection is not kept: the client's next request goes to
		// a new one, perhaps to another instance.
		w.Header()["Connection"] = connectionClose
		h.refuse(w, http.StatusServiceUnavailable, a2a.NewError(a2a.TokenInternalError, "the server is shutting down"))
		return
	}
	defer h.inflight.Done()

	x := getExchange(h, w)
	defer putExchange(x)
	req, perr := h.decode(r, x)
	if perr != nil {
		if x.notify {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		x.answer(r.Context(), perr)
		return
	}
	if e := h.check(r, req); e != nil {
		x.answer(r.Context(), e)
		return
	}
	if p, ok := req.Params.(*a2a.SendMessageRequest); ok && x.notify && !x.stream {
		// Nobody waits for the answer: the notification is done once the
		// task is accepted, as a stream's is after its first item.
		if p.Configuration == nil {
			p.Configuration = &a2a.SendMessageConfiguration{}
		}
		p.Configuration.ReturnImmediately = true
	}
	call := agent.Call{Request: req, IDs: tasklife.ResponderIDs, Token: bearer(r.Header["Authorization"]),
		Capabilities: h.card.load().caps}
	ctx := r.Context()
	if x.stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		if !h.track(x, cancel) {
			x.answer(ctx, a2a.NewError(a2a.TokenInternalError, "the server is shutting down"))
			return
		}
		defer h.untrack(x)
	}
	err := h.srv.Serve(ctx, call, x)
	switch {
	case x.notify:
		w.WriteHeader(http.StatusNoContent)
	case x.status != 0:
		x.writeUnary()
	case x.replies == 0:
		// Serve returned without a reply: the request's context ended
		// (the client went away, or Close ended the stream before its
		// first event).
		if r.Context().Err() == nil {
			x.answer(r.Context(), a2a.NewError(a2a.TokenInternalError, "the server is shutting down"))
		}
	case !x.stream:
		x.writeUnary()
	case err != nil && r.Context().Err() == nil && !errors.Is(err, context.Canceled):
		h.log.Debug("http: stream ended early", "method", string(req.Method), "err", err)
	}
}

// enter admits a request unless the handler is closed.
func (h *Handler) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.inflight.Add(1)
	return true
}

// track registers a stream so that Close can end it.
func (h *Handler) track(x *exchange, cancel context.CancelFunc) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.streams[x] = cancel
	return true
}

func (h *Handler) untrack(x *exchange) {
	h.mu.Lock()
	delete(h.streams, x)
	h.mu.Unlock()
}

// decode reads and decodes the body. On failure it returns the error to
// answer with; x.id, x.stream and x.notify are set as far as the body
// tells them.
func (h *Handler) decode(r *http.Request, x *exchange) (*jsonrpc.Request, *a2a.Error) {
	buf, perr := h.readBody(r)
	if perr != nil {
		return nil, perr
	}
	defer buf.release()
	body := buf.b
	req, id, perr := h.srv.DecodeRequest(body)
	x.id = id
	if perr == nil {
		x.stream = jsonrpc.Streaming(req.Method)
		x.notify = id == nil
		return req, nil
	}
	switch perr.Token {
	case a2a.TokenParseError:
		return nil, perr
	case a2a.TokenInvalidRequest:
		if b := trimSpace(body); len(b) > 0 && b[0] == '[' {
			perr = a2a.NewError(a2a.TokenInvalidRequest, "JSON-RPC batch requests are not served: send one request per HTTP request")
		}
		return nil, perr
	}
	// A well-formed envelope whose method or params are wrong: it says
	// whether the request is a notification (JSON-RPC 2.0 §5: never
	// answered) and whether the answer belongs in an event stream.
	var env a2a.JSONRPCRequest
	_ = env.UnmarshalJSON(body)
	x.stream = jsonrpc.Streaming(env.Method)
	x.notify = id == nil
	return nil, perr
}

// check applies the binding's rule that the runtime does not know: the
// A2A-Version header. (The card's capabilities are the runtime's to
// enforce: agent.Call.Capabilities.)
func (h *Handler) check(r *http.Request, _ *jsonrpc.Request) *a2a.Error {
	return h.checkVersion(r.Header[versionKey])
}

// checkVersion accepts A2A-Version 1.0 (a patch number, as in 1.0.0, is
// ignored: A2A v1.0 §3.6).
func (h *Handler) checkVersion(vals []string) *a2a.Error {
	v := ""
	switch len(vals) {
	case 0:
	case 1:
		v = vals[0]
	default:
		return a2a.NewError(a2a.TokenVersionNotSupported, "the A2A-Version header must be given once")
	}
	if v == "" {
		if h.allowNoVer {
			return nil
		}
		return a2a.NewError(a2a.TokenVersionNotSupported,
			"no A2A-Version header: A2A v1.0 §3.6.2 reads that as version 0.3, which this agent does not serve; send A2A-Version: 1.0")
	}
	if isVersion10(v) {
		return nil
	}
	return a2a.NewError(a2a.TokenVersionNotSupported, "A2A-Version "+quote(v)+" is not supported; this agent serves 1.0")
}

// isVersion10 reports whether v is 1.0 or 1.0.<patch>.
func isVersion10(v string) bool {
	if v == "1.0" {
		return true
	}
	rest, ok := strings.CutPrefix(v, "1.0.")
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// quote shows a client's value in a message, bounded and escaped.
func quote(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// bearer returns the token of an "Authorization: Bearer <token>" header
// (the scheme is case-insensitive, RFC 9110 §11.1), "" for none.
func bearer(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	v := vals[0]
	const prefix = "bearer "
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(v[len(prefix):])
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters.
func isJSON(vals []string) bool {
	if len(vals) != 1 {
		return false
	}
	v := vals[0]
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return strings.EqualFold(strings.TrimSpace(v), "application/json")
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// refuse answers a request refused before any JSON-RPC processing with an
// HTTP status and a JSON-RPC error body (id null: the body is not read).
func (h *Handler) refuse(w http.ResponseWriter, status int, e *a2a.Error) {
	body, err := jsonrpc.EncodeError(nil, e, jsonrpc.BindingHTTP)
	if err != nil {
		h.log.Error("http: encoding an error reply", "err", err)
		w.WriteHeader(status)
		return
	}
	w.Header()["Content-Type"] = contentJSON
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// bodyBuf is a pooled request body.
type bodyBuf struct{ b []byte }

// maxPooledBody is the largest buffer kept for reuse.
const maxPooledBody = 64 << 10

var bodyPool = sync.Pool{New: func() any { return &bodyBuf{b: make([]byte, 0, 4096)} }}

func (b *bodyBuf) release() {
	if cap(b.b) <= maxPooledBody {
		b.b = b.b[:0]
		bodyPool.Put(b)
		return
	}
	putBig(b.b)
}

// readBody reads the request body into a pooled buffer, at most maxBody
// bytes. Decoding copies what it keeps, so the buffer is reused once the
// request is decoded.
func (h *Handler) readBody(r *http.Request) (*bodyBuf, *a2a.Error) {
	if r.ContentLength > h.maxBody {
		return nil, h.tooLarge()
	}
	buf := bodyPool.Get().(*bodyBuf)
	b := buf.b[:0]
	if n := r.ContentLength; n > 0 && int64(cap(b)) < n+1 {
		// +1: room to see the end of the body without growing.
		b = bodyBuffer(int(n) + 1)
	}
	for {
		if len(b) == cap(b) {
			b = growBody(b, 4096, int(h.maxBody)+1)
		}
		n, err := r.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > h.maxBody {
			buf.b = b
			buf.release()
			return nil, h.tooLarge()
		}
		if err == io.EOF {
			// Read whole: closed now, net/http has nothing left to
			// discard after the handler (it would copy the end of the
			// body to io.Discard through a reader of its own).
			_ = r.Body.Close()
			break
		}
		if err != nil {
			buf.b = b
			buf.release()
			h.log.Debug("http: reading a request body", "err", err)
			return nil, a2a.NewError(a2a.TokenInvalidRequest, "the request body could not be read")
		}
	}
	buf.b = b
	return buf, nil
}

func (h *Handler) tooLarge() *a2a.Error {
	return a2a.NewError(a2a.TokenInvalidRequest, fmt.Sprintf("the request body exceeds this server's limit of %d bytes", h.maxBody))
}

// Close shuts the handler down gracefully: requests that arrive from now
// on are answered 503 Service Unavailable (with a JSON-RPC internal_error
// body), every open event stream is ended cleanly (its response completes
// after the last whole event; a client resumes with SubscribeToTask),
// servers started by Serve stop listening, and Close waits for the
// requests in progress to finish. It returns when they have, or with
// ctx's error when ctx ends first; then the servers started by Serve are
// closed at once, which ends what was left. The agent.Server is not
// closed. Close may be called more than once.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for _, cancel := range h.streams {
		cancel()
	}
	servers := h.servers
	h.mu.Unlock()

	var err error
	for _, s := range servers {
		if e := s.Shutdown(ctx); e != nil && err == nil {
			err = e
		}
	}
	done := make(chan struct{})
	go func() { h.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		for _, s := range servers {
			_ = s.Close()
		}
	}
	return err
}

// exchange is one request's state and its agent.Sink. Exchanges are
// pooled; one is never used after ServeHTTP returns, by which time
// agent.Server.Serve has returned and sends no more.
type exchange struct {
	h       *Handler
	w       http.ResponseWriter
	rc      *http.ResponseController
	id      json.RawMessage
	stream  bool
	notify  bool
	replies int
	// body is the encoded reply of a unary call, written by ServeHTTP
	// once Serve returns: a task's goroutine never writes to a unary
	// client.
	body []byte
	// werr is the first error writing to a stream.
	werr error
	// status, when set, is the HTTP status of the only reply, stream or
	// not: 503 with Retry-After for the runtime's responder_unavailable (no
	// worker slot), and the offline profile's answers (docs/protocol.md
	// §7.2, §7.4) when the agent uses its HTTP statuses.
	status     int
	retryAfter []string
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

func getExchange(h *Handler, w http.ResponseWriter) *exchange {
	x := exchangePool.Get().(*exchange)
	x.h, x.w = h, w
	return x
}

func putExchange(x *exchange) {
	*x = exchange{}
	exchangePool.Put(x)
}

// Send implements agent.Sink.
func (x *exchange) Send(_ context.Context, r agent.Reply) error {
	if x.notify {
		x.replies++
		if x.stream {
			return errNotification
		}
		return nil
	}
	if x.replies == 0 && r.Final && r.Err != nil {
		if status, body, retry := x.h.offlineAnswer(r.Err); status != 0 {
			x.replies++
			x.status, x.body, x.retryAfter = status, body, retry
			return nil
		}
	}
	payload := x.encode(r)
	if x.replies == 0 && r.Final && r.Err != nil && r.Err.Token == a2a.TokenResponderUnavailable {
		x.replies++
		x.status, x.retryAfter = http.StatusServiceUnavailable, retryAfterBusy
		x.body = payload
		return nil
	}
	if !x.stream {
		if x.replies > 0 {
			return errors.New("http: a second reply to a unary call")
		}
		x.replies++
		x.body = payload
		return nil
	}
	return x.writeEvent(payload)
}

// encode renders a reply; a reply that cannot be encoded is answered
// internal_error instead.
func (x *exchange) encode(r agent.Reply) []byte {
	b, err := r.Encode(x.id, jsonrpc.BindingHTTP)
	if err == nil {
		return b
	}
	x.h.log.Error("http: encoding a reply", "err", err)
	b, err = jsonrpc.EncodeError(x.id, a2a.NewError(a2a.TokenInternalError, "the reply could not be encoded"), jsonrpc.BindingHTTP)
	if err != nil {
		// Not reached: an error of a known token always encodes.
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}`)
	}
	return b
}

// answer replies with an error, as a stream event for a streaming method.
func (x *exchange) answer(ctx context.Context, e *a2a.Error) {
	x.notify = false
	_ = x.Send(ctx, agent.Reply{Err: e, Final: true})
	if !x.stream {
		x.writeUnary()
	}
}

// writeUnary writes the reply of a unary call, or the busy answer of any
// call: HTTP 503 with Retry-After (A2A v1.0 §3.3.2, server errors), so
// that clients and proxies treat it as the overload it is and retry.
func (x *exchange) writeUnary() {
	hd := x.w.Header()
	hd["Content-Type"] = contentJSON
	if len(x.body) > implicitLengthBytes {
		// Declared, so that a large reply is sent whole rather than
		// chunked and the client can size its buffer once. A smaller one
		// is written whole before ServeHTTP returns, and net/http
		// declares its length itself.
		hd["Content-Length"] = []string{strconv.Itoa(len(x.body))}
	}
	if x.status != 0 {
		if x.retryAfter != nil {
			hd["Retry-After"] = x.retryAfter
		}
		x.w.WriteHeader(x.status)
	}
	if _, err := x.w.Write(x.body); err != nil {
		x.h.log.Debug("http: writing a reply", "err", err)
	}
}

// writeEvent writes one Server-Sent Event holding one JSON-RPC response
// and flushes it.
func (x *exchange) writeEvent(payload []byte) error {
	if x.werr != nil {
		return x.werr
	}
	if x.replies == 0 {
		x.rc = http.NewResponseController(x.w)
		hd := x.w.Header()
		hd["Content-Type"] = contentEventStream
		hd["Cache-Control"] = cacheNoCache
		x.w.WriteHeader(http.StatusOK)
	}
	x.replies++
	if x.h.eventWrite > 0 {
		// Not every ResponseWriter has write deadlines; without one the
		// stream is simply not bounded.
		_ = x.rc.SetWriteDeadline(time.Now().Add(x.h.eventWrite))
	}
	payload = oneLine(payload)
	_, err := x.w.Write(dataPrefix)
	if err == nil {
		_, err = x.w.Write(payload)
	}
	if err == nil {
		_, err = x.w.Write(eventEnd)
	}
	if err == nil {
		if err = x.rc.Flush(); errors.Is(err, http.ErrNotSupported) {
			x.h.flushWarned.Do(func() {
				x.h.log.Warn("http: the ResponseWriter cannot flush: Server-Sent Events reach clients only when the stream ends")
			})
			err = nil
		}
	}
	if err != nil {
		x.werr = err
		x.h.log.Debug("http: writing an event", "err", err)
	}
	return err
}

// implicitLengthBytes is the largest reply whose Content-Length writeUnary
// leaves to net/http: a body written whole by a handler that then returns
// is sent with its length when it fits the response's buffer before
// chunking (2048 bytes in net/http's HTTP/1 server; its HTTP/2 server
// does the same).
const implicitLengthBytes = 2048

// retryAfterBusy is the Retry-After of a busy answer, in seconds.
var retryAfterBusy = []string{"1"}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
)

// oneLine makes sure an encoded response holds no line break, which would
// split the event (the encoders write compact JSON, so this is a check).
func oneLine(b []byte) []byte {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}
