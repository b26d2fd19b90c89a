package jsonrpc

import (
	"encoding/json"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// The responder's decoding comes in two paths that answer alike.
//
// decodeRequestSlow (envelope.go) reads the envelope with the generated
// JSONRPCRequest decoder, which skips the params and copies them, counts
// the parts of a message over the copy (partsIn), then decodes and checks
// the copy with the method's Parse<Type>JSON: three passes over the params
// and a copy of them, a megabyte of each for a message of a megabyte.
//
// decodeFast reads the request in one pass, with no copy: the envelope
// member by member, the params where they stand, with the decoder of the
// method's params type (strings copied once, out of the request's bytes,
// as Parse<Type>JSON copies them), then checks them as Parse<Type>JSON
// does. It takes the plain shape only: an object of "jsonrpc" ("2.0"),
// "id" (optional), "method" (one A2A v1.0 defines) and "params"
// (optional, an object, after "method"), each at most once, nothing else,
// and nothing wrong anywhere. Whatever strays from that (an unknown or
// repeated envelope member, params before the method or of another kind,
// a syntax error, a schema violation, a message of more parts than
// Limits.MaxParts) makes it stop where it sees it and hand over to
// decodeRequestSlow, from the start: the answer to a faulty request is
// the slow path's, word for word. (The one error decodeFast answers
// itself is the slow path's last step: a request without params whose
// method requires some.) A valid request the fast path takes is the request
// the slow path returns (decode_test.go compares the two on the payload
// corpus and its mutations).
//
// What a faulty request costs. The decoder stops at the first violation
// it records (runtime.Decoder.StopAtViolation: before the next member or
// item) and past Limits.MaxParts parts of a message
// (runtime.Decoder.BoundItems; the schema marks Message.parts with
// x-item-bound); only a violation found by the checks that run after the
// decoding (the schema's rules beyond the JSON types) lets it read
// everything first. So a request refused costs at most one decoding of
// its params more than it did before, most cost little more, and a
// stranger's message of a million tiny parts costs at most
// Limits.MaxParts parts decoded (about 140 KiB with the default limit)
// before the slow path counts them without decoding and refuses them as
// it always did. Checking len(message.parts) only after decoding
// them all would not do: a valid part can be 11 bytes of JSON
// ({"url":""},) and is 56 bytes in Go, so a request of 4 MiB
// (DefaultMaxRequestBytes) of them would allocate about 120 MiB as the
// slice of parts grows, where counting them costs nothing but the pass.

// Bits of the envelope members decodeFast has read.
const (
	seenJSONRPC = 1 << iota
	seenID
	seenMethod
	seenParams
)

// fastRequest is what decodeFast has read of a request.
type fastRequest struct {
	// maxParts is Limits.MaxParts: the most parts a message may have
	// (0 or less: no bound).
	maxParts int
	// plain says the request had the plain shape, with nothing wrong that
	// the decoding saw.
	plain  bool
	id     json.RawMessage
	method a2a.Method
	// params are the params decoded, nil when the request had none; req
	// is the Request allocated with them, to return them in.
	params paramsValue
	req    *Request
}

// decodeFast decodes a request of the plain shape in one pass (see above).
// ok false means the request is not one it answers: the caller decodes it
// with decodeRequestSlow, from the start. When ok, the other results are
// those of decodeRequestSlow.
func decodeFast(data []byte, l Limits) (req *Request, id json.RawMessage, e *a2a.Error, ok bool) {
	f := &fastRequest{maxParts: l.MaxParts}
	// runtime.Parse reads as Parse<Type>JSON does: required members
	// checked, strings copied out of data; then f.validate runs the
	// checks of the params type, and any violation or syntax error is
	// its error.
	if _, err := runtime.Parse(data, f, f.read, f.validate); err != nil || !f.plain {
		return nil, nil, nil, false
	}
	if f.params == nil {
		// No params: the slow path decodes "{}" as the method's params,
		// its last step, which this is.
		params, err := decodeParams(f.method, nil)
		if err != nil {
			return nil, f.id, AsError(err), true
		}
		return &Request{ID: f.id, Method: f.method, Params: params}, f.id, nil, true
	}
	*f.req = Request{ID: f.id, Method: f.method, Params: f.params}
	return f.req, f.id, nil, true
}

// read reads the envelope from d, the whole document.
func (f *fastRequest) read(d *runtime.Decoder) {
	f.plain = f.envelope(d)
}

// validate checks the params decoded against the rest of their schema, as
// Parse<Type>JSON does after decoding, at pointers relative to the params.
func (f *fastRequest) validate(v *runtime.Validator, _ *runtime.Path) {
	if f.plain && f.params != nil {
		f.params.ValidateAt(v, nil)
	}
}

// envelope reads the members of the envelope, and the params in place;
// it reports false, and stops, at the first thing off the plain shape.
// What it leaves unread makes the document end early for the decoder (a
// syntax error), which is no matter: the slow path answers.
func (f *fastRequest) envelope(d *runtime.Decoder) bool {
	// The decoder stops at the first violation it records and past
	// maxParts parts of a message (x-item-bound on Message.parts).
	d.StopAtViolation()
	d.BoundItems(f.maxParts)
	if d.Peek() != '{' || !d.OpenObject(nil) {
		return false
	}
	var seen int
	for first := true; ; {
		key, more := d.NextKey(&first)
		if !more {
			break
		}
		var bit int
		switch string(key) {
		case "jsonrpc":
			bit = seenJSONRPC
		case "id":
			bit = seenID
		case "method":
			bit = seenMethod
		case "params":
			bit = seenParams
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case seenJSONRPC:
			if d.Peek() != '"' {
				return false
			}
			if v, _ := d.String(nil); v != Version {
				return false
			}
		case seenID:
			// The generated envelope decoder reads the id so: a copy of
			// its bytes, a string, a number or null.
			f.id = d.RawKinds(nil, "string", "number", "null")
			if len(f.id) == 0 || !validID(f.id) {
				return false
			}
		case seenMethod:
			if d.Peek() != '"' {
				return false
			}
			v, _ := d.String(nil)
			f.method = a2a.Method(v)
			if !f.method.Valid() {
				return false
			}
		case seenParams:
			if seen&seenMethod == 0 || d.Peek() != '{' {
				return false
			}
			if !f.readParams(d) {
				return false
			}
		}
	}
	return d.OK() && seen&(seenJSONRPC|seenMethod) == seenJSONRPC|seenMethod
}

// readParams decodes the params object that comes next in d into a new
// value of the method's params type, at pointers relative to the params
// (as Parse<Type>JSON over a copy of them would record them).
func (f *fastRequest) readParams(d *runtime.Decoder) bool {
	f.params, f.req = methods[f.method].fresh()
	f.params.DecodeJSONAt(d, nil)
	return d.OK()
}
