package jsonrpc

import (
	"encoding/json"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Response is a decoded response: exactly one of Result and Err is set.
type Response struct {
	ID     json.RawMessage
	Result json.RawMessage
	Err    *a2a.Error
}

// DecodeResponse parses a response envelope, identifying an error's token
// with FromWire. A payload that is not a JSON-RPC 2.0 response is an
// invalid_agent_response error (returned, not set in Err).
func DecodeResponse(data []byte, b Binding) (*Response, error) {
	env, err := a2a.ParseJSONRPCResponseJSON(data)
	if err != nil {
		return nil, a2a.NewError(a2a.TokenInvalidAgentResponse, "not a JSON-RPC 2.0 response: "+err.Error())
	}
	r := &Response{ID: env.ID}
	switch o := env.Outcome.(type) {
	case a2a.JSONRPCResponseResult:
		r.Result = json.RawMessage(o)
	case *a2a.JSONRPCError:
		r.Err = FromWire(WireError{Code: int(o.Code), Message: o.Message, Data: o.Data}, b)
	}
	return r, nil
}

// ResultType is a generated type that a response's result can be read into
// in place (DecodeResult): the pointer to T, with the decoder and the
// checks the generator writes for every type.
type ResultType[T any] interface {
	*T
	DecodeJSONAt(d *runtime.Decoder, p *runtime.Path)
	ValidateAt(v *runtime.Validator, p *runtime.Path)
}

// DecodeResult reads a success response whose result is a T in one pass
// over data: the envelope's members, and the result decoded where it lies
// and checked as Parse<Type>JSON checks it, with no copy of the result's
// bytes and no second reading of them.
//
// It reads only the plain form of a success response: an object holding
// "jsonrpc":"2.0" and "id" (a string, number or null), once each in either
// order, then "result", and nothing else, with a result that is a valid T.
// Then ok is true, and resp (ID set, Result nil) and v are what
// DecodeResponse and then Parse<Type>JSON of its Result would return; v
// shares no bytes with data. For any other payload (an error response, a
// member it does not name, a member twice or after "result", a result that
// breaks its schema, bytes that are not JSON) it returns ok false and keeps
// nothing: the caller then decodes the payload with DecodeResponse, which
// gives the verdict and the error.
func DecodeResult[T any, PT ResultType[T]](data []byte) (resp *Response, v *T, ok bool) {
	return DecodeResultExpecting[T, PT](data, nil)
}

// DecodeResultExpecting is DecodeResult for a result that may hold some of
// the long strings expect again (a task whose history holds the message a
// requester sent): a string of the result that decodes to one of them is
// read as that very string, compared in place rather than decoded into a
// copy (runtime.Decoder.Expect). The answer is DecodeResult's.
func DecodeResultExpecting[T any, PT ResultType[T]](data []byte, expect []string) (resp *Response, v *T, ok bool) {
	// The response and the result are allocated together.
	both := new(struct {
		resp Response
		x    T
	})
	x := &both.x
	var id json.RawMessage
	plain := false
	_, err := runtime.Parse(data, x, func(d *runtime.Decoder) {
		if expect != nil {
			d.Expect(expect)
		}
		plain = decodePlain(d, &id, func(d *runtime.Decoder) { PT(x).DecodeJSONAt(d, nil) })
	}, func(vr *runtime.Validator, _ *runtime.Path) {
		if plain {
			PT(x).ValidateAt(vr, nil)
		}
	})
	if err != nil || !plain {
		return nil, nil, false
	}
	both.resp.ID = id
	return &both.resp, x, true
}

// decodePlain reads the envelope of a plain success response (see
// DecodeResult) from d, storing the id in *id and reading the result with
// result, and reports whether the payload had that form up to its closing
// brace. On the first departure from it, it stops where it is: the decoder
// then reports the unread rest as a syntax error, or the violations it
// recorded, and DecodeResult falls back either way.
func decodePlain(d *runtime.Decoder, id *json.RawMessage, result func(d *runtime.Decoder)) bool {
	var root *runtime.Path
	if d.Peek() != '{' || !d.OpenObject(root) {
		return false
	}
	var haveVersion, haveID bool
	for first := true; ; {
		key, ok := d.NextKey(&first)
		if !ok {
			return false // closed before the result, or not JSON
		}
		switch string(key) {
		case "jsonrpc":
			if haveVersion || d.Peek() != '"' {
				return false
			}
			fp := root.Key("jsonrpc")
			s, ok := d.String(&fp)
			if !ok || s != Version {
				return false
			}
			haveVersion = true
		case "id":
			if haveID {
				return false
			}
			if c := d.Peek(); c == 0 || !validID([]byte{c}) {
				return false // not a string, number or null
			}
			fp := root.Key("id")
			*id = d.RawKinds(&fp, "string", "number", "null")
			if !d.OK() {
				return false
			}
			haveID = true
		case "result":
			if !haveVersion || !haveID {
				return false
			}
			result(d)
			_, more := d.NextKey(&first)
			return !more && d.OK()
		default:
			return false
		}
	}
}
