package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// Exchange is one HTTP request of the demo's HTTP requester and its
// answer, as they crossed the wire.
type Exchange struct {
	Method, Path string
	// Header holds the request headers of the A2A JSON-RPC binding, in a
	// fixed order: Content-Type, Accept, A2A-Version, and Authorization
	// (redacted).
	Header [][2]string
	Body   []byte
	// Status and ContentType are the response's (Status 0: no response,
	// see Err).
	Status      int
	ContentType string
	// Reply is the body of a plain answer; Events the data of each
	// Server-Sent Event of a stream, in order.
	Reply  []byte
	Events [][]byte
	Err    error
}

// wire is the demo's HTTP requester's transport: it passes every request
// on, and records it and its answer for the transcript, printing a line
// per request, per plain answer and per event as they are read.
type wire struct {
	base  http.RoundTripper
	w     io.Writer
	start time.Time

	mu sync.Mutex
	xs []*Exchange
}

func newWire(w io.Writer) *wire {
	return &wire{base: http.DefaultTransport.(*http.Transport).Clone(), w: w, start: time.Now()}
}

// bindingHeaders are the request headers the transcript keeps.
var bindingHeaders = []string{"Content-Type", "Accept", "A2A-Version", "Authorization"}

// RoundTrip implements http.RoundTripper.
func (wr *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	x := &Exchange{Method: req.Method, Path: req.URL.Path}
	for _, h := range bindingHeaders {
		if v := req.Header.Get(h); v != "" {
			if h == "Authorization" {
				v = "<redacted>"
			}
			x.Header = append(x.Header, [2]string{h, v})
		}
	}
	switch {
	case req.Body == nil || req.Body == http.NoBody:
	case req.GetBody != nil:
		// Read a copy: the request's own body stays unread for the
		// transport below.
		if b, err := req.GetBody(); err == nil {
			x.Body, _ = io.ReadAll(b)
			b.Close()
		}
	default:
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		x.Body = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	// A push config's token is a secret: never in the transcript.
	x.Body = redactSecrets(x.Body)
	wr.mu.Lock()
	wr.xs = append(wr.xs, x)
	wr.mu.Unlock()
	if len(x.Body) > 0 {
		wr.line("%s %s  %s", x.Method, x.Path, rpcSummary(x.Body))
	} else {
		wr.line("%s %s", x.Method, x.Path)
	}
	resp, err := wr.base.RoundTrip(req)
	if err != nil {
		wr.mu.Lock()
		x.Err = err
		wr.mu.Unlock()
		wr.line("   %v", err)
		return nil, err
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	wr.mu.Lock()
	x.Status, x.ContentType = resp.StatusCode, media
	wr.mu.Unlock()
	stream := media == "text/event-stream"
	if stream {
		wr.line("%d %s", x.Status, media)
	}
	resp.Body = &tap{ReadCloser: resp.Body, wr: wr, x: x, stream: stream}
	return resp, nil
}

func (wr *wire) line(format string, args ...any) {
	fmt.Fprintf(wr.w, "  %7.3fs  %s\n", time.Since(wr.start).Seconds(), fmt.Sprintf(format, args...))
}

// take returns the exchanges recorded so far and forgets them.
func (wr *wire) take() []Exchange {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	out := make([]Exchange, len(wr.xs))
	for i, x := range wr.xs {
		out[i] = *x
	}
	wr.xs = nil
	return out
}

// tap records a response body as it is read: a plain answer when it ends,
// each event of a stream when its blank line arrives, so whatever the
// requester has seen is recorded.
type tap struct {
	io.ReadCloser
	wr     *wire
	x      *Exchange
	stream bool
	buf    []byte
	done   bool
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.buf = append(t.buf, p[:n]...)
	if t.stream {
		t.events()
	} else if err == io.EOF {
		t.finish()
	}
	return n, err
}

func (t *tap) Close() error {
	if !t.stream {
		t.finish()
	}
	return t.ReadCloser.Close()
}

// finish records a plain answer once.
func (t *tap) finish() {
	if t.done {
		return
	}
	t.done = true
	t.wr.mu.Lock()
	t.x.Reply = t.buf
	t.wr.mu.Unlock()
	summary := ""
	switch {
	case t.x.Status != http.StatusOK && t.x.ContentType != "application/json":
		summary = fmt.Sprintf("%d bytes", len(t.buf))
	case strings.HasSuffix(t.x.Path, a2ahttp.WellKnownCardPath):
		summary = "card"
		if c, err := a2a.ParseAgentCardJSON(t.buf); err == nil {
			summary += " " + c.Name
		}
	default:
		summary = rpcSummary(t.buf)
	}
	t.wr.line("%d %s  %s", t.x.Status, t.x.ContentType, summary)
}

// events records each whole event in the buffer: the data of its "data:"
// lines (Server-Sent Events, WHATWG HTML §9.2).
func (t *tap) events() {
	for {
		i := bytes.Index(t.buf, []byte("\n\n"))
		if i < 0 {
			return
		}
		ev := t.buf[:i]
		t.buf = t.buf[i+2:]
		var data []byte
		for _, l := range bytes.Split(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if data == nil {
			continue
		}
		t.wr.mu.Lock()
		t.x.Events = append(t.x.Events, data)
		t.wr.mu.Unlock()
		t.wr.line("  event  %s", rpcSummary(data))
	}
}

// lastSent returns the message of the latest SendMessage or
// SendStreamingMessage request.
func (wr *wire) lastSent() (*a2a.Message, error) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for i := len(wr.xs) - 1; i >= 0; i-- {
		var env struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(wr.xs[i].Body, &env) != nil {
			continue
		}
		if env.Method != string(a2a.MethodSendMessage) && env.Method != string(a2a.MethodSendStreamingMessage) {
			continue
		}
		var p a2a.SendMessageRequest
		if err := p.UnmarshalJSON(env.Params); err != nil {
			return nil, err
		}
		return p.Message, nil
	}
	return nil, errors.New("no message was sent over HTTP")
}

// lastContentType is the media type of the latest answer.
func (wr *wire) lastContentType() string {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if len(wr.xs) == 0 {
		return ""
	}
	return wr.xs[len(wr.xs)-1].ContentType
}
