package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/requester"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// URL is the agent: a base URL whose /.well-known/agent-card.json names
	// the JSON-RPC endpoint (the card's supportedInterfaces entry with
	// protocolBinding JSONRPC and protocolVersion 1.0), the card's own URL,
	// or the JSON-RPC endpoint itself (when no card is served there).
	URL string
	// Card, when set, is used instead of fetching one: its JSONRPC
	// interface is the endpoint.
	Card *a2a.AgentCard
	// HTTPClient sends the requests (default: a client of its own with
	// keep-alive connections, at most 64 idle per host, a 32 KiB write
	// buffer each, and no overall timeout: the call's context bounds each
	// call, and a stream lasts as long as its task).
	HTTPClient *http.Client
	// MaxRetries bounds how often one request is sent again after a
	// connection failure or an HTTP 429, 502, 503 or 504 (default 4; -1 for
	// none). Other statuses are never retried, nor is a 503 whose body says
	// the agent is asleep and queued the message (the offline profile's
	// agent_asleep with queued true, docs/protocol.md §7.2): the call ends
	// with *requester.Queued. A retried POST is safe: its JSON-RPC id and
	// messageId stay the same, and the responder answers a repeat with the
	// task it already has.
	MaxRetries int
	// RetryWaitMin and RetryWaitMax bound the backoff between those retries
	// (default 100 ms and 30 s). A Retry-After header is honoured up to
	// RetryWaitMax; a server that asks for a longer wait is not retried, and
	// the call fails at once saying how long it asked for.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxReplyBytes bounds a reply body and each event of a stream
	// (default 16 MiB); a larger one fails the call with an error naming the
	// limit.
	MaxReplyBytes int64
	// Requester configures the requester: the retry profile (zero value:
	// one attempt, no first-reply timeout, a 30 s stream idle timeout; the
	// retries above happen within the attempt) and the logger.
	Requester requester.Config
}

// Defaults of ClientConfig.
const (
	DefaultMaxRetries    = 4
	DefaultRetryWaitMin  = 100 * time.Millisecond
	DefaultRetryWaitMax  = 30 * time.Second
	DefaultMaxReplyBytes = 16 << 20
)

// Client is an A2A requester over HTTP (the JSON-RPC binding of A2A v1.0):
// a requester.Client, with every A2A method, bound to one agent's
// endpoint. Create it with NewClient; it is safe for concurrent use.
type Client struct {
	*requester.Client
	tr   *clientTransport
	card *a2a.AgentCard
}

// NewClient resolves the agent's endpoint (fetching its card unless
// ClientConfig.Card is set) and returns a client for it.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	log := cfg.Requester.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	card := cfg.Card
	endpoint := ""
	var err error
	if card == nil {
		if card, endpoint, err = resolve(ctx, newRetryClient(hc, cfg), cfg.URL); err != nil {
			return nil, err
		}
	}
	if card != nil {
		if endpoint, err = JSONRPCEndpoint(card); err != nil {
			return nil, err
		}
	}
	tr := newClientTransport(hc, endpoint, cfg, log)
	rc, err := requester.New(tr, cfg.Requester)
	if err != nil {
		return nil, err
	}
	return &Client{Client: rc, tr: tr, card: card}, nil
}

// Card returns the agent's card, or nil when the URL was a JSON-RPC
// endpoint with no card.
func (c *Client) Card() *a2a.AgentCard { return c.card }

// Endpoint returns the JSON-RPC endpoint the client posts to.
func (c *Client) Endpoint() string { return c.tr.endpoint }

// defaultWriteBuffer is the size of each connection's write buffer in the
// default client: 32 KiB, the copy buffer net/http allocates for every
// request body larger than the standard 4 KiB buffer.
const defaultWriteBuffer = 32 << 10

// defaultHTTPClient is the client used when ClientConfig.HTTPClient is nil.
func defaultHTTPClient() *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A request body up to the buffer's size is written with its
		// headers in one write, without the copy buffer net/http's
		// client allocates for each larger body.
		WriteBufferSize: defaultWriteBuffer,
	}
	return &http.Client{Transport: t}
}

