package requester

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
)

// This file reads what a peer writes where it departs from A2A v1.0 in
// form only: the same content in another shape. Everything a2abind writes
// follows the specification, and what it serves is validated as strictly as
// before; only what the requester reads (replies, on every transport) and
// the Agent Cards it fetches (transport/http FetchCard) go through here.
//
// The departures, all of the official Go SDK a2a-go v2.3.1
// (docs/conformance.md, "Payloads of the official Go SDK", and
// docs/protocol.md §11):
//
//  1. securityRequirements (card and skill) written {"schemes":{"name":["scope"]}}:
//     read as the ProtoJSON {"schemes":{"name":{"list":["scope"]}}}
//     (DepartureSecurityRequirements).
//  2. A google.protobuf.Timestamp written with an offset,
//     "2026-01-02T12:00:00+02:00", where A2A v1.0 §5.6.1 wants UTC with Z:
//     read as the same instant in UTC, "2026-01-02T10:00:00Z"
//     (DepartureTimestampOffset).
//  3. null for an array (a Go nil slice): read as [] (DepartureNullArray).
//     Where the array is REQUIRED and so must not be empty (a skill's
//     tags) the payload stays invalid.
//  4. A success response with neither result nor error (a2a-go's
//     DeleteTaskPushNotificationConfig): read as "result":{}, which only a
//     method whose result is google.protobuf.Empty accepts
//     (DepartureNoResult).
//
// (a2a-go's error reason UNAUTHORIZED is read by jsonrpc.FromWire.)
//
// Nothing here costs a payload that follows the specification anything:
// a plain success reply whose result is valid is read in one pass
// (jsonrpc.DecodeResult) and never comes here; otherwise the strict
// generated parse runs first, and only when it fails are the places its
// violations point at rewritten, each only if it has the shape of a
// departure above; the rewritten bytes are parsed again, and if they
// fail too the original error is reported. Remove a rewrite once a2a-go
// stops writing its form.

// Departure names a way a peer's payload departs from A2A v1.0 in form that
// the requester reads anyway (docs/conformance.md).
type Departure string

// The departures read (a2a-go v2.3.1, docs/conformance.md).
const (
	// DepartureSecurityRequirements: {"schemes":{"name":["scope"]}}
	// read as {"schemes":{"name":{"list":["scope"]}}}.
	DepartureSecurityRequirements Departure = "securityRequirements scopes without list"
	// DepartureTimestampOffset: a timestamp with an offset read as the same
	// instant in UTC with Z.
	DepartureTimestampOffset Departure = "timestamp with an offset"
	// DepartureNullArray: null read as [] where an array is wanted.
	DepartureNullArray Departure = "null for an array"
	// DepartureNoResult: a success response without result read as
	// "result":{}.
	DepartureNoResult Departure = "response without result"
)

// DecodeLenient parses data with parse (a generated Parse<Type>JSON
// function); when that fails, it rewrites the departures listed in this
// file where the violations point and parses again. It returns the value,
// the departures rewritten (none when the strict parse passed) and, when
// the payload is invalid either way, the strict parse's error.
func DecodeLenient[T any](data []byte, parse func([]byte) (*T, error)) (*T, []Departure, error) {
	v, err := parse(data)
	if err == nil {
		return v, nil, nil
	}
	fixed, departed := relax(data, err)
	if fixed == nil {
		return nil, nil, err
	}
	v, ferr := parse(fixed)
	if ferr != nil {
		return nil, nil, err
	}
	return v, departed, nil
}

// relaxedEnvelope reads a reply that jsonrpc.DecodeResponse refused when
// the departures make it a JSON-RPC response whose result then decodes
// for the exchange's method. It returns nil when they do not.
func (ex *exchange) relaxedEnvelope(payload []byte) (*jsonrpc.Response, any, []Departure) {
	_, strict := a2a.ParseJSONRPCResponseJSON(payload)
	fixed, departed := relax(payload, strict)
	if fixed == nil {
		return nil, nil, nil
	}
	resp, err := jsonrpc.DecodeResponse(fixed, ex.errors)
	if err != nil || resp.Err != nil {
		return nil, nil, nil
	}
	v, more, err := ex.decode.result(resp.Result)
	if err != nil {
		return nil, nil, nil
	}
	resp.Result = nil
	return resp, v, append(departed, more...)
}

