package mqtt

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// A request over the agent's limits is answered with the error naming the
// limit, in a reply far smaller than the request; the agent serves the next
// request as usual.
func TestRequestsOverTheLimitsGetSmallErrors(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		srv := echoServer(t, agent.WithMaxRequestBytes(64<<10), agent.WithMaxParts(100))
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "bounded", Card: testCard("Bounded"), Server: srv})
		reply := "$a2a/v1/reply/acme/lab/req/" + uuid.NewString()
		rc := dialRaw(t, b.URL(), "acme/lab/req-limits", reply)
		topic := "$a2a/v1/request/acme/lab/bounded"

		cases := []struct {
			name    string
			payload []byte
			code    int
			mention string
		}{
			{"a payload over the size limit", sendPayload(t, newMessage(strings.Repeat("x", 100<<10))), -32600, "limit of 65536 bytes"},
			{"a message of too many invalid parts", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":"` + uuid.NewString() +
				`","role":"ROLE_USER","parts":[` + strings.TrimSuffix(strings.Repeat(`{},`, 20000), ",") + `]}}}`), -32602, "limit of 100 parts"},
			{"many invalid ids", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":"` + uuid.NewString() +
				`","role":"ROLE_USER","parts":[{"text":"a"}],"referenceTaskIds":[` + strings.TrimSuffix(strings.Repeat(`1,`, 30000), ",") + `]}}}`), -32602, "more; error.data lists the first 20"},
		}
		for _, tc := range cases {
			rc.request(t, topic, reply, tc.payload)
			got := rc.next(t, reply).payload
			r := decodeRPC(t, got)
			if r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.mention) {
				t.Fatalf("%s: %s", tc.name, got)
			}
			if len(got) > 16<<10 {
				t.Fatalf("%s: a %d-byte request got a %d-byte reply", tc.name, len(tc.payload), len(got))
			}
		}
		rc.request(t, topic, reply, sendPayload(t, newMessage("still here")))
		if r := decodeRPC(t, rc.next(t, reply).payload); r.Error != nil {
			t.Fatalf("the next request: %+v", r.Error)
		}
	})
}
