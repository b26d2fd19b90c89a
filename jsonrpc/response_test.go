package jsonrpc

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// twoPass decodes data as DecodeResult stands for: DecodeResponse, then
// parse of the result taken out of the envelope. ok is false when either
// refuses it or it is an error response.
func twoPass[T any](data []byte, parse func([]byte) (*T, error)) (*Response, *T, bool) {
	resp, err := DecodeResponse(data, BindingMQTT)
	if err != nil || resp.Err != nil {
		return nil, nil, false
	}
	v, err := parse(resp.Result)
	if err != nil {
		return nil, nil, false
	}
	resp.Result = nil
	return resp, v, true
}

const okTask = `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`

// TestDecodeResultReadsOnlyThePlainForm: DecodeResult reads a success
// response in one pass only in the plain form (jsonrpc and id, then the
// result, nothing else) with a valid result; everything else is left to
// DecodeResponse. Where it reads, it reads what the two passes read.
func TestDecodeResultReadsOnlyThePlainForm(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", `{"jsonrpc":"2.0","id":1,"result":` + okTask + `}`, true},
		{"id first", `{"id":"a","jsonrpc":"2.0","result":` + okTask + `}`, true},
		{"null id and white space", "\t{ \"jsonrpc\" : \"2.0\",\n\"id\":null , \"result\" : " + okTask + " }\n", true},
		{"a task's unknown member is skipped as Parse does", `{"jsonrpc":"2.0","id":1,"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"extra":[1]}}`, true},
		{"result before id", `{"jsonrpc":"2.0","result":` + okTask + `,"id":1}`, false},
		{"result first", `{"result":` + okTask + `,"jsonrpc":"2.0","id":1}`, false},
		{"an unknown envelope member", `{"jsonrpc":"2.0","id":1,"x":0,"result":` + okTask + `}`, false},
		{"a member after the result", `{"jsonrpc":"2.0","id":1,"result":` + okTask + `,"x":0}`, false},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":1,"result":` + okTask + `}`, false},
		{"an error response", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}`, false},
		{"no result", `{"jsonrpc":"2.0","id":1}`, false},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"result":` + okTask + `}`, false},
		{"id of a bad kind", `{"jsonrpc":"2.0","id":true,"result":` + okTask + `}`, false},
		{"result missing a required member", `{"jsonrpc":"2.0","id":1,"result":{"contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`, false},
		{"result breaking a rule", `{"jsonrpc":"2.0","id":1,"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T12:00:00+02:00"}}}`, false},
		{"a member twice deep in the result", `{"jsonrpc":"2.0","id":1,"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"metadata":{"a":{"b":1,"b":2}}}}`, false},
		{"result of the wrong kind", `{"jsonrpc":"2.0","id":1,"result":[]}`, false},
		{"truncated", `{"jsonrpc":"2.0","id":1,"result":` + okTask, false},
		{"trailing bytes", `{"jsonrpc":"2.0","id":1,"result":` + okTask + `} x`, false},
		{"not JSON", `not json`, false},
		{"empty", ``, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, v, ok := DecodeResult[a2a.Task]([]byte(c.in))
			if ok != c.ok {
				t.Fatalf("DecodeResult read %v, want %v:\n%s", ok, c.ok, c.in)
			}
			wresp, wv, wok := twoPass([]byte(c.in), a2a.ParseTaskJSON)
			if ok && (!wok || !reflect.DeepEqual(resp, wresp) || !reflect.DeepEqual(v, wv)) {
				t.Errorf("one pass read %+v %+v, two passes %v %+v %+v", resp, v, wok, wresp, wv)
			}
		})
	}
}

// TestDecodeResultAgreesOnTheCorpus runs every JSON-RPC response of the
// payload corpus (golden/payloads: JSONRPCResponse, and the replies of
// a2a-go and of the specification) through DecodeResult for the result
// types they may hold: where it reads a reply, the two passes read it to
// the same response and value; where the two passes read a reply in the
// plain form, so does it.
func TestDecodeResultAgreesOnTheCorpus(t *testing.T) {
	var files []string
	for _, pat := range []string{"JSONRPCResponse/*/*.json", "a2a-go/jsonrpc-response-*.json", "spec/*-response*.json"} {
		m, err := filepath.Glob(filepath.Join("..", "golden", "payloads", pat))
		if err != nil || len(m) == 0 {
			t.Fatalf("no corpus for %s: %v", pat, err)
		}
		files = append(files, m...)
	}
	// The replies whose result the corpus says is valid for the type.
	plainValid := map[string]bool{
		"result-empty-object.json/Empty": true, "result-task.json/SendMessageResponse": true,
		"jsonrpc-response-send-message.json/SendMessageResponse": true,
	}
	read := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check := func(typ string, ok, wok, same bool) {
			name := filepath.Base(f) + "/" + typ
			if ok && (!wok || !same) {
				t.Errorf("%s: one pass and two passes read different replies", name)
			}
			if plainValid[name] && !ok {
				t.Errorf("%s: a plain reply with a valid result was not read in one pass", name)
			}
			if ok {
				read++
			}
		}
		r1, v1, ok := DecodeResult[a2a.SendMessageResponse](data)
		r2, v2, wok := twoPass(data, a2a.ParseSendMessageResponseJSON)
		check("SendMessageResponse", ok, wok, reflect.DeepEqual(r1, r2) && reflect.DeepEqual(v1, v2))
		r3, v3, ok := DecodeResult[a2a.Task](data)
		r4, v4, wok := twoPass(data, a2a.ParseTaskJSON)
		check("Task", ok, wok, reflect.DeepEqual(r3, r4) && reflect.DeepEqual(v3, v4))
		r5, v5, ok := DecodeResult[a2a.Empty](data)
		r6, v6, wok := twoPass(data, a2a.ParseEmptyJSON)
		check("Empty", ok, wok, reflect.DeepEqual(r5, r6) && reflect.DeepEqual(v5, v6))
	}
	if read < len(plainValid) {
		t.Errorf("only %d replies read in one pass", read)
	}
}