// noteDeparted logs a reply read despite departures, at debug level: a
// user sees there that a peer departs from the specification.
func (ex *exchange) noteDeparted(departed []Departure) {
	if len(departed) > 0 {
		ex.c.lenient.Add(1)
		ex.c.log.Debug("requester: reply read despite departures from A2A v1.0 (docs/conformance.md)",
			"task", ex.taskID, "departures", departed)
	}
}

// relax rewrites data where the violations of err (the strict parse's
// *a2a.ValidationError) point at a departure. It returns nil when err is
// no validation error or no violation is a departure.
func relax(data []byte, err error) ([]byte, []Departure) {
	var verr *a2a.ValidationError
	if !errors.As(err, &verr) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, nil
	}
	var departed []Departure
	for _, v := range verr.Violations {
		d, ok := rewriteAt(&doc, v)
		if !ok {
			continue
		}
		seen := false
		for _, x := range departed {
			seen = seen || x == d
		}
		if !seen {
			departed = append(departed, d)
		}
	}
	if len(departed) == 0 {
		return nil, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(doc) != nil {
		return nil, nil
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), departed
}

// rewriteAt rewrites the value a violation points at, if it has the shape
// of a departure.
func rewriteAt(doc *any, v a2a.Violation) (Departure, bool) {
	segs, ok := splitPointer(v.Pointer)
	if !ok {
		return "", false
	}
	val, set, ok := locate(doc, segs)
	if !ok {
		return "", false
	}
	n := len(segs)
	switch {
	case v.Rule == "oneOf" && n == 0:
		// Departure 4: {"jsonrpc":"2.0","id":...} alone.
		m, isObj := val.(map[string]any)
		if !isObj || m["jsonrpc"] != jsonrpc.Version {
			return "", false
		}
		_, hasID := m["id"]
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if !hasID || hasResult || hasError {
			return "", false
		}
		m["result"] = map[string]any{}
		return DepartureNoResult, true
	case v.Rule == "type" && val == nil:
		// Departure 3: a nil slice.
		set([]any{})
		return DepartureNullArray, true
	case v.Rule == "type" && n >= 4 && segs[n-2] == "schemes" && segs[n-4] == "securityRequirements":
		// Departure 1: the scopes as a bare array.
		list, isArr := val.([]any)
		if !isArr {
			return "", false
		}
		set(map[string]any{"list": list})
		return DepartureSecurityRequirements, true
	case v.Rule == "pattern":
		// Departure 2: only a Timestamp has a pattern (Z$) in schema/a2a.
		s, isStr := val.(string)
		if !isStr || strings.HasSuffix(s, "Z") || strings.HasSuffix(s, "z") {
			return "", false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return "", false
		}
		set(t.UTC().Format(time.RFC3339Nano))
		return DepartureTimestampOffset, true
	}
	return "", false
}

// splitPointer splits a JSON pointer (RFC 6901) into its unescaped
// reference tokens; "" is the whole document.
func splitPointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if p[0] != '/' {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, true
}

// locate finds the value segs point at in doc, and a function that
// replaces it. ok is false when there is no such value.
func locate(doc *any, segs []string) (val any, set func(any), ok bool) {
	val, set = *doc, func(x any) { *doc = x }
	for _, s := range segs {
		switch c := val.(type) {
		case map[string]any:
			x, found := c[s]
			if !found {
				return nil, nil, false
			}
			val, set = x, func(x any) { c[s] = x }
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != s {
				return nil, nil, false
			}
			val, set = c[i], func(x any) { c[i] = x }
		default:
			return nil, nil, false
		}
	}
	return val, set, true
}
