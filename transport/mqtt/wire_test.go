package mqtt

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestPacketsOnTheWire: what a Client's request and an Agent's reply carry,
// read by a bare subscriber on the broker: the topic, QoS 1, the Response
// Topic, the Correlation Data (the JSON-RPC id's text), the Content Type
// and the user properties, each once.
func TestPacketsOnTheWire(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		seen := make(chan *paho.Publish, 16)
		benchDial(t, b.URL(), "acme/lab/wire-spy", false, func(p *paho.Publish) { seen <- p },
			"$a2a/v1/request/acme/lab/#", "$a2a/v1/reply/acme/lab/#")
		srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }))
		t.Cleanup(func() { srv.Close(context.Background()) })
		cfg := AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "wire", Card: testCard("Wire"), Server: srv}
		if b.Name() == mqtttest.NameEmbedded { // mosquitto 2.0.11 cannot carry pools (pinned in transport/mqtt/mqtttest)
			cfg.Pool = "wp"
		}
		startAgent(t, cfg)
		c := startClient(t, b.URL(), "wire-req")

		for _, tc := range []struct {
			name      string
			target    requester.Target
			opts      []requester.CallOption
			topic     string
			bearer    string // a2a-authorization, "" for none
			responder string // a2a-responder-agent-id of the reply, "" for none
		}{
			{name: "a request to an agent", target: requester.Target{Agent: "wire"}, topic: "$a2a/v1/request/acme/lab/wire"},
			{name: "the same agent again", target: requester.Target{Agent: "wire"}, topic: "$a2a/v1/request/acme/lab/wire"},
			{name: "a request with a bearer token", target: requester.Target{Agent: "wire"}, opts: []requester.CallOption{requester.WithBearer("tok-1")},
				topic: "$a2a/v1/request/acme/lab/wire", bearer: "Bearer tok-1"},
			{name: "a request to a pool", target: requester.Target{Pool: "wp"}, topic: "$a2a/v1/request/acme/lab/pool/wp", responder: "wire"},
			{name: "the agent after the pool", target: requester.Target{Agent: "wire"}, topic: "$a2a/v1/request/acme/lab/wire"},
		} {
			if tc.target.Pool != "" && cfg.Pool == "" {
				continue // no pool on mosquitto 2.0.11
			}
			t.Run(tc.name, func(t *testing.T) {
				ctxID := "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77"
				msg := &a2a.Message{Role: a2a.RoleUser, ContextID: ctxID, Parts: []a2a.Part{{Content: a2a.PartText("wire")}}}
				if _, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg}, append(tc.opts, requester.To(tc.target))...); err != nil {
					t.Fatal(err)
				}
				req, reply := nextPublish(t, seen, "$a2a/v1/request/"), nextPublish(t, seen, "$a2a/v1/reply/")
				var body struct {
					ID     string `json:"id"`
					Params struct {
						Message struct {
							ContextID string `json:"contextId"`
						} `json:"message"`
					} `json:"params"`
				}
				if err := json.Unmarshal(req.Payload, &body); err != nil {
					t.Fatalf("request payload: %v", err)
				}
				rp := req.Properties
				switch {
				case req.Topic != tc.topic:
					t.Errorf("request topic %q, want %q", req.Topic, tc.topic)
				case req.QoS != 1:
					t.Errorf("request QoS %d, want 1", req.QoS)
				case rp == nil || rp.ResponseTopic != c.ReplyTopic():
					t.Errorf("request Response Topic %+v, want %q", rp, c.ReplyTopic())
				case string(rp.CorrelationData) != body.ID || body.ID == "":
					t.Errorf("request Correlation Data %q, JSON-RPC id %q: want the same text", rp.CorrelationData, body.ID)
				case rp.ContentType != "application/json":
					t.Errorf("request Content Type %q", rp.ContentType)
				case body.Params.Message.ContextID != ctxID:
					t.Errorf("request contextId %q, want %q", body.Params.Message.ContextID, ctxID)
				}
				wantUser := []string{mqttbind.PropContextID + "=" + ctxID}
				if tc.bearer != "" {
					wantUser = append(wantUser, mqttbind.PropAuthorization+"="+tc.bearer)
				}
				if got := userList(rp); !slices.Equal(got, wantUser) {
					t.Errorf("request user properties %v, want %v", got, wantUser)
				}
				pp := reply.Properties
				switch {
				case reply.Topic != c.ReplyTopic():
					t.Errorf("reply topic %q, want %q", reply.Topic, c.ReplyTopic())
				case reply.QoS != 1:
					t.Errorf("reply QoS %d, want 1", reply.QoS)
				case pp == nil || string(pp.CorrelationData) != body.ID:
					t.Errorf("reply Correlation Data %+v, want %q", pp, body.ID)
				case pp.ContentType != "application/json":
					t.Errorf("reply Content Type %q", pp.ContentType)
				case pp.ResponseTopic != "":
					t.Errorf("reply Response Topic %q, want none", pp.ResponseTopic)
				}
				var wantReply []string
				if tc.responder != "" {
					wantReply = []string{mqttbind.PropResponderAgentID + "=" + tc.responder}
				}
				if got := userList(pp); !slices.Equal(got, wantReply) {
					t.Errorf("reply user properties %v, want %v", got, wantReply)
				}
			})
		}
	})
}

// nextPublish returns the next publish seen on a topic beginning with
// prefix.
func nextPublish(t *testing.T, seen <-chan *paho.Publish, prefix string) *paho.Publish {
	t.Helper()
	for {
		select {
		case p := <-seen:
			if strings.HasPrefix(p.Topic, prefix) {
				return p
			}
		case <-testCtx(t).Done():
			t.Fatalf("no publish on %s…", prefix)
		}
	}
}

// userList is the user properties of p as key=value, in order.
func userList(p *paho.PublishProperties) []string {
	var out []string
	if p != nil {
		for _, u := range p.User {
			out = append(out, u.Key+"="+u.Value)
		}
	}
	return out
}

// TestIDInPayload: the Correlation Data of a request is read back from
// the payload EncodeRequest wrote; a payload that does not hold the id
// where EncodeRequest puts it gets a copy of the id instead.
func TestIDInPayload(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		name, payload, corr string
		inPayload           bool
	}{
		{"the id where EncodeRequest writes it", `{"jsonrpc":"2.0","id":"abc","method":"SendMessage"}`, "abc", true},
		{"an id longer than the stack buffer", `{"jsonrpc":"2.0","id":"` + long + `","method":"x"}`, long, true},
		{"another id in its place", `{"jsonrpc":"2.0","id":"abd","method":"x"}`, "abc", false},
		{"the id as a prefix of a longer one", `{"jsonrpc":"2.0","id":"abcd","method":"x"}`, "abc", false},
		{"a payload cut short", `{"jsonrpc":"2.0","id":"ab`, "abc", false},
		{"no id", `{"jsonrpc":"2.0","method":"x"}`, "abc", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			payload := []byte(c.payload)
			got := idIn(payload, c.corr)
			if string(got) != c.corr {
				t.Fatalf("idIn = %q, want %q", got, c.corr)
			}
			shared := len(got) > 0 && &got[0] == &payload[requestIDAt]
			if shared != c.inPayload {
				t.Fatalf("read from the payload: %v, want %v", shared, c.inPayload)
			}
			if shared && cap(got) != len(got) {
				t.Fatalf("cap %d > len %d: an append would write over the payload", cap(got), len(got))
			}
		})
	}
}
