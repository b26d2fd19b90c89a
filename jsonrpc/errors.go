package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

// Binding selects the error data shape of a transport binding.
type Binding int

const (
	// BindingMQTT is the A2A-over-MQTT profile 0.1.
	BindingMQTT Binding = iota + 1
	// BindingHTTP is the A2A v1.0 JSON-RPC over HTTP binding.
	BindingHTTP
)

// ErrorInfoDomain is the domain of the google.rpc.ErrorInfo that A2A v1.0
// errors carry.
const ErrorInfoDomain = "a2a-protocol.org"

const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// internalErrorCode is JSON-RPC's internal error.
const internalErrorCode = -32603

// WireError is the error member of a JSON-RPC response.
type WireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ToWire lays an error out for the binding. Details already set in e.Data
// (a map, or an offline.OfflineErrorData for the offline tokens) are kept:
// in the MQTT object forms beside a2a_error or error, in the ErrorInfo form
// as its metadata (non-string values as JSON text). The offline tokens
// (agent_asleep, asleep_queue_full) carry the offline object over MQTT and
// the ErrorInfo array over HTTP, like every A2A error there, so that
// official A2A clients decode them (docs/protocol.md §6.2, §7.2). A message
// longer than MaxErrorMessageBytes is cut.
func ToWire(e *a2a.Error, b Binding) WireError {
	w := WireError{Code: e.Code, Message: cut(e.Message, MaxErrorMessageBytes)}
	info, _ := e.Token.Info()
	if b == BindingHTTP && info.Profile == a2a.ProfileMQTT && e.Code <= -32003 && e.Code >= -32005 {
		// The MQTT profile's codes -32003…-32005 mean other errors in A2A
		// core (push not supported, unsupported operation, content type):
		// over HTTP such an error is a server error, -32603, still told
		// apart by its ErrorInfo reason (docs/protocol.md §6.1).
		w.Code = internalErrorCode
	}
	extra := dataMap(e.Data)
	switch {
	case b == BindingMQTT && info.Data == a2a.DataOffline:
		m := map[string]any{}
		for k, v := range extra {
			m[k] = v
		}
		m["error"] = string(e.Token)
		w.Data = m
	case b == BindingMQTT && info.Data == a2a.DataA2AError:
		m := map[string]any{"a2a_error": string(e.Token)}
		for k, v := range extra {
			m[k] = v
		}
		w.Data = m
	default:
		ei := map[string]any{"@type": errorInfoType, "reason": strings.ToUpper(string(e.Token)), "domain": ErrorInfoDomain}
		md := map[string]any{}
		if info.Data == a2a.DataOffline {
			// The offline object's error member, in the metadata too:
			// a2a-go's client keeps the ErrorInfo metadata but replaces
			// the reason by the one its code means (-32003 is
			// PUSH_NOTIFICATION_NOT_SUPPORTED there), so the token must
			// survive elsewhere (docs/conformance.md).
			md["error"] = string(e.Token)
		}
		for k, v := range extra {
			if k == "error" && info.Data == a2a.DataOffline {
				continue
			}
			if s, ok := v.(string); ok {
				md[k] = s
			} else if b, err := json.Marshal(v); err == nil {
				md[k] = string(b)
			}
		}
		if len(md) > 0 {
			ei["metadata"] = md
		}
		w.Data = []any{ei}
	}
	return w
}

// dataMap returns the details of an error's data as a map: the map itself,
// or the members of an offline.OfflineErrorData (its token left out).
func dataMap(data any) map[string]any {
	switch d := data.(type) {
	case map[string]any:
		return d
	case offline.OfflineErrorData:
		return offlineMap(&d)
	case *offline.OfflineErrorData:
		if d != nil {
			return offlineMap(d)
		}
	}
	return nil
}

