package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// clientTransport is the requester.Transport of the JSON-RPC binding: an
// attempt is one POST to the endpoint (sent again by the retry policy of
// ClientConfig on connection failures and overload), answered by one
// JSON-RPC response or, for a streaming method, a stream of Server-Sent
// Events each holding one.
type clientTransport struct {
	endpoint string
	rc       *retryablehttp.Client
	maxReply int64
	log      *slog.Logger
	// url and host are the endpoint as http.NewRequest reads it, once for
	// every request; urlErr is why it cannot be read, returned by each
	// request as http.NewRequest would return it.
	url    url.URL
	host   string
	urlErr error
}

func newClientTransport(hc *http.Client, endpoint string, cfg ClientConfig, log *slog.Logger) *clientTransport {
	t := &clientTransport{endpoint: endpoint, rc: newRetryClient(hc, cfg), maxReply: cfg.MaxReplyBytes, log: log}
	if t.maxReply <= 0 {
		t.maxReply = DefaultMaxReplyBytes
	}
	if hr, err := http.NewRequest(http.MethodPost, endpoint, nil); err != nil {
		t.urlErr = err
	} else {
		t.url, t.host = *hr.URL, hr.Host
	}
	return t
}

/*
postCall is what one POST allocates of its own, in one piece: the
retryablehttp request, the reader of its body and the reply delivered.

The body is handed to go-retryablehttp as a ReaderFunc (reader), which it
calls once to learn the length, then once per attempt (net/http calls it
through GetBody to send the body again on a new connection or to a
redirect). The first two calls get the reader held here, rewound: the
length is read from it before any attempt starts. Every later call gets
a reader of its own, since an earlier attempt's may still be read by
net/http's writer. go-retryablehttp wraps it with io.NopCloser, which
net/http recognises as in memory: the headers and a small body go out in
one write.
*/
type postCall struct {
	req   retryablehttp.Request
	body  []byte
	calls atomic.Int32
	r     bytes.Reader
	reply requester.Reply
}

func (p *postCall) reader() (io.Reader, error) {
	if p.calls.Add(1) <= 2 {
		p.r.Reset(p.body)
		return &p.r, nil
	}
	return bytes.NewReader(p.body), nil
}

// Binding: A2A core error data and server-made task ids; one attempt
// (retried within by the HTTP retry policy) with no first-reply timeout,
// since a blocking SendMessage lasts as long as the turn; the MQTT
// profile's stream idle timeout.
func (t *clientTransport) Binding() requester.Binding {
	p := mqttbind.DefaultRetryProfile()
	p.MaxAttempts, p.ReplyFirstTimeout = 1, 0
	return requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: tasklife.ResponderIDs, Retry: p}
}

// Close releases the idle connections.
func (t *clientTransport) Close(context.Context) error {
	t.rc.HTTPClient.CloseIdleConnections()
	return nil
}

// Send posts one attempt. A plain call is answered before Send returns; a
// stream is read on a goroutine of its own until it ends or stop is called.
func (t *clientTransport) Send(ctx context.Context, req *requester.Request, deliver func(*requester.Reply)) (func(), error) {
	// The id is quoted in a buffer on the stack (EncodeRequest copies it
	// into the body); a longer one than it holds goes to the heap.
	var idBuf [64]byte
	id := append(append(append(idBuf[:0], '"'), req.ID...), '"')
	body, err := jsonrpc.EncodeRequest(id, req.Method, req.Params)
	if err != nil {
		return nil, err
	}
	if !req.Streaming {
		actx := ctx
		if req.Timeout > 0 {
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(ctx, req.Timeout)
			defer cancel()
		}
		pc, resp, err := t.post(actx, req, body)
		if err != nil {
			if ctx.Err() != nil {
				// The caller gave up: not a refusal.
				return nil, ctx.Err()
			}
			deliver(&requester.Reply{Refused: err})
			return func() {}, nil
		}
		t.answer(resp, &pc.reply, deliver)
		return func() {}, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pc, resp, err := t.post(sctx, req, body)
		if err != nil {
			if sctx.Err() == nil {
				deliver(&requester.Reply{Refused: err})
			}
			return
		}
		t.answer(resp, &pc.reply, deliver)
	}()
	return func() { cancel(); <-done }, nil
}

