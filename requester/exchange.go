package requester

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// exchange is one operation's set of live attempts, seen from the
// transport: replies are decoded and applied to the routing table on the
// transport's goroutine, in deliver, before the operation's goroutine is
// woken (a reply decoded there costs the round trip nothing extra).
type exchange struct {
	c *Client
	// mu guards pending, replies, closed and done.
	mu sync.Mutex
	// pending is a reply delivered while replies was not made yet: the
	// operation takes it without a channel. A transport that answers
	// within Send (HTTP) delivers its one reply so.
	pending *inbound
	// replies carries the replies from the moment the operation first
	// waits for one, or a second reply comes before it takes the first;
	// from then on every reply goes through it, so they keep their order.
	replies chan *inbound
	bufSize int
	// done is made only when a reply finds replies full (deliver then
	// waits for room or the end): most operations never need it.
	closed bool
	done   chan struct{}
	// req is the request of the operation's first attempt, allocated with
	// the exchange.
	req Request
	// in is the first reply's inbound, allocated with the exchange; inUsed
	// says it was taken.
	in     inbound
	inUsed atomic.Bool
	// decode decodes and checks the operation's result; it runs on the
	// transport's goroutines and must be safe for concurrent use.
	decode    resultDecoder
	streaming bool
	taskID    string // the task the operation is about ("" for none)
	// expect are the long texts of the message the operation sends, which
	// its reply's task may hold again (expectedTexts).
	expect []string
	errors jsonrpc.Binding

	// seen are the digests of stream items already delivered (QoS 1
	// duplicates); only the operation's goroutine reads and writes it.
	seen map[[32]byte]struct{}
}

func newExchange(c *Client, r *call) *exchange {
	buf := 4 // a single reply, and the replies to earlier attempts
	if r.streaming {
		buf = 64
	}
	ex := &exchange{c: c, bufSize: buf, decode: r.decode,
		streaming: r.streaming, taskID: r.taskID, errors: c.binding.Errors, expect: expectedTexts(r.params)}
	if r.streaming {
		ex.seen = map[[32]byte]struct{}{}
	}
	return ex
}

// expectedTexts returns the texts of ExpectMin bytes or more of the message
// a SendMessage or SendStreamingMessage request sends: the task of the
// reply holds the message again in its history, and reading those texts as
// the caller's own strings (runtime.Decoder.Expect) costs a comparison
// instead of a decoded copy of each. nil for any other request.
func expectedTexts(params any) []string {
	req, ok := params.(*a2a.SendMessageRequest)
	if !ok || req == nil || req.Message == nil {
		return nil
	}
	var out []string
	for _, p := range req.Message.Parts {
		if t, ok := p.Content.(a2a.PartText); ok && len(t) >= runtime.ExpectMin {
			out = append(out, string(t))
		}
	}
	return out
}

// close tells deliver that the operation no longer reads.
func (ex *exchange) close() {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if !ex.closed {
		ex.closed = true
		if ex.done != nil {
			close(ex.done)
		}
	}
}

// doneChan returns a channel closed once the operation no longer reads.
func (ex *exchange) doneChan() <-chan struct{} {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.done == nil {
		ex.done = make(chan struct{})
		if ex.closed {
			close(ex.done)
		}
	}
	return ex.done
}

// next is the operation's side: the reply delivered before it waited, if
// any, else the channel to wait on (made now if it was not).
func (ex *exchange) next() (*inbound, <-chan *inbound) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if in := ex.pending; in != nil {
		ex.pending = nil
		return in, nil
	}
	if ex.replies == nil {
		ex.replies = make(chan *inbound, ex.bufSize)
	}
	return nil, ex.replies
}

// deliver is the Transport's callback: it decodes the reply, applies it to
// the routing table and hands it to the operation. It waits while the
// operation is reading but slow (a stream item is never dropped), and drops
// the reply once the operation has ended.
func (ex *exchange) deliver(r *Reply) {
	in := ex.decodeReply(r)
	if in.resp != nil || in.envErr != nil {
		ex.c.noteReply(ex, in)
	}
	ex.mu.Lock()
	if ex.replies == nil {
		if ex.pending == nil {
			ex.pending = in
			ex.mu.Unlock()
			return
		}
		ex.replies = make(chan *inbound, ex.bufSize)
	}
	replies := ex.replies
	ex.mu.Unlock()
	select {
	case replies <- in:
		return
	default:
	}
	select {
	case replies <- in:
	case <-ex.doneChan():
	}
}

// firstSight reports whether a stream item's digest is new, and notes it.
func (ex *exchange) firstSight(digest [32]byte) bool {
	if _, dup := ex.seen[digest]; dup {
		return false
	}
	ex.seen[digest] = struct{}{}
	return true
}

// resultDecoder decodes the replies of one method: the envelope and the
// result into its generated type, checked against the schema, reading a
// peer's departures from A2A v1.0 in form (compat.go). Its functions run
// on the transport's goroutines and must be safe for concurrent use.
type resultDecoder struct {
	// inPlace reads a plain success reply, envelope and result, in one
	// pass (jsonrpc.DecodeResult); ok false sends the reply the two-pass
	// way, which gives the verdict.
	// expect are long strings the result may hold again (see
	// expectedTexts); they are handed to the decoder.
	inPlace func(payload []byte, expect []string) (resp *jsonrpc.Response, value any, ok bool)
	// result decodes a result taken out of its envelope and checks it; it
	// reports the departures it read.
	result func(json.RawMessage) (any, []Departure, error)
}

