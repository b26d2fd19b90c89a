package jsonrpc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// agreementCases are requests whose verdict the validator
// (a2a.ValidateJSONRPCRequestJSON) and the server's decoder (DecodeRequest)
// must share; valid is that verdict.
var agreementCases = []struct {
	name  string
	in    string
	valid bool
}{
	{"ListTasks without params is the empty request", `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`, true},
	{"ListTasks with empty params", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, true},
	{"ListTasks with null params is the empty request", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":null}`, true},
	{"GetExtendedAgentCard without params", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, true},
	{"GetTask without params lacks the id", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, false},
	{"GetTask with null params lacks the id", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":null}`, false},
	{"SendMessage without params lacks the message", `{"jsonrpc":"2.0","id":1,"method":"SendMessage"}`, false},
	{"ListTaskPushNotificationConfigs without params lacks the task id", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs"}`, false},
	{"params of the wrong kind", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":[]}`, false},
	{"params breaking the method's schema", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`, false},
	{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`, false},
	{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ListTasks"}`, false},
	{"id of a bad kind", `{"jsonrpc":"2.0","id":true,"method":"ListTasks"}`, false},
	{"notification", `{"jsonrpc":"2.0","method":"ListTasks"}`, true},
	{"send message", okSend, true},
	{"a member twice in the envelope", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ListTasks"}`, false},
	{"a member twice in the params", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}`, false},
	{"a member twice deep in the params", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","metadata":{"k":1,"k":2}}]}}}`, false},
}

// TestValidatorAndDecoderAgree runs the same bytes through the validator and
// the server's decoder: the table above and every JSON-RPC request of the
// payload corpus (golden/payloads/JSONRPCRequest).
func TestValidatorAndDecoderAgree(t *testing.T) {
	type input struct {
		name  string
		in    []byte
		valid bool
	}
	var inputs []input
	for _, c := range agreementCases {
		inputs = append(inputs, input{c.name, []byte(c.in), c.valid})
	}
	dir := filepath.Join("..", "golden", "payloads", "JSONRPCRequest")
	for _, verdict := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join(dir, verdict, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no corpus in %s/%s: %v", dir, verdict, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, input{"corpus/" + verdict + "/" + filepath.Base(f), data, verdict == "valid"})
		}
	}
	for _, c := range inputs {
		t.Run(c.name, func(t *testing.T) {
			verr := a2a.ValidateJSONRPCRequestJSON(c.in)
			_, _, derr := DecodeRequest(c.in)
			if (verr == nil) != c.valid || (derr == nil) != c.valid {
				t.Errorf("%s\n  ValidateJSONRPCRequestJSON: %v\n  DecodeRequest:              %v\n  want valid=%v from both", c.in, verr, derr, c.valid)
			}
		})
	}
}
