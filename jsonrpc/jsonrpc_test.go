package jsonrpc

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

const okSend = `{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m1","taskId":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`

func TestDecodeRequestAnswersEachFaultWithItsToken(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		token  a2a.Token
		echoID string
	}{
		{"not JSON", `{"jsonrpc":`, a2a.TokenParseError, ""},
		{"not an object", `[1]`, a2a.TokenInvalidRequest, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}`, a2a.TokenInvalidRequest, "1"},
		{"method not a string", `{"jsonrpc":"2.0","id":2,"method":5}`, a2a.TokenInvalidRequest, "2"},
		{"id of a bad kind", `{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"t"}}`, a2a.TokenInvalidRequest, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{}}`, a2a.TokenMethodNotFound, "3"},
		{"params missing a required member", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{}}`, a2a.TokenInvalidParams, "4"},
		{"params of the wrong kind", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":[]}`, a2a.TokenInvalidParams, "5"},
		{"message breaking the schema", `{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{"role":"user","parts":[]}}}`, a2a.TokenInvalidParams, `"r"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, id, err := DecodeRequest([]byte(tc.in))
			if err == nil || req != nil {
				t.Fatalf("decoded %+v", req)
			}
			if err.Token != tc.token {
				t.Fatalf("token %s (%v), want %s", err.Token, err, tc.token)
			}
			if string(id) != tc.echoID {
				t.Fatalf("id %s, want %s", id, tc.echoID)
			}
		})
	}
}

func TestDecodeRequestTypesParams(t *testing.T) {
	req, _, err := DecodeRequest([]byte(okSend))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := req.Params.(*a2a.SendMessageRequest)
	if !ok || p.Message.MessageID != "m1" || string(req.ID) != `"r1"` || Streaming(req.Method) {
		t.Fatalf("%#v", req)
	}
	req, _, err = DecodeRequest([]byte(`{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}`))
	if err != nil || req.Method != a2a.MethodGetExtendedAgentCard {
		t.Fatalf("GetExtendedAgentCard without params: %v", err)
	}
	// A notification has no id.
	req, _, err = DecodeRequest([]byte(`{"jsonrpc":"2.0","method":"SubscribeToTask","params":{"id":"t"}}`))
	if err != nil || req.ID != nil || !Streaming(req.Method) {
		t.Fatalf("%+v %v", req, err)
	}
}

func TestInvalidParamsListEveryViolation(t *testing.T) {
	_, _, err := DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_X","parts":[]}}}`))
	list := err.Data.(map[string]any)["violations"].([]any)
	if len(list) != 3 {
		t.Fatalf("%d violations: %v", len(list), list)
	}
}

// The same code means different things in different profiles; the token
// survives the trip through the wire in both bindings.
func TestErrorsRoundTripByToken(t *testing.T) {
	tokens := []a2a.Token{
		a2a.TokenPushNotificationNotSupported, a2a.TokenRequestExpired, a2a.TokenAgentAsleep,
		a2a.TokenUnsupportedOperation, a2a.TokenResponderUnavailable, a2a.TokenAsleepQueueFull,
		a2a.TokenContentTypeNotSupported, a2a.TokenTransportProtocolError,
		a2a.TokenTaskNotFound, a2a.TokenInvalidParams, a2a.TokenParseError, a2a.TokenContextExpired,
	}
	for _, b := range []Binding{BindingMQTT, BindingHTTP} {
		for _, tok := range tokens {
			sent := a2a.NewError(tok, "")
			data, err := EncodeError(json.RawMessage(`"x"`), sent, b)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := DecodeResponse(data, b)
			if err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			code := sent.Code
			if info, _ := tok.Info(); b == BindingHTTP && info.Profile == a2a.ProfileMQTT && code <= -32003 && code >= -32005 {
				// Over HTTP these codes are A2A core's: the MQTT profile's
				// errors go as server errors, told apart by their reason.
				code = -32603
			}
			if resp.Err.Token != tok || resp.Err.Code != code || !errors.Is(resp.Err, sent) {
				t.Errorf("binding %d: sent %s, got %s (%s)", b, tok, resp.Err.Token, data)
			}
		}
	}
}