// StatusError reports an HTTP answer that is not a JSON-RPC response: a
// status other than 200 without a JSON-RPC body, such as 401 from a proxy,
// 404 for a wrong endpoint, or 503 once the retries ran out. The offline
// profile's bodies (503 agent_asleep, 507 or 429 asleep_queue_full;
// docs/protocol.md §7) are no StatusError: they are read as the
// *a2a.Error the agent's JSON-RPC shape gives, with the status in
// HTTPStatus, and a queued message as *requester.Queued.
type StatusError struct {
	// StatusCode and Status are the response's.
	StatusCode int
	Status     string
	// RetryAfter is the wait the server asked for (Retry-After), if any.
	RetryAfter time.Duration
	// Body is the start of the response body (at most 512 bytes).
	Body string
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "http: %s", e.Status)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (the server asks to retry after %v)", e.RetryAfter)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// retryable reports the statuses the transport sends again.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// newRetryClient wraps hc in the retry policy of ClientConfig.
func newRetryClient(hc *http.Client, cfg ClientConfig) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = hc
	rc.Logger = nil
	rc.RetryMax = cfg.MaxRetries
	switch {
	case rc.RetryMax == 0:
		rc.RetryMax = DefaultMaxRetries
	case rc.RetryMax < 0:
		rc.RetryMax = 0
	}
	rc.RetryWaitMin, rc.RetryWaitMax = cfg.RetryWaitMin, cfg.RetryWaitMax
	if rc.RetryWaitMin <= 0 {
		rc.RetryWaitMin = DefaultRetryWaitMin
	}
	if rc.RetryWaitMax <= 0 {
		rc.RetryWaitMax = DefaultRetryWaitMax
	}
	maxWait := rc.RetryWaitMax
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			// Connection failures are retried; a certificate the client
			// does not trust, a bad URL or too many redirects are not.
			return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		}
		if !retryable(resp.StatusCode) {
			return false, nil
		}
		if resp.StatusCode == http.StatusServiceUnavailable && queuedAsleep(peekBody(resp, maxPeekBytes)) {
			// The agent is asleep and stored the message: sending it
			// again would queue it twice (docs/protocol.md §7.7).
			return false, nil
		}
		if d, ok := retryAfter(resp); ok && d > maxWait {
			return false, nil
		}
		return true, nil
	}
	rc.Backoff = retryablehttp.DefaultBackoff
	// The last response is handed back as it is, not turned into an error
	// that hides its status.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return rc
}

// maxPeekBytes bounds how much of a 503 body the retry policy reads to tell
// a queued message from an overload; an offline body is far smaller.
const maxPeekBytes = 64 << 10

// peekBody reads the start of resp's body, at most limit bytes, and puts
// it back in front of the rest, so that whoever reads the response next
// reads all of it.
func peekBody(resp *http.Response, limit int64) []byte {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(b), resp.Body), Closer: resp.Body}
	return b
}

// replayBody is a response body whose start was read already.
type replayBody struct {
	io.Reader
	io.Closer
}

// queuedAsleep reports whether a 503 body is the offline profile's
// agent_asleep body with queued true: the message was stored
// (docs/protocol.md §7.2).
func queuedAsleep(body []byte) bool {
	var b offline.AsleepResponse
	return b.UnmarshalJSON(body) == nil && b.Error == string(a2a.TokenAgentAsleep) && b.Queued
}

// retryAfter reads a Retry-After header in seconds or as an HTTP date.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var secs int64
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// errNoJSONRPC reports a card without a usable JSON-RPC interface.
var errNoJSONRPC = errors.New("http: the agent card names no JSONRPC interface of protocol version 1.0")

// JSONRPCEndpoint returns the URL of the card's JSON-RPC interface of A2A
// 1.0 (protocolBinding JSONRPC, protocolVersion 1.0 or 1.0.0).
func JSONRPCEndpoint(card *a2a.AgentCard) (string, error) {
	for _, in := range card.SupportedInterfaces {
		if strings.EqualFold(in.ProtocolBinding, ProtocolBindingJSONRPC) && isVersion10(in.ProtocolVersion) && in.URL != "" {
			return in.URL, nil
		}
	}
	return "", errNoJSONRPC
}