// post sends the request through the retry policy. It returns the call's
// own allocation, whose reply answer fills.
func (t *clientTransport) post(ctx context.Context, req *requester.Request, body []byte) (*postCall, *http.Response, error) {
	if t.urlErr != nil {
		return nil, nil, t.urlErr
	}
	// The request's URL is the one read when the transport was made: the
	// request is made with an empty one, which costs no parsing, then
	// given it.
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "", nil)
	if err != nil {
		return nil, nil, err
	}
	*hr.URL, hr.Host = t.url, t.host
	pc := &postCall{body: body}
	pc.req.Request = hr
	if err := pc.req.SetBody(retryablehttp.ReaderFunc(pc.reader)); err != nil {
		return nil, nil, err
	}
	// The headers are set in their canonical form, the values shared
	// (net/http copies them, never writes to them): what Header.Set
	// would store, without its allocations.
	hd := hr.Header
	hd["Content-Type"] = contentJSON
	if req.Streaming {
		hd["Accept"] = contentEventStream
	} else {
		hd["Accept"] = contentJSON
	}
	hd[versionKey] = versionValue
	if req.Bearer != "" {
		hd["Authorization"] = []string{"Bearer " + req.Bearer}
	}
	resp, err := t.rc.Do(&pc.req)
	if err != nil {
		return nil, nil, fmt.Errorf("http: POST %s: %w", t.endpoint, unwrapURLError(err))
	}
	return pc, resp, nil
}

// unwrapURLError drops the *url.Error layer (it repeats method and URL,
// which the caller's message names).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// answer reads a response and delivers what it holds: the JSON-RPC
// response, each event of a stream, or why there is none. The one reply
// of a plain response is delivered in *one.
func (t *clientTransport) answer(resp *http.Response, one *requester.Reply, deliver func(*requester.Reply)) {
	defer resp.Body.Close()
	media := mediaType(resp.Header)
	deliver1 := func(r requester.Reply) {
		*one = r
		deliver(one)
	}
	switch {
	case resp.StatusCode == http.StatusOK && media == "text/event-stream":
		t.readEvents(resp.Body, deliver)
		return
	case media == "application/json" || (resp.StatusCode == http.StatusOK && media == ""):
		buf := getReplyBuf()
		defer putReplyBuf(buf)
		b := buf.b[:0]
		if n := resp.ContentLength; n > int64(cap(b)) && n <= t.maxReply {
			// +1: room to see the end of the body without growing.
			b = bodyBuffer(int(n) + 1)
		}
		b, err := readBounded(resp.Body, b, t.maxReply)
		buf.b = b
		switch {
		case err != nil:
			deliver1(requester.Reply{Failed: err})
		case resp.StatusCode == http.StatusOK || isJSONRPCResponse(b):
			// A JSON-RPC answer, whatever the status (a refusal of the
			// content type, say, still says why in JSON-RPC).
			deliver1(requester.Reply{Payload: b, End: true})
		default:
			if e := offlineAnswer(resp, b); e != nil {
				deliver1(requester.Reply{Err: e, End: true})
				return
			}
			t.deliverStatus(resp, b, deliver)
		}
		return
	}
	if resp.StatusCode == http.StatusOK {
		deliver1(requester.Reply{Failed: fmt.Errorf("http: the reply's Content-Type %q is neither application/json nor text/event-stream", resp.Header.Get("Content-Type"))})
		return
	}
	limit := int64(512)
	if offlineStatus(resp.StatusCode) {
		// An offline body sent without its Content-Type is read all the
		// same (the retry policy did not resend it either).
		limit = maxPeekBytes
	}
	snippet, _ := readBounded(resp.Body, nil, limit)
	if e := offlineAnswer(resp, snippet); e != nil {
		deliver1(requester.Reply{Err: e, End: true})
		return
	}
	t.deliverStatus(resp, snippet, deliver)
}

