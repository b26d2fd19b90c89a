package golden

import "testing"

// messageCases are payloads with the exact report the generated validator
// gives for them: the violations joined by "; " as checkGenerated does.
var messageCases = []struct {
	name, typeName, data, want string
}{
	{
		name: "null on a required string", typeName: "Message",
		data: `{"messageId":null,"role":"ROLE_USER","parts":[{"text":"a"}]}`,
		want: "/messageId: type: must not be null",
	},
	{
		name: "null on a required object", typeName: "Task",
		data: `{"id":"t","contextId":"c","status":null}`,
		want: "/status: type: must not be null",
	},
	{
		name: "null on a required array", typeName: "Message",
		data: `{"messageId":"m","role":"ROLE_USER","parts":null}`,
		want: "/parts: type: must not be null",
	},
	{
		name: "null on a required number", typeName: "ListTasksResponse",
		data: `{"tasks":[],"nextPageToken":"","pageSize":null,"totalSize":0}`,
		want: "/pageSize: type: must not be null",
	},
	{
		name: "null on optional members is not set", typeName: "Message",
		data: `{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":null}],"taskId":null,"metadata":null,"referenceTaskIds":null}`,
		want: "valid",
	},
	{
		name: "null array element stays a type error", typeName: "Message",
		data: `{"messageId":"m","role":"ROLE_USER","parts":[null]}`,
		want: "/parts/0: type: got null, want object",
	},
	{
		name: "a whole number with a fraction is not an integer", typeName: "ListTasksRequest",
		data: `{"pageSize":10.0}`,
		want: "/pageSize: type: got 10.0, want an integer (no fraction or exponent)",
	},
	{
		name: "a whole number with an exponent is not an integer", typeName: "ListTasksRequest",
		data: `{"pageSize":1e1}`,
		want: "/pageSize: type: got 1e1, want an integer (no fraction or exponent)",
	},
	{
		name: "a member twice", typeName: "Part",
		data: `{"text":"a","metadata":{"k":1,"k":2}}`,
		want: `/metadata/k: duplicate: member "k" appears more than once`,
	},
	{
		name: "an empty required string is not missing", typeName: "AgentCardSignature",
		data: `{"protected":"","signature":"s"}`,
		want: "/protected: minLength: must not be empty",
	},
	{
		name: "missing members of every kind at their own pointers", typeName: "ListTasksResponse",
		data: `{}`,
		want: `/nextPageToken: required: missing property "nextPageToken"; ` +
			`/pageSize: required: missing property "pageSize"; ` +
			`/tasks: required: missing property "tasks"; ` +
			`/totalSize: required: missing property "totalSize"`,
	},
	{
		name: "a missing string, object and map at their own pointers", typeName: "AuthorizationCodeOAuthFlow",
		data: `{}`,
		want: `/authorizationUrl: required: missing property "authorizationUrl"; ` +
			`/scopes: required: missing property "scopes"; ` +
			`/tokenUrl: required: missing property "tokenUrl"`,
	},
	{
		name: "a snake_case member beside the missing camelCase one", typeName: "AgentSkill",
		data: `{"id":"s","name":"n","description":"d","tags":["t"],"input_modes":["text/plain"]}`,
		want: "valid",
	},
	{
		name: "a snake_case required member", typeName: "TaskStatusUpdateEvent",
		data: `{"task_id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`,
		want: `/taskId: required: missing property "taskId": found task_id; the ProtoJSON name is taskId`,
	},
	{
		name: "an ErrorInfo reason of another code", typeName: "JSONRPCResponse",
		data: `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE","domain":"a2a-protocol.org","metadata":{"n":1}}]}}`,
		want: `/error/data/0/metadata/n: type: metadata values are strings; ` +
			`/error/data/0/reason: enum: code -32001 wants reason TASK_NOT_FOUND, got "TASK_NOT_CANCELABLE"`,
	},
	{
		name: "an A2A error without an ErrorInfo", typeName: "JSONRPCResponse",
		data: `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"m","data":[]}}`,
		want: `/error/data: errorInfo: an A2A error (-32003) must carry a google.rpc.ErrorInfo ("@type": "type.googleapis.com/google.rpc.ErrorInfo") in its data array`,
	},
}

func TestViolationMessages(t *testing.T) {
	for _, c := range messageCases {
		t.Run(c.name, func(t *testing.T) {
			v, err := checkGenerated(c.typeName, []byte(c.data))
			if err != nil {
				t.Fatal(err)
			}
			got := v.detail
			if v.valid {
				got = "valid"
			}
			if got != c.want {
				t.Errorf("Validate%sJSON(%s):\n got  %s\n want %s", c.typeName, c.data, got, c.want)
			}
		})
	}
}