func TestWireShapesPerBinding(t *testing.T) {
	cases := []struct {
		name string
		tok  a2a.Token
		b    Binding
		want string
	}{
		{"MQTT profile token as the profile's object", a2a.TokenRequestExpired, BindingMQTT, `{"a2a_error":"request_expired"}`},
		{"A2A token over MQTT as ErrorInfo", a2a.TokenUnsupportedOperation, BindingMQTT, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","reason":"UNSUPPORTED_OPERATION"}]`},
		{"A2A token over HTTP as ErrorInfo", a2a.TokenTaskNotFound, BindingHTTP, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","reason":"TASK_NOT_FOUND"}]`},
		{"offline token over MQTT as the offline object", a2a.TokenAgentAsleep, BindingMQTT, `{"error":"agent_asleep"}`},
		{"offline token over HTTP as ErrorInfo", a2a.TokenAgentAsleep, BindingHTTP, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"error":"agent_asleep"},"reason":"AGENT_ASLEEP"}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(ToWire(a2a.NewError(tc.tok, ""), tc.b).Data)
			if string(b) != tc.want {
				t.Fatalf("got %s, want %s", b, tc.want)
			}
		})
	}
}

// The offline tokens' details per binding: the offline object over MQTT,
// ErrorInfo metadata in strings over HTTP (docs/protocol.md §6.2, §7.2);
// after the trip through the wire OfflineDetails reads the same details
// from either form, and the token and code survive.
func TestOfflineDetailsPerBinding(t *testing.T) {
	secs := int32(1800)
	asleepData := map[string]any{"queued": true, "retryAfterSec": float64(1800), "taskId": "t-1", "contextId": "c-1"}
	cases := []struct {
		name   string
		e      *a2a.Error
		b      Binding
		wire   string
		want   offline.OfflineErrorData
		status int
	}{
		{"asleep and queued over MQTT", withData(a2a.TokenAgentAsleep, asleepData), BindingMQTT,
			`{"contextId":"c-1","error":"agent_asleep","queued":true,"retryAfterSec":1800,"taskId":"t-1"}`,
			offline.OfflineErrorData{Error: "agent_asleep", Queued: true, RetryAfterSec: &secs, TaskID: "t-1", ContextID: "c-1"}, 503},
		{"asleep and queued over HTTP", withData(a2a.TokenAgentAsleep, asleepData), BindingHTTP,
			`[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org",` +
				`"metadata":{"contextId":"c-1","error":"agent_asleep","queued":"true","retryAfterSec":"1800","taskId":"t-1"},"reason":"AGENT_ASLEEP"}]`,
			offline.OfflineErrorData{Error: "agent_asleep", Queued: true, RetryAfterSec: &secs, TaskID: "t-1", ContextID: "c-1"}, 503},
		{"asleep not queued over HTTP, from OfflineErrorData", withData(a2a.TokenAgentAsleep,
			offline.OfflineErrorData{Error: "agent_asleep", RetryAfterSec: &secs}), BindingHTTP,
			`[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org",` +
				`"metadata":{"error":"agent_asleep","queued":"false","retryAfterSec":"1800"},"reason":"AGENT_ASLEEP"}]`,
			offline.OfflineErrorData{Error: "agent_asleep", RetryAfterSec: &secs}, 503},
		{"queue full, peer, over HTTP", withData(a2a.TokenAsleepQueueFull,
			map[string]any{"error": "asleep_queue_full", "queued": false, "kind": "peer"}), BindingHTTP,
			`[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org",` +
				`"metadata":{"error":"asleep_queue_full","kind":"peer","queued":"false"},"reason":"ASLEEP_QUEUE_FULL"}]`,
			offline.OfflineErrorData{Error: "asleep_queue_full", Kind: offline.QueueFullKindPeer}, 429},
		{"queue full, bytes, over MQTT", withData(a2a.TokenAsleepQueueFull,
			&offline.OfflineErrorData{Kind: offline.QueueFullKindBytes}), BindingMQTT,
			`{"error":"asleep_queue_full","kind":"bytes","queued":false}`,
			offline.OfflineErrorData{Error: "asleep_queue_full", Kind: offline.QueueFullKindBytes}, 507},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := ToWire(tc.e, tc.b)
			if b, _ := json.Marshal(w.Data); string(b) != tc.wire {
				t.Fatalf("data %s, want %s", b, tc.wire)
			}
			if w.Code != tc.e.Code {
				t.Fatalf("code %d, want %d", w.Code, tc.e.Code)
			}
			data, err := EncodeError(json.RawMessage(`1`), tc.e, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := DecodeResponse(data, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := OfflineDetails(resp.Err)
			if !ok || resp.Err.Token != tc.e.Token || resp.Err.Code != tc.e.Code || resp.Err.HTTPStatus != tc.status {
				t.Fatalf("read back %+v (offline %v), want token %s, code %d, status %d", resp.Err, ok, tc.e.Token, tc.e.Code, tc.status)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("details %s, want %s", show(got), show(tc.want))
			}
		})
	}
}