// versionValue is the A2A-Version header of every request.
var versionValue = []string{ProtocolVersion}

// mediaType returns the media type of a response's Content-Type, as
// mime.ParseMediaType reads it ("" when there is none or it is malformed).
// The two a Handler sends are recognised without parsing.
func mediaType(h http.Header) string {
	v := ""
	if vals := h["Content-Type"]; len(vals) > 0 {
		v = vals[0]
	}
	switch v {
	case "application/json", "text/event-stream":
		return v
	}
	media, _, _ := mime.ParseMediaType(v)
	return media
}

// offlineStatus reports the statuses of the offline profile's bodies.
func offlineStatus(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage, http.StatusTooManyRequests:
		return true
	}
	return false
}

// deliverStatus reports a status that carries no JSON-RPC answer: refused
// (the retry profile may try again) when the server was overloaded or
// unreachable through a gateway, failed otherwise.
func (t *clientTransport) deliverStatus(resp *http.Response, body []byte, deliver func(*requester.Reply)) {
	e := &StatusError{StatusCode: resp.StatusCode, Status: resp.Status, Body: string(bytes.TrimSpace(body[:min(len(body), 512)]))}
	e.RetryAfter, _ = retryAfter(resp)
	if retryable(resp.StatusCode) {
		deliver(&requester.Reply{Refused: e})
		return
	}
	deliver(&requester.Reply{Failed: e})
}

/*
offlineAnswer reads the offline profile's HTTP bodies (docs/protocol.md §7.2
and §7.4): a 503, 507 or 429 whose JSON body (not a JSON-RPC envelope) has
error agent_asleep or asleep_queue_full. It returns the *a2a.Error the
agent's JSON-RPC shape of the same answer gives, so the requester sees one
thing whichever shape the agent uses: the token and its code, the HTTP
status, the body's message, and as Data the offline object's members
(queued, retryAfterSec, kind, taskId, contextId), retryAfterSec taken from
the Retry-After header when the body has none. Anything else is nil.
*/
func offlineAnswer(resp *http.Response, body []byte) *a2a.Error {
	if !offlineStatus(resp.StatusCode) {
		return nil
	}
	var b offline.AsleepResponse
	if b.UnmarshalJSON(body) != nil {
		return nil
	}
	tok := a2a.Token(b.Error)
	var kind offline.QueueFullKind
	switch tok {
	case a2a.TokenAgentAsleep:
	case a2a.TokenAsleepQueueFull:
		var full offline.QueueFullResponse
		if full.UnmarshalJSON(body) != nil {
			return nil
		}
		kind = full.Kind
	default:
		return nil
	}
	e := a2a.NewError(tok, b.Message)
	e.HTTPStatus = resp.StatusCode
	data := map[string]any{"error": b.Error, "queued": b.Queued}
	if b.RetryAfterSec != nil && *b.RetryAfterSec >= 0 {
		data["retryAfterSec"] = float64(*b.RetryAfterSec)
	} else if d, ok := retryAfter(resp); ok {
		// Whole seconds, rounded up: never earlier than the server asked.
		data["retryAfterSec"] = float64((d + time.Second - 1) / time.Second)
	}
	if kind != "" {
		data["kind"] = string(kind)
	}
	if b.TaskID != "" {
		data["taskId"] = b.TaskID
	}
	if b.ContextID != "" {
		data["contextId"] = b.ContextID
	}
	e.Data = data
	return e
}

// isJSONRPCResponse reports whether b looks like a JSON-RPC 2.0 response
// object (the requester checks it fully).
func isJSONRPCResponse(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && bytes.Contains(b, []byte(`"jsonrpc"`))
}

