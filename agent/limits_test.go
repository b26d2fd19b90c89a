package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

func TestTextOfJoinsTheTextPartsInOrder(t *testing.T) {
	text := func(s string) a2a.Part { return a2a.Part{Content: a2a.PartText(s)} }
	data := a2a.Part{Content: a2a.PartData{Value: map[string]any{"k": 1}}}
	many := make([]a2a.Part, 100_000)
	var want strings.Builder
	for i := range many {
		many[i] = text(string(rune('a' + i%26)))
		if i > 0 {
			want.WriteByte('\n')
		}
		want.WriteRune(rune('a' + i%26))
	}
	cases := []struct {
		name  string
		parts []a2a.Part
		want  string
	}{
		{"no parts", nil, ""},
		{"no text", []a2a.Part{data}, ""},
		{"one text", []a2a.Part{data, text("hi")}, "hi"},
		{"texts around data", []a2a.Part{text("a"), data, text("b"), text("c")}, "a\nb\nc"},
		{"empty texts first add nothing", []a2a.Part{text(""), text(""), text("a"), text(""), text("b")}, "a\n\nb"},
		{"a hundred thousand parts", many, want.String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TextOf(&a2a.Message{Parts: tc.parts}); got != tc.want {
				t.Fatalf("got %.40q (%d bytes), want %.40q (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
		})
	}
	t.Run("no message", func(t *testing.T) {
		if got := TextOf(nil); got != "" {
			t.Fatalf("TextOf(nil) = %q", got)
		}
	})
}

func BenchmarkTextOf100kParts(b *testing.B) {
	m := &a2a.Message{Parts: make([]a2a.Part, 100_000)}
	for i := range m.Parts {
		m.Parts[i] = a2a.Part{Content: a2a.PartText("twelve bytes")}
	}
	for b.Loop() {
		TextOf(m)
	}
}

func TestEachRequestLimitIsAnsweredWithItsError(t *testing.T) {
	f := newFixture(t, echo(nil), WithMaxRequestBytes(2000), WithMaxParts(3))
	parts := func(n int) []a2a.Part {
		p := make([]a2a.Part, n)
		for i := range p {
			p[i] = a2a.Part{Content: a2a.PartText("x")}
		}
		return p
	}
	withParts := func(n int, text string) *a2a.Message {
		m := msg(uuid.NewString(), uuid.NewString(), text)
		m.Parts = append(m.Parts, parts(n-1)...)
		return m
	}
	cases := []struct {
		name    string
		m       *a2a.Message
		token   a2a.Token
		mention string
	}{
		{"at both limits", withParts(3, "hi"), "", ""},
		{"one part too many", withParts(4, "hi"), a2a.TokenInvalidParams, "limit of 3 parts"},
		{"a payload too large", withParts(1, strings.Repeat("x", 2000)), a2a.TokenInvalidRequest, "limit of 2000 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			replies := f.send(tc.m)
			if tc.token == "" {
				if task := taskOf(t, replies[0]); task.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("%+v", task)
				}
				return
			}
			if e := soleError(t, replies); e.Token != tc.token || !strings.Contains(e.Message, tc.mention) {
				t.Fatalf("got %v, want %s mentioning %q", e, tc.token, tc.mention)
			}
		})
	}
	// A transport that decoded without the limits still has the parts
	// bound applied by Serve.
	data, _ := jsonrpc.EncodeRequest(json.RawMessage(`1`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: withParts(50, "hi")})
	req, _, perr := jsonrpc.DecodeRequest(data)
	if perr != nil {
		t.Fatal(perr)
	}
	rec := &recorder{}
	if err := f.srv.Serve(context.Background(), Call{Request: req, IDs: tasklife.RequesterIDs}, rec); err != nil {
		t.Fatal(err)
	}
	if e := soleError(t, rec.all()); e.Token != a2a.TokenInvalidParams || !strings.Contains(e.Message, "has 50 parts") {
		t.Fatal(e)
	}
	// The defaults.
	if l := NewServer(echo(nil)).Limits(); l != jsonrpc.DefaultLimits() || l.MaxRequestBytes != 4<<20 || l.MaxParts != 1000 {
		t.Fatalf("default limits %+v", l)
	}
}