// decodeWith adapts a generated Parse<Type>JSON function and its type:
// the plain reply in one pass (jsonrpc.DecodeResult), anything else
// strict first, then DecodeLenient's rewrites (compat.go).
func decodeWith[T any, PT jsonrpc.ResultType[T]](parse func([]byte) (*T, error)) resultDecoder {
	return resultDecoder{
		inPlace: func(payload []byte, expect []string) (*jsonrpc.Response, any, bool) {
			resp, v, ok := jsonrpc.DecodeResultExpecting[T, PT](payload, expect)
			if !ok {
				return nil, nil, false
			}
			return resp, v, true
		},
		result: func(raw json.RawMessage) (any, []Departure, error) {
			v, departed, err := DecodeLenient(raw, parse)
			if err != nil {
				return nil, nil, err
			}
			return v, departed, nil
		},
	}
}

// inbound is a reply decoded once, before the operation's goroutine is
// woken: the envelope, the result into its type, and for a stream item
// whether it ends the stream and its digest.
type inbound struct {
	refused, failed error // the transport's verdict on the attempt
	end             bool  // no more replies for the attempt

	responders []string
	resp       *jsonrpc.Response // nil when the envelope is malformed
	envErr     error             // why the envelope is malformed
	value      any               // the decoded result
	valueErr   error             // the result breaks its schema
	final      bool              // a stream item that ends the stream
	digest     [32]byte          // a stream item's SHA-256
	taskID     string            // the task id the result shows, if any
	// misrouted: the handover table found no valid a2a-responder-agent-id
	// where one is required (a pooled reply): a protocol error.
	misrouted bool
}

// decodeReply decodes a transport's reply for the exchange.
func (ex *exchange) decodeReply(r *Reply) *inbound {
	in := ex.newInbound()
	*in = inbound{refused: r.Refused, failed: r.Failed, end: r.End, responders: r.Responders}
	if r.Err != nil && r.Refused == nil && r.Failed == nil {
		in.resp = &jsonrpc.Response{Err: r.Err}
		return in
	}
	if r.Refused != nil || r.Failed != nil || (r.End && len(r.Payload) == 0) {
		return in
	}
	// A plain success reply with a valid result is read in one pass;
	// anything else, from scratch, the two-pass way, which gives the same
	// verdict and errors as before that pass existed.
	if resp, v, ok := ex.readInPlace(r.Payload); ok {
		in.resp, in.value = resp, v
	} else if !ex.decodeTwoPass(in, r.Payload) {
		return in
	}
	in.taskID, _, _ = taskStateOf(in.value)
	if ex.streaming {
		in.digest = sha256.Sum256(r.Payload)
		if item, ok := in.value.(*a2a.StreamResponse); ok {
			in.final = tasklife.StreamItemFinal(item)
		}
	}
	return in
}

// newInbound returns the exchange's own inbound for the first reply, a
// new one for every later reply. (Replies to different attempts may be
// delivered at the same time.)
func (ex *exchange) newInbound() *inbound {
	if ex.inUsed.CompareAndSwap(false, true) {
		return &ex.in
	}
	return new(inbound)
}

// readInPlace runs the decoder's one-pass read, if it has one.
func (ex *exchange) readInPlace(payload []byte) (*jsonrpc.Response, any, bool) {
	if ex.decode.inPlace == nil {
		return nil, nil, false
	}
	return ex.decode.inPlace(payload, ex.expect)
}

// decodeTwoPass decodes a reply that is not a plain success response
// (decodeReply reads those in one pass): the envelope with
// jsonrpc.DecodeResponse, then its result out of it, with the departures
// of compat.go. It reports whether the reply holds a result (valid or
// not) to look into further.
func (ex *exchange) decodeTwoPass(in *inbound, payload []byte) bool {
	in.resp, in.envErr = jsonrpc.DecodeResponse(payload, ex.errors)
	switch {
	case in.envErr != nil:
		// Not a JSON-RPC response, unless a peer's departure (compat.go)
		// made it one whose result decodes; else the original error.
		resp, value, departed := ex.relaxedEnvelope(payload)
		if resp == nil {
			in.resp = nil
			return false
		}
		in.resp, in.envErr, in.value = resp, nil, value
		ex.noteDeparted(departed)
	case in.resp.Err != nil:
		return false
	default:
		var departed []Departure
		in.value, departed, in.valueErr = ex.decode.result(in.resp.Result)
		in.resp.Result = nil // the payload may be reused once deliver returns
		ex.noteDeparted(departed)
	}
	return true
}

// taskStateOf returns the task id and state a decoded result shows, if it
// shows one.
func taskStateOf(v any) (string, a2a.TaskState, bool) {
	var t *a2a.Task
	switch v := v.(type) {
	case *a2a.Task:
		t = v
	case *a2a.SendMessageResponse:
		t, _ = v.Payload.(*a2a.Task)
	case *a2a.StreamResponse:
		switch p := v.Payload.(type) {
		case *a2a.Task:
			t = p
		case *a2a.TaskStatusUpdateEvent:
			if p.Status != nil {
				return p.TaskID, p.Status.State, true
			}
		case *a2a.TaskArtifactUpdateEvent:
			return p.TaskID, "", false
		}
	}
	if t == nil || t.Status == nil {
		return "", "", false
	}
	return t.ID, t.Status.State, true
}