// readEvents delivers each event of a Server-Sent Events stream, then the
// end of the stream (or the error that cut it).
func (t *clientTransport) readEvents(body io.Reader, deliver func(*requester.Reply)) {
	sr := newSSEReader(body, t.maxReply)
	for {
		data, err := sr.next()
		if err == io.EOF {
			deliver(&requester.Reply{End: true})
			return
		}
		if err != nil {
			deliver(&requester.Reply{Refused: fmt.Errorf("http: reading the event stream: %w", err)})
			return
		}
		deliver(&requester.Reply{Payload: data})
	}
}

// errTooLarge is wrapped by readBounded past its limit.
var errTooLarge = errors.New("http: reply too large")

// readBounded appends r to b up to limit bytes; more is an error naming the
// limit.
func readBounded(r io.Reader, b []byte, limit int64) ([]byte, error) {
	for {
		if int64(len(b)) > limit {
			return b, fmt.Errorf("%w: more than %d bytes (ClientConfig.MaxReplyBytes)", errTooLarge, limit)
		}
		if len(b) == cap(b) {
			b = growBody(b, 512, int(min(limit+1, math.MaxInt32)))
		}
		n, err := r.Read(b[len(b):min(cap(b), len(b)+int(limit-int64(len(b))+1))])
		b = b[:len(b)+n]
		if err == io.EOF {
			if int64(len(b)) > limit {
				return b, fmt.Errorf("%w: more than %d bytes (ClientConfig.MaxReplyBytes)", errTooLarge, limit)
			}
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// replyBuf is a pooled buffer for reply bodies.
type replyBuf struct{ b []byte }

var replyPool = sync.Pool{New: func() any { return &replyBuf{b: make([]byte, 0, 4096)} }}

func getReplyBuf() *replyBuf { return replyPool.Get().(*replyBuf) }

// putReplyBuf returns a buffer to its pool: the small one, or the large
// buffers' classes once it grew past maxPooledBody.
func putReplyBuf(b *replyBuf) {
	if cap(b.b) <= maxPooledBody {
		b.b = b.b[:0]
		replyPool.Put(b)
		return
	}
	putBig(b.b)
}

// resolve fetches the agent card for a client URL: at the URL itself when
// it names the card, else at URL + /.well-known/agent-card.json. A URL
// with no card there (404, 405) is taken as the JSON-RPC endpoint.
func resolve(ctx context.Context, rc *retryablehttp.Client, url string) (*a2a.AgentCard, string, error) {
	if url == "" {
		return nil, "", errors.New("http: ClientConfig.URL is required")
	}
	cardURL := url
	if !strings.HasSuffix(url, WellKnownCardPath) {
		cardURL = strings.TrimSuffix(url, "/") + WellKnownCardPath
	}
	card, status, err := fetchCard(ctx, rc, cardURL)
	switch {
	case err == nil:
		return card, "", nil
	case cardURL != url && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed):
		return nil, url, nil
	}
	return nil, "", err
}

// FetchCard GETs an Agent Card and checks it against the schema. A card
// that departs from A2A v1.0 only in a form the requester reads
// (requester.DecodeLenient: a2a-go's securityRequirements and timestamps,
// null for an array; docs/conformance.md) is read in the specification's
// form; any other fault is reported as the strict check found it. It
// returns the HTTP status with any error, 0 when no response came. A
// connection failure or an HTTP 429, 502, 503 or 504 is retried as
// ClientConfig's defaults say (DefaultMaxRetries), so a client started
// just before its agent finds it.
func FetchCard(ctx context.Context, hc *http.Client, cardURL string) (*a2a.AgentCard, int, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	return fetchCard(ctx, newRetryClient(hc, ClientConfig{}), cardURL)
}

func fetchCard(ctx context.Context, rc *retryablehttp.Client, cardURL string) (*a2a.AgentCard, int, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("http: agent card URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("http: fetching the agent card %s: %w", cardURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, nil, DefaultMaxReplyBytes)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("http: agent card %s: %w", cardURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("http: agent card %s: %s", cardURL, resp.Status)
	}
	card, _, err := requester.DecodeLenient(body, a2a.ParseAgentCardJSON)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("http: agent card %s: %w", cardURL, err)
	}
	return card, resp.StatusCode, nil
}