// A store at its bound with nothing finished to evict refuses a new task
// with responder_unavailable, which requesters retry; once a task
// finishes there is room again.
func TestAFullStoreAnswersResponderUnavailable(t *testing.T) {
	st := taskstore.NewMemory(nil, taskstore.MaxTasks(2))
	f := newFixture(t, echo(nil), WithStore(st))
	waiting := []string{uuid.NewString(), uuid.NewString()}
	ctxID := uuid.NewString()
	for _, id := range waiting {
		if task := taskOf(t, f.send(msg(id, ctxID, "ask"))[0]); task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("%+v", task)
		}
	}
	e := soleError(t, f.send(msg(uuid.NewString(), ctxID, "one more")))
	if e.Token != a2a.TokenResponderUnavailable || !e.Retryable() || !strings.Contains(e.Message, "2 tasks") {
		t.Fatalf("a third task in a store of two: %v", e)
	}
	// Answering one finishes it: the next new task evicts it.
	if task := taskOf(t, f.send(msg(waiting[0], ctxID, "that one"))[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v", task)
	}
	if task := taskOf(t, f.send(msg(uuid.NewString(), ctxID, "one more"))[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v", task)
	}
}

// A task left waiting for input past the idle expiry is gone: a message to
// it, or a new task in its context, is answered context_expired (over
// both bindings), GetTask task_not_found. The clock is injected: nothing
// sleeps.
func TestATaskLeftWaitingExpires(t *testing.T) {
	for name, ids := range map[string]tasklife.IDOrigin{"MQTT ids": tasklife.RequesterIDs, "HTTP ids": tasklife.ResponderIDs} {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			f := newFixture(t, echo(nil), WithClock(clock), WithContextTTL(time.Hour))
			f.ids = ids
			first := msg("", "", "ask")
			if ids == tasklife.RequesterIDs {
				first.TaskID, first.ContextID = uuid.NewString(), uuid.NewString()
			}
			task := taskOf(t, f.send(first)[0])
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("%+v", task)
			}
			mu.Lock()
			now = now.Add(time.Hour + time.Second)
			mu.Unlock()

			e := soleError(t, f.send(msg(task.ID, task.ContextID, "the answer, late")))
			if e.Token != a2a.TokenContextExpired || !strings.Contains(e.Message, "task "+task.ID+" expired at 2026-11-29T11:00:00Z") {
				t.Fatalf("a message to the expired task: %v", e)
			}
			if e := soleError(t, f.send(msg(newTaskID(ids), task.ContextID, "a new turn"))); e.Token != a2a.TokenContextExpired {
				t.Fatalf("a new task in the expired context: %v", e)
			}
			if e := soleError(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: task.ID})); e.Token != a2a.TokenTaskNotFound {
				t.Fatalf("GetTask of the expired task: %v", e)
			}
			if _, err := f.srv.Store().Get(context.Background(), task.ID); !errors.Is(err, taskstore.ErrExpired) {
				t.Fatalf("store: %v", err)
			}
		})
	}
}

func newTaskID(ids tasklife.IDOrigin) string {
	if ids == tasklife.RequesterIDs {
		return uuid.NewString()
	}
	return ""
}

// A task waiting for input within the expiry resumes; the default expiry is
// a day.
func TestATaskWaitingWithinTheExpiryResumes(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFixture(t, echo(nil), WithClock(clock))
	if f.srv.ContextTTL() != 24*time.Hour {
		t.Fatalf("default expiry %v", f.srv.ContextTTL())
	}
	id, ctxID := uuid.NewString(), uuid.NewString()
	f.send(msg(id, ctxID, "ask"))
	mu.Lock()
	now = now.Add(23 * time.Hour)
	mu.Unlock()
	if task := taskOf(t, f.send(msg(id, ctxID, "this one"))[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v", task)
	}
}

func TestTheCardPublishesTheLimits(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want map[string]any
	}{
		{"defaults", nil, map[string]any{"maxRequestBytes": 4194304.0, "maxMessageParts": 1000.0, "idleExpirySeconds": 86400.0}},
		{"options", []Option{WithMaxRequestBytes(1 << 20), WithMaxParts(20), WithContextTTL(time.Hour)},
			map[string]any{"maxRequestBytes": 1048576.0, "maxMessageParts": 20.0, "idleExpirySeconds": 3600.0}},
		{"contexts never expire", []Option{WithContextTTL(0)}, map[string]any{"maxRequestBytes": 4194304.0, "maxMessageParts": 1000.0, "idleExpirySeconds": 0.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(echo(nil), tc.opts...)
			card := &a2a.AgentCard{Name: "a", Description: "d", Version: "1",
				SupportedInterfaces: []a2a.AgentInterface{{URL: "mqtt://h:1883", ProtocolBinding: agentcard.BindingMQTT, ProtocolVersion: agentcard.ProtocolVersion}},
				DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
				Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "s", Tags: []string{"t"}}}}
			s.PublishLimits(card)
			s.PublishLimits(card) // replaces, does not repeat
			if err := card.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := card.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			back, err := a2a.ParseAgentCardJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			exts := back.Capabilities.Extensions
			if len(exts) != 1 || exts[0].URI != LimitsExtensionURI || exts[0].Required {
				t.Fatalf("%+v", exts)
			}
			for k, v := range tc.want {
				if exts[0].Params[k] != v {
					t.Errorf("%s = %v, want %v", k, exts[0].Params[k], v)
				}
			}
		})
	}
}
