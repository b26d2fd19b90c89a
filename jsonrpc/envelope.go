package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
)

// Version is the jsonrpc member of every envelope.
const Version = "2.0"

// Request is a checked JSON-RPC request of A2A v1.0.
type Request struct {
	// ID is the request id (a JSON string, number or null), nil for a
	// notification.
	ID json.RawMessage
	// Method is a known A2A method.
	Method a2a.Method
	// Params holds the method's params type, decoded and valid: one of
	// *a2a.SendMessageRequest, *a2a.GetTaskRequest, *a2a.ListTasksRequest,
	// *a2a.CancelTaskRequest, *a2a.SubscribeToTaskRequest,
	// *a2a.TaskPushNotificationConfig,
	// *a2a.GetTaskPushNotificationConfigRequest,
	// *a2a.ListTaskPushNotificationConfigsRequest,
	// *a2a.DeleteTaskPushNotificationConfigRequest or
	// *a2a.GetExtendedAgentCardRequest.
	Params any
}

// DecodeRequest parses and checks a request. On failure it returns the
// protocol error to answer with, and the request id when one could be read
// (so the error can echo it): parse_error for bytes that are not JSON,
// invalid_request for an envelope that is not a JSON-RPC 2.0 request,
// method_not_found for a method A2A v1.0 does not define, invalid_params
// for params that break the method's schema (listing the first
// MaxReportedViolations violations and counting the rest). It bounds
// neither the payload's size nor a message's parts: a responder decodes
// with Limits.DecodeRequest (agent.Server.DecodeRequest does).
func DecodeRequest(data []byte) (*Request, json.RawMessage, *a2a.Error) {
	return decodeRequest(data, Limits{})
}

// decodeRequest decodes a request within the limits' bound on parts: in
// one pass when it has the plain shape and nothing wrong (decodeFast),
// else, and for every error, as decodeRequestSlow does.
func decodeRequest(data []byte, l Limits) (*Request, json.RawMessage, *a2a.Error) {
	if req, id, e, ok := decodeFast(data, l); ok {
		return req, id, e
	}
	return decodeRequestSlow(data, l)
}

// decodeRequestSlow decodes any request, in three passes over its params:
// the envelope with the params skipped and copied, the parts of a message
// counted over the copy, the copy decoded and checked. Every error a
// request is answered with is its error.
func decodeRequestSlow(data []byte, l Limits) (*Request, json.RawMessage, *a2a.Error) {
	var env a2a.JSONRPCRequest
	if err := env.UnmarshalJSON(data); err != nil {
		var syn *a2a.SyntaxError
		if errors.As(err, &syn) {
			return nil, nil, a2a.NewError(a2a.TokenParseError, "")
		}
		var verr *a2a.ValidationError
		if errors.As(err, &verr) && onlyParams(verr) {
			if len(verr.Violations) == 1 && verr.Violations[0].Pointer == "/params" && verr.Violations[0].Rule == "type" {
				return nil, env.ID, a2a.NewError(a2a.TokenInvalidParams, "params must be a JSON object")
			}
			// A member twice in one object of the params.
			return nil, env.ID, AsError(err)
		}
		return nil, env.ID, a2a.NewError(a2a.TokenInvalidRequest, err.Error())
	}
	if env.JSONRPC != Version || env.Method == "" || !validID(env.ID) {
		return nil, env.ID, a2a.NewError(a2a.TokenInvalidRequest, `not a JSON-RPC 2.0 request: "jsonrpc" must be "2.0", "method" a string, "id" a string, number or null`)
	}
	if !env.Method.Valid() {
		return nil, env.ID, a2a.NewError(a2a.TokenMethodNotFound, "method "+string(env.Method)+" is not an A2A v1.0 method")
	}
	if e := l.checkParts(env.Method, env.Params); e != nil {
		return nil, env.ID, e
	}
	params, err := decodeParams(env.Method, env.Params)
	if err != nil {
		return nil, env.ID, AsError(err)
	}
	return &Request{ID: env.ID, Method: env.Method, Params: params}, env.ID, nil
}

func onlyParams(verr *a2a.ValidationError) bool {
	for _, v := range verr.Violations {
		if v.Pointer != "/params" && !strings.HasPrefix(v.Pointer, "/params/") {
			return false
		}
	}
	return true
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// EncodeRequest builds a request envelope. Params of a generated type are
// appended to the envelope by their own encoder.
func EncodeRequest(id json.RawMessage, method a2a.Method, params any) ([]byte, error) {
	b := make([]byte, 0, 256+len(id)+paramsSize(params))
	b = append(b, `{"jsonrpc":"2.0",`...)
	if len(id) > 0 {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	if method.Valid() {
		b = append(append(append(b, '"'), method...), '"')
	} else {
		m, err := json.Marshal(string(method))
		if err != nil {
			return nil, err
		}
		b = append(b, m...)
	}
	b = append(b, `,"params":`...)
	b, err := appendValue(b, params)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appender is what every generated type implements.
type appender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// paramsSize estimates the encoded size of a request's params (see package
// internal/jsonsize) where they can be large: a message to send, with its
// parts. A 1 MB text is encoded into a buffer allocated once, not one
// that doubles from a few hundred bytes.
func paramsSize(params any) int {
	p, ok := params.(*a2a.SendMessageRequest)
	if !ok || p == nil || p.Message == nil {
		return 256
	}
	if p.Metadata == nil {
		if n, ok := smallTextSize(p.Message); ok {
			return 256 + n
		}
	}
	return 256 + jsonsize.Message(p.Message) + jsonsize.Any(p.Metadata)
}

// smallTextBytes bounds the strings of a message smallTextSize sizes.
const smallTextBytes = 2048

// smallTextSize sizes a small message from the lengths of its strings
// alone, with no reading of them (jsonsize.PlainMessage), and an eighth
// more for what escaping adds. It reports false for a message holding free
// JSON (metadata, data parts), or one of more than smallTextBytes: those
// are estimated by jsonsize.Message, which scans for escapes. At a few
// hundred bytes that scan costs more than the encoding; a text with more
// escapes than an eighth of its length makes the encoder grow the buffer
// once, which at this size costs about what the scan would have.
func smallTextSize(m *a2a.Message) (int, bool) {
	n := jsonsize.PlainMessage(m)
	if n < 0 || n > smallTextBytes {
		return 0, false
	}
	return n + n/8, true
}

// appendValue appends v as JSON: by its AppendJSON or MarshalJSON when it
// has one, else by encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch m := v.(type) {
	case appender:
		return m.AppendJSON(b)
	case json.Marshaler:
		r, err := m.MarshalJSON()
		return append(b, r...), err
	}
	r, err := json.Marshal(v)
	return append(b, r...), err
}

// EncodeResult builds a success response. A result of a generated type is
// appended to the envelope by its own encoder.
func EncodeResult(id json.RawMessage, result any) ([]byte, error) {
	// A kilobyte in all, as a result of unknown size always had.
	return EncodeResultSized(id, result, 1024-ResultHeadLen(id)-len(ResultTail))
}

// EncodeError builds an error response laid out for the binding.
func EncodeError(id json.RawMessage, e *a2a.Error, b Binding) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   WireError       `json:"error"`
	}{Version, nullID(id), ToWire(e, b)})
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}