func withData(tok a2a.Token, data any) *a2a.Error {
	e := a2a.NewError(tok, "")
	e.Data = data
	return e
}

func show(d offline.OfflineErrorData) string {
	b, _ := d.MarshalJSON()
	return string(b)
}

// OfflineDetails reads what other implementations may send: numbers as
// strings or JSON numbers, values it cannot read left out, and nothing for
// a token outside the offline profile.
func TestOfflineDetailsReadsEveryForm(t *testing.T) {
	cases := []struct {
		name string
		tok  a2a.Token
		data any
		ok   bool
		want string
	}{
		{"no data", a2a.TokenAgentAsleep, nil, true, `{"error":"agent_asleep","queued":false}`},
		{"object, json.Number", a2a.TokenAgentAsleep, map[string]any{"queued": true, "retryAfterSec": json.Number("60")}, true,
			`{"error":"agent_asleep","queued":true,"retryAfterSec":60}`},
		{"metadata, huge wait bounded", a2a.TokenAgentAsleep, []any{map[string]any{"reason": "agent_asleep",
			"metadata": map[string]any{"queued": "TRUE", "retryAfterSec": "99999999999"}}}, true,
			`{"error":"agent_asleep","queued":true,"retryAfterSec":2147483647}`},
		{"negative and fractional waits dropped", a2a.TokenAgentAsleep, map[string]any{"queued": "yes", "retryAfterSec": -1.0}, true,
			`{"error":"agent_asleep","queued":false}`},
		{"fractional wait dropped", a2a.TokenAgentAsleep, map[string]any{"retryAfterSec": "1.5"}, true,
			`{"error":"agent_asleep","queued":false}`},
		{"ErrorInfo of another reason skipped", a2a.TokenAsleepQueueFull, []any{
			map[string]any{"reason": "SOMETHING_ELSE", "metadata": map[string]any{"kind": "bytes"}},
			map[string]any{"reason": "ASLEEP_QUEUE_FULL", "metadata": map[string]any{"kind": "messages"}}}, true,
			`{"error":"asleep_queue_full","queued":false,"kind":"messages"}`},
		{"not an offline token", a2a.TokenResponderUnavailable, map[string]any{"queued": true}, false, ``},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := OfflineDetails(withData(tc.tok, tc.data))
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && show(d) != tc.want {
				t.Fatalf("details %s, want %s", show(d), tc.want)
			}
		})
	}
	if _, ok := OfflineDetails(nil); ok {
		t.Fatal("nil error read as offline")
	}
}