func offlineMap(d *offline.OfflineErrorData) map[string]any {
	m := map[string]any{"queued": d.Queued}
	if d.RetryAfterSec != nil {
		m["retryAfterSec"] = float64(*d.RetryAfterSec)
	}
	if d.Kind != "" {
		m["kind"] = string(d.Kind)
	}
	if d.TaskID != "" {
		m["taskId"] = d.TaskID
	}
	if d.ContextID != "" {
		m["contextId"] = d.ContextID
	}
	return m
}

// FromWire identifies the token of a wire error: first by its data (the
// MQTT a2a_error object, the offline object's error, an ErrorInfo reason),
// then by its code among the JSON-RPC and A2A core tokens (the only ones
// that may come without data). An error it cannot identify gets
// internal_error's token and keeps its code, message and data. The data is
// kept as it came: read an offline token's details with OfflineDetails.
func FromWire(w WireError, b Binding) *a2a.Error {
	tok, ok := tokenFromData(w.Data)
	if !ok {
		tok, ok = tokenFromCode(w.Code, b)
	}
	if !ok {
		tok = a2a.TokenInternalError
	}
	e := &a2a.Error{Token: tok, Code: w.Code, HTTPStatus: httpStatus(tok), Message: w.Message, Data: w.Data}
	if d, ok := OfflineDetails(e); ok && d.Kind == offline.QueueFullKindPeer {
		// The per-peer cap answers 429, the global caps 507
		// (docs/protocol.md §7.4).
		e.HTTPStatus = 429
	}
	return e
}

func httpStatus(t a2a.Token) int {
	info, _ := t.Info()
	return info.HTTPStatus
}

func tokenFromData(data any) (a2a.Token, bool) {
	known := func(s string) (a2a.Token, bool) {
		t := a2a.Token(strings.ToLower(s))
		_, ok := t.Info()
		return t, ok
	}
	switch d := data.(type) {
	case map[string]any:
		for _, k := range []string{"a2a_error", "error"} {
			if s, ok := d[k].(string); ok {
				if t, ok := known(s); ok {
					return t, true
				}
			}
		}
	case []any:
		for _, item := range d {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			if s, ok := m["reason"].(string); ok && (m["domain"] == ErrorInfoDomain || m["@type"] == errorInfoType) {
				if t, ok := known(s); ok {
					return t, true
				}
				if t, ok := foreignReasons[strings.ToUpper(s)]; ok {
					return t, true
				}
			}
		}
	}
	return "", false
}

// foreignReasons are ErrorInfo reasons that other A2A implementations send
// for one of a2abind's tokens under another name. The official Go SDK
// a2a-go v2.3.1 answers a caller without permission with reason
// UNAUTHORIZED and code -31403 (its UNAUTHENTICATED, code -31401, already
// has a2abind's reason, and its SERVER_ERROR, code -32000, has no token
// here and stays internal_error with its code): docs/conformance.md,
// "a2a-go's errors", and docs/protocol.md §11, "error reasons of other
// implementations".
var foreignReasons = map[string]a2a.Token{
	"UNAUTHORIZED": a2a.TokenPermissionDenied,
}

// tokenFromCode identifies an error that carries no recognisable data: in
// either binding such a code means what A2A core (or JSON-RPC) says, since
// the MQTT profile's own tokens always carry a2a_error.
func tokenFromCode(code int, _ Binding) (a2a.Token, bool) {
	for _, info := range a2a.ErrorInfos() {
		if info.Code == code && (info.Profile == a2a.ProfileJSONRPC || info.Profile == a2a.ProfileA2A) {
			return info.Token, true
		}
	}
	return "", false
}

// AsError returns err as an *a2a.Error: itself if it is one, invalid_params
// for a validation failure, internal_error otherwise.
func AsError(err error) *a2a.Error {
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	var verr *a2a.ValidationError
	if errors.As(err, &verr) {
		return invalidParams(verr)
	}
	return a2a.NewError(a2a.TokenInternalError, "")
}
