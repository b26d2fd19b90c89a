package mqtt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

func TestAgentAnswersOnTheReplyPath(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		srv := echoServer(t)
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "echo", Card: testCard("Echo"), Server: srv, Pool: "p1"})
		replyTopic := "$a2a/v1/reply/acme/lab/req/" + uuid.NewString()
		rc := dialRaw(t, b.URL(), "acme/lab/req", replyTopic)
		direct := "$a2a/v1/request/acme/lab/echo"

		t.Run("a SendMessage gets one reply with the Correlation Data echoed", func(t *testing.T) {
			m := newMessage("hello")
			corr := rc.request(t, direct, replyTopic, sendPayload(t, m))
			got := rc.next(t, replyTopic)
			if !bytes.Equal(got.corr, corr) {
				t.Fatalf("correlation %q, want %q", got.corr, corr)
			}
			var resp a2a.SendMessageResponse
			if err := json.Unmarshal(decodeRPC(t, got.payload).Result, &resp); err != nil {
				t.Fatal(err)
			}
			task := resp.Payload.(*a2a.Task)
			if task.ID != m.TaskID || task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%+v", task.Status)
			}
			if len(got.props[mqttbind.PropResponderAgentID]) != 0 {
				t.Fatal("a direct reply carries a2a-responder-agent-id without a handover")
			}
		})

		if b.Name() == mqtttest.NameEmbedded { // mosquitto 2.0.11 cannot carry pools (pinned in transport/mqtt/mqtttest)
			t.Run("a pooled reply names its responder", func(t *testing.T) {
				rc.request(t, "$a2a/v1/request/acme/lab/pool/p1", replyTopic, sendPayload(t, newMessage("pooled")))
				got := rc.next(t, replyTopic)
				if r := got.props[mqttbind.PropResponderAgentID]; len(r) != 1 || r[0] != "echo" {
					t.Fatalf("responder %v", r)
				}
			})
		}

		cases := []struct {
			name    string
			payload []byte
			user    []string
			code    int
			token   string
			says    string // in the error message, when set
		}{
			{"malformed JSON", []byte(`{"jsonrpc":`), nil, -32700, "", ""},
			{"unknown method", []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`), nil, -32601, "", ""},
			{"missing taskId", sendPayload(t, &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("x")}}}), nil, -32602, "", ""},
			{"taskId not a UUID", sendPayload(t, &a2a.Message{MessageID: "m", TaskID: "t-1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("x")}}}), nil, -32602, "", ""},
			{"a2a-context-id differing from the payload", sendPayload(t, newMessage("x")), []string{mqttbind.PropContextID, uuid.NewString()}, -32005, "transport_protocol_error", ""},
			{"malformed a2a-* property", sendPayload(t, newMessage("x")), []string{mqttbind.PropArtifactMode, "xml"}, -32005, "transport_protocol_error", ""},
			{"a known a2a-* property given twice", sendPayload(t, newMessage("x")), []string{mqttbind.PropArtifactMode, mqttbind.ArtifactModeJSON, mqttbind.PropArtifactMode, mqttbind.ArtifactModeJSON}, -32005, "transport_protocol_error", "more than once"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				corr := rc.request(t, direct, replyTopic, tc.payload, tc.user...)
				got := rc.next(t, replyTopic)
				if !bytes.Equal(got.corr, corr) {
					t.Fatal("error reply without the request's Correlation Data")
				}
				r := decodeRPC(t, got.payload)
				if r.Error == nil || r.Error.Code != tc.code {
					t.Fatalf("got %s, want code %d", got.payload, tc.code)
				}
				if tc.token != "" && !strings.Contains(string(r.Error.Data), `"a2a_error":"`+tc.token+`"`) {
					t.Fatalf("data %s, want a2a_error %s", r.Error.Data, tc.token)
				}
				if !strings.Contains(r.Error.Message, tc.says) {
					t.Fatalf("message %q, want it to say %q", r.Error.Message, tc.says)
				}
			})
		}
	})
}

func TestAgentNeverEchoesTheBearerToken(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var seen atomic.Value
		verifier := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
			seen.Store(token)
			if token != "good-token" {
				return agent.Caller{}, a2a.NewError(a2a.TokenUnauthenticated, "")
			}
			return agent.Caller{Subject: "alice"}, nil
		})
		srv := echoServer(t, agent.WithVerifier(verifier))
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "vault", Card: testCard("Vault"), Server: srv})
		replyTopic := "$a2a/v1/reply/acme/lab/req/" + uuid.NewString()
		rc := dialRaw(t, b.URL(), "acme/lab/req2", replyTopic)

		for _, tc := range []struct {
			name  string
			token string
			code  int
		}{
			{"no token", "", -31401},
			{"wrong token", "Bearer bad-token", -31401},
			{"good token", "Bearer good-token", 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rc.request(t, "$a2a/v1/request/acme/lab/vault", replyTopic, sendPayload(t, newMessage("secret")), mqttbind.PropAuthorization, tc.token)
				got := rc.next(t, replyTopic)
				r := decodeRPC(t, got.payload)
				if tc.code == 0 && r.Error != nil || tc.code != 0 && (r.Error == nil || r.Error.Code != tc.code) {
					t.Fatalf("%s", got.payload)
				}
				if strings.Contains(string(got.payload), "good-token") || strings.Contains(string(got.payload), "bad-token") {
					t.Fatalf("token echoed in %s", got.payload)
				}
				if len(got.props[mqttbind.PropAuthorization]) != 0 {
					t.Fatal("token echoed as a property")
				}
			})
		}
		if seen.Load() != "good-token" {
			t.Fatalf("verifier saw %q", seen)
		}
	})
}

func TestAgentPresenceLifecycle(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		rc := dialRaw(t, b.URL(), "acme/lab/watcher", "$a2a/v1/discovery/acme/lab/+")
		topic := "$a2a/v1/discovery/acme/lab/b"
		status := func(m message) string {
			return strings.Join(m.props[mqttbind.PropStatus], ",") + "/" + strings.Join(m.props[mqttbind.PropStatusSource], ",")
		}
		// QoS 1 allows a duplicate delivery: a message identical to the one
		// before it is skipped.
		var last message
		next := func() message {
			for {
				m := rc.next(t, topic)
				if string(m.payload) == string(last.payload) && status(m) == status(last) && m.topic == last.topic {
					continue
				}
				last = m
				return m
			}
		}

		srv := echoServer(t)
		a, err := NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		if m := next(); status(m) != "online/agent" {
			t.Fatalf("after connect: %s", status(m))
		}
		card := testCard("B v2")
		if err := a.UpdateCard(testCtx(t), card); err != nil {
			t.Fatal(err)
		}
		if m := next(); status(m) != "online/agent" || !strings.Contains(string(m.payload), "B v2") {
			t.Fatalf("after update: %s %s", status(m), m.payload)
		}
		if err := a.Close(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if m := next(); status(m) != "offline/agent" {
			t.Fatalf("after a graceful stop: %s", status(m))
		}

		// Reconnect, then crash: the Will carries the card as of CONNECT.
		a, err = NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "b", Card: card, Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		if m := next(); status(m) != "online/agent" {
			t.Fatalf("after reconnect: %s", status(m))
		}
		a.Kill()
		if m := next(); status(m) != "offline/lwt" || !strings.Contains(string(m.payload), "B v2") {
			t.Fatalf("after a crash: %s %s", status(m), m.payload)
		}

		// Unregister clears the retained card.
		a, err = NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "b", Card: card, Server: srv})
		if err != nil {
			t.Fatal(err)
		}
		next()
		if err := a.Unregister(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if m := next(); len(m.payload) != 0 {
			t.Fatalf("unregister published %s", m.payload)
		}
		if err := a.Close(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		late := dialRaw(t, b.URL(), "acme/lab/late", "$a2a/v1/discovery/acme/lab/+")
		select {
		case m := <-late.msgs:
			t.Fatalf("a retained card survived Unregister: %s %s", m.topic, m.payload)
		default:
		}
	})
}

func TestAgentConfigErrors(t *testing.T) {
	srv := echoServer(t)
	cases := []struct {
		name string
		cfg  AgentConfig
		want error
	}{
		{"identifier with a slash", AgentConfig{Connection: Connection{Broker: "mqtt://127.0.0.1:1"}, Org: "a/b", Unit: "u", ID: "x", Server: srv}, new(mqttbind.IdentifierError)},
		{"identifier with a wildcard", AgentConfig{Connection: Connection{Broker: "mqtt://127.0.0.1:1"}, Org: "a", Unit: "+", ID: "x", Server: srv}, new(mqttbind.IdentifierError)},
		{"empty identifier", AgentConfig{Connection: Connection{Broker: "mqtt://127.0.0.1:1"}, Org: "a", Unit: "u", ID: "", Server: srv}, new(mqttbind.IdentifierError)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewAgent(testCtx(t), tc.cfg)
			var ie *mqttbind.IdentifierError
			if !errors.As(err, &ie) {
				t.Fatalf("%v", err)
			}
		})
	}
	t.Run("unreachable broker", func(t *testing.T) {
		cfg := AgentConfig{Connection: Connection{Broker: "mqtt://127.0.0.1:1", ConnectTimeout: 500 * 1e6}, Org: "a", Unit: "u", ID: "x", Server: srv}
		if _, err := NewAgent(testCtx(t), cfg); !errors.Is(err, ErrBrokerUnreachable) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("bad broker URL", func(t *testing.T) {
		if _, err := NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: "http://x"}, Org: "a", Unit: "u", ID: "x", Server: srv}); err == nil {
			t.Fatal("http:// accepted")
		}
	})
}

// TestCloseThenReconnectNeverFiresTheWill: an agent closed normally and
// started again at once, with the same client id, ten times over: the
// broker sees each DISCONNECT before the next CONNECT takes the session
// over (Close waits for the broker to close the connection), so no Will
// is ever published and the card goes offline/agent, online/agent in
// turn. A broker serving each connection on its own goroutine (the
// embedded one) published the Will of a client that had left normally
// when the new connection came first.
func TestCloseThenReconnectNeverFiresTheWill(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		rc := dialRaw(t, b.URL(), "acme/lab/watcher", "$a2a/v1/discovery/acme/lab/+")
		topic := "$a2a/v1/discovery/acme/lab/w"
		srv := echoServer(t)
		var last string
		expect := func(want string) {
			t.Helper()
			for {
				m := rc.next(t, topic)
				got := strings.Join(m.props[mqttbind.PropStatus], ",") + "/" + strings.Join(m.props[mqttbind.PropStatusSource], ",")
				if got == last {
					continue // a QoS 1 duplicate
				}
				last = got
				if got != want {
					t.Fatalf("card published %s, want %s", got, want)
				}
				return
			}
		}
		for i := range 10 {
			a, err := NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "w", Card: testCard("W"), Server: srv})
			if err != nil {
				t.Fatalf("start %d: %v", i, err)
			}
			expect("online/agent")
			if err := a.Close(testCtx(t)); err != nil {
				t.Fatalf("close %d: %v", i, err)
			}
			expect("offline/agent")
		}
	})
}