func TestUnidentifiableErrorsKeepTheirCode(t *testing.T) {
	e := FromWire(WireError{Code: -32099, Message: "custom"}, BindingMQTT)
	if e.Token != a2a.TokenInternalError || e.Code != -32099 || e.Message != "custom" {
		t.Fatalf("%+v", e)
	}
	// -32004 with no data over MQTT is A2A's UnsupportedOperation, never the
	// retryable responder_unavailable.
	e = FromWire(WireError{Code: -32004, Message: "terminal"}, BindingMQTT)
	if e.Token != a2a.TokenUnsupportedOperation || e.Retryable() {
		t.Fatalf("%+v", e)
	}
}

func TestDecodeResponseRefusesNonResponses(t *testing.T) {
	for _, in := range []string{`{}`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`, `nope`} {
		if _, err := DecodeResponse([]byte(in), BindingMQTT); !errors.Is(err, a2a.ErrInvalidAgentResponse) {
			t.Errorf("%s: %v", in, err)
		}
	}
	r, err := DecodeResponse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"id":"t"}}`), BindingHTTP)
	if err != nil || !strings.Contains(string(r.Result), `"t"`) {
		t.Fatal(r, err)
	}
}

// a2a-go v2.3.1's errors (docs/conformance.md, "Payloads of the official Go
// SDK"): the ErrorInfo reason decides, so its own codes for the
// authentication errors do not matter; its UNAUTHORIZED is a2abind's
// permission_denied, by that reason and only in an A2A ErrorInfo.
func TestFromWireReadsA2AGoReasons(t *testing.T) {
	info := func(reason, domain string) string {
		return `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"` + domain +
			`","metadata":{"timestamp":"2026-01-02T10:00:00Z"}}]`
	}
	cases := []struct {
		name string
		code int
		data string
		want a2a.Token
	}{
		{"UNAUTHORIZED -31403", -31403, info("UNAUTHORIZED", ErrorInfoDomain), a2a.TokenPermissionDenied},
		{"UNAUTHORIZED after a Struct detail", -31403, `[{"@type":"type.googleapis.com/google.protobuf.Struct","value":{"a":1}},` +
			info("UNAUTHORIZED", ErrorInfoDomain)[1:], a2a.TokenPermissionDenied},
		{"UNAUTHORIZED spelt in lower case", -31403, info("unauthorized", ErrorInfoDomain), a2a.TokenPermissionDenied},
		{"UNAUTHENTICATED -31401", -31401, info("UNAUTHENTICATED", ErrorInfoDomain), a2a.TokenUnauthenticated},
		{"our PERMISSION_DENIED -31403", -31403, info("PERMISSION_DENIED", ErrorInfoDomain), a2a.TokenPermissionDenied},
		{"SERVER_ERROR -32000 has no token", -32000, info("SERVER_ERROR", ErrorInfoDomain), a2a.TokenInternalError},
		{"UNAUTHORIZED of another domain, no @type", -31403, `[{"reason":"UNAUTHORIZED","domain":"example.com"}]`, a2a.TokenInternalError},
		{"UNAUTHORIZED as an MQTT a2a_error is no token", -31403, `{"a2a_error":"unauthorized"}`, a2a.TokenInternalError},
		{"-31403 without data is no token", -31403, `null`, a2a.TokenInternalError},
	}
	for _, tc := range cases {
		for _, b := range []Binding{BindingHTTP, BindingMQTT} {
			t.Run(tc.name, func(t *testing.T) {
				wire := `{"jsonrpc":"2.0","id":"r","error":{"code":` + strconv.Itoa(tc.code) + `,"message":"m","data":` + tc.data + `}}`
				resp, err := DecodeResponse([]byte(wire), b)
				if err != nil {
					t.Fatal(err)
				}
				e := resp.Err
				if e.Token != tc.want || e.Code != tc.code || e.Message != "m" {
					t.Fatalf("binding %d: %s read as %+v, want token %s with the wire's code", b, wire, e, tc.want)
				}
				if tc.want == a2a.TokenPermissionDenied && (!errors.Is(e, a2a.ErrPermissionDenied) || e.HTTPStatus != 403) {
					t.Fatalf("%+v: want errors.Is ErrPermissionDenied and HTTP status 403", e)
				}
			})
		}
	}
}
