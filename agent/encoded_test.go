package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
)

// recordingStore is the Memory store, remembering the last encoding the
// runtime handed it for each task (EncodedWriter).
type recordingStore struct {
	*taskstore.Memory
	mu  sync.Mutex
	enc map[string][]byte
}

func newRecordingStore() *recordingStore {
	return &recordingStore{Memory: taskstore.NewMemory(nil), enc: map[string][]byte{}}
}

func (s *recordingStore) CreateEncoded(ctx context.Context, r taskstore.Record, enc []byte) (taskstore.Record, error) {
	s.mu.Lock()
	s.enc[r.Task.ID] = enc
	s.mu.Unlock()
	return s.Memory.CreateEncoded(ctx, r, enc)
}

func (s *recordingStore) ReplaceTaskEncoded(ctx context.Context, t a2a.Task, enc []byte) error {
	s.mu.Lock()
	s.enc[t.ID] = enc
	s.mu.Unlock()
	return s.Memory.ReplaceTaskEncoded(ctx, t, enc)
}

func (s *recordingStore) stored(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enc[id]
}

// within reports whether inner lies in outer's memory.
func within(inner, outer []byte) bool {
	if len(inner) == 0 || len(outer) < len(inner) {
		return false
	}
	for i := 0; i+len(inner) <= len(outer); i++ {
		if &outer[i] == &inner[0] {
			return true
		}
	}
	return false
}

// TestReplyReusesTheStoredEncoding checks that the reply of a SendMessage
// whose task the runtime encodes once for the store and the reply is byte
// for byte what encoding the reply's task gives (jsonrpc.EncodeResult),
// that the first reply is laid around the stored encoding of a large task
// without copying it when the request id fits the room kept for it (a
// small task's is copied), that encoding the
// reply again gives the same bytes, that the store holds what encoding its
// task gives, and that historyLength still trims the reply.
func TestReplyReusesTheStoredEncoding(t *testing.T) {
	long := strings.Repeat("a line of the request\n", 50_000)
	escaped := strings.Repeat("quote \" backslash \\ tab \t ctl \x01 sep \u2028 é ", 20_000)
	raw := make([]byte, 300_000)
	for i := range raw {
		raw[i] = byte(i * 31)
	}
	n := func(v int32) *int32 { return &v }
	completes := func(context.Context, *Turn) error { return nil }
	uuidID := json.RawMessage(`"6b1f7c8e-3a55-4f0e-9d2a-8c4b1e0f7a93"`)
	longID := json.RawMessage(`"` + strings.Repeat("i", envelopeRoom) + `"`)
	cases := []struct {
		name    string
		id      json.RawMessage
		parts   []a2a.Part
		meta    map[string]any
		history *int32
		now     bool // returnImmediately
		handler HandlerFunc
		// reused says whether the reply must carry the stored encoding,
		// inPlace whether around it, in its buffer.
		reused, inPlace bool
		wantHistory     int
		wantState       a2a.TaskState
	}{
		{"completes at once, 1 MB text", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"a UUID id", uuidID, []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"a number id", json.RawMessage(`12345`), []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"no id: null", nil, []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"a small task: copied", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText("hi")}}, nil, nil, false, completes, true, false, 1, a2a.TaskStateCompleted},
		{"an id longer than the room: copied", longID, []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, false, completes, true, false, 1, a2a.TaskStateCompleted},
		{"escaped text, raw and data parts, metadata", json.RawMessage(`"1"`), []a2a.Part{
			{Content: a2a.PartText(escaped)},
			{Content: a2a.PartRaw(raw), MediaType: "application/octet-stream", Filename: "x.bin"},
			{Content: a2a.PartData{Value: map[string]any{"k": []any{1.0, "two", nil}}}, Metadata: map[string]any{"m": true}},
		}, map[string]any{"trace": "abc", "n": 3.0}, nil, false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"completes with a message and an artifact", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText(escaped)}}, nil, nil, false, func(ctx context.Context, tn *Turn) error {
			if err := tn.Artifact(ctx, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText(tn.Text())}}}, ArtifactOptions{}); err != nil {
				return err
			}
			if err := tn.Working(ctx, "half way \"there\""); err != nil {
				return err
			}
			return tn.Complete(ctx, "done")
		}, true, true, 3, a2a.TaskStateCompleted},
		{"returnImmediately: the created task", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText(long)}}, nil, nil, true, func(ctx context.Context, tn *Turn) error {
			<-ctx.Done()
			return nil
		}, true, true, 1, a2a.TaskStateSubmitted},
		{"historyLength larger than the history", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText(long)}}, nil, n(5), false, completes, true, true, 1, a2a.TaskStateCompleted},
		{"historyLength 0 trims: encoded apart", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText(long)}}, nil, n(0), false, completes, false, false, 0, a2a.TaskStateCompleted},
		{"historyLength 1 of 2 trims: encoded apart", json.RawMessage(`"1"`), []a2a.Part{{Content: a2a.PartText("hi")}}, nil, n(1), false, func(ctx context.Context, tn *Turn) error { return tn.Complete(ctx, "done") }, false, false, 1, a2a.TaskStateCompleted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newRecordingStore()
			s := NewServer(tc.handler, WithStore(store))
			ctx := context.Background()
			msg := &a2a.Message{MessageID: uuidv4.New(), TaskID: uuidv4.New(), Role: a2a.RoleUser, Parts: tc.parts, Metadata: tc.meta}
			p := &a2a.SendMessageRequest{Message: msg}
			if tc.history != nil || tc.now {
				p.Configuration = &a2a.SendMessageConfiguration{HistoryLength: tc.history, ReturnImmediately: tc.now}
			}
			data, err := jsonrpc.EncodeRequest(tc.id, a2a.MethodSendMessage, p)
			if err != nil {
				t.Fatal(err)
			}
			req, _, perr := jsonrpc.DecodeRequest(data)
			if perr != nil {
				t.Fatal(perr)
			}
			var got, again, want, stored []byte
			var reused bool
			sink := SinkFunc(func(_ context.Context, r Reply) error {
				reused = r.task != nil
				stored = store.stored(msg.TaskID)
				if got, err = r.Encode(tc.id, jsonrpc.BindingMQTT); err != nil {
					return err
				}
				if again, err = r.Encode(tc.id, jsonrpc.BindingMQTT); err != nil {
					return err
				}
				want, err = jsonrpc.EncodeResult(tc.id, r.Result)
				return err
			})
			if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if reused != tc.reused {
				t.Errorf("reply carries the stored encoding: %v, want %v", reused, tc.reused)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("reply differs from its task encoded:\n got %.200s\nwant %.200s", got, want)
			}
			if !bytes.Equal(again, want) {
				t.Fatalf("reply encoded again differs:\n got %.200s\nwant %.200s", again, want)
			}
			if inPlace := within(stored, got); inPlace != tc.inPlace {
				t.Errorf("reply laid around the stored encoding: %v, want %v", inPlace, tc.inPlace)
			}
			if within(stored, again) {
				t.Error("the second reply reused the room the first one took")
			}
			resp, err := jsonrpc.DecodeResponse(got, jsonrpc.BindingMQTT)
			if err != nil {
				t.Fatal(err)
			}
			var res a2a.SendMessageResponse
			if err := res.UnmarshalJSON(resp.Result); err != nil {
				t.Fatal(err)
			}
			task, ok := res.Payload.(*a2a.Task)
			if !ok {
				t.Fatalf("reply: %T, want a task", res.Payload)
			}
			if task.Status.State != tc.wantState || len(task.History) != tc.wantHistory {
				t.Fatalf("reply: state %s, %d messages in the history, want %s and %d", task.Status.State, len(task.History), tc.wantState, tc.wantHistory)
			}
			rec, err := store.Get(ctx, msg.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Task.History) == 0 || !reflect.DeepEqual(rec.Task.History[0].Parts, msg.Parts) {
				t.Fatalf("stored task: state %s, history %d messages, not the request's parts", rec.Task.Status.State, len(rec.Task.History))
			}
			enc, err := rec.Task.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if last := store.stored(msg.TaskID); !bytes.Equal(last, enc) {
				t.Fatalf("the store holds\n %.200s\nencoding its task gives\n %.200s", last, enc)
			}
		})
	}
}

// TestTwoCallsWaitingForOneTurn checks the replies of two calls waiting for
// the end of the same turn, the message and its retry with another request
// id: each is its task encoded, one laid around the stored encoding, the
// other a copy (run with -race: the first writes its envelope while the
// second copies the task).
func TestTwoCallsWaitingForOneTurn(t *testing.T) {
	store := newRecordingStore()
	attached := make(chan struct{})
	s := NewServer(HandlerFunc(func(ctx context.Context, tn *Turn) error {
		<-attached
		return nil
	}), WithStore(store))
	ctx := context.Background()
	msg := &a2a.Message{MessageID: uuidv4.New(), TaskID: uuidv4.New(), Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat("two calls, one turn\n", 20_000))}}}
	ids := []json.RawMessage{json.RawMessage(`"first"`), json.RawMessage(`2`)}
	type result struct {
		got, want []byte
		err       error
	}
	results := make([]result, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		data, err := jsonrpc.EncodeRequest(id, a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		req, _, perr := jsonrpc.DecodeRequest(data)
		if perr != nil {
			t.Fatal(perr)
		}
		sink := SinkFunc(func(_ context.Context, r Reply) error {
			res := &results[i]
			if res.got, res.err = r.Encode(id, jsonrpc.BindingMQTT); res.err != nil {
				return res.err
			}
			res.want, res.err = jsonrpc.EncodeResult(id, r.Result)
			return res.err
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
				results[i].err = err
			}
		}()
		if i == 0 {
			// The first call runs the turn; the second is its retry.
			for s.activeRun(msg.TaskID) == nil {
				runtime.Gosched()
			}
		}
	}
	// Both calls are attached once the run has two subscribers.
	r := s.activeRun(msg.TaskID)
	for {
		r.mu.Lock()
		n := len(r.subs)
		r.mu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	close(attached)
	wg.Wait()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	stored := store.stored(msg.TaskID)
	inPlace := 0
	for i, res := range results {
		if res.err != nil {
			t.Fatalf("call %s: %v", ids[i], res.err)
		}
		if !bytes.Equal(res.got, res.want) {
			t.Fatalf("call %s: reply differs from its task encoded:\n got %.200s\nwant %.200s", ids[i], res.got, res.want)
		}
		if within(stored, res.got) {
			inPlace++
		}
	}
	if inPlace != 1 {
		t.Fatalf("%d replies laid around the stored encoding, want 1", inPlace)
	}
}

// BenchmarkServeLargeSendMessage is the responder's share of a round trip
// with a text part of 1 MB, the request decoded once outside the loop (each
// iteration serves a copy with fresh ids): serve it with a handler that
// completes at once (or echoes the text as an artifact, then completes) and
// encode the reply.
func BenchmarkServeLargeSendMessage(b *testing.B) {
	const size = 1_000_000
	line := "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	text := strings.Repeat(line, size/len(line)+1)[:size]
	handlers := []struct {
		name string
		h    HandlerFunc
	}{
		{"completes", func(context.Context, *Turn) error { return nil }},
		{"echoes", func(ctx context.Context, tn *Turn) error {
			return tn.Artifact(ctx, a2a.Artifact{ArtifactID: "echo", Parts: []a2a.Part{{Content: a2a.PartText(tn.Text())}}}, ArtifactOptions{})
		}},
	}
	for _, hc := range handlers {
		b.Run(hc.name+"/1MB", func(b *testing.B) {
			s := NewServer(hc.h)
			defer s.Close(context.Background())
			ctx := context.Background()
			msg := &a2a.Message{MessageID: uuidv4.New(), TaskID: uuidv4.New(), Role: a2a.RoleUser,
				Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
			data, err := jsonrpc.EncodeRequest(json.RawMessage(`"1"`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				b.Fatal(err)
			}
			req, _, perr := jsonrpc.DecodeRequest(data)
			if perr != nil {
				b.Fatal(perr)
			}
			decoded := req.Params.(*a2a.SendMessageRequest)
			var out []byte
			sink := SinkFunc(func(_ context.Context, r Reply) error {
				var err error
				out, err = r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingMQTT)
				return err
			})
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				m := *decoded.Message
				m.MessageID, m.TaskID = uuidv4.New(), uuidv4.New()
				p := *decoded
				p.Message = &m
				if err := s.Serve(ctx, Call{Request: &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: &p}}, sink); err != nil {
					b.Fatal(err)
				}
				if len(out) < size {
					b.Fatalf("reply of %d bytes", len(out))
				}
			}
		})
	}
}

// TestReplyEncodeSizesItsBuffer checks that Reply.Encode makes what
// jsonrpc.EncodeResult makes for results of every kind, in a buffer sized
// from the result: a large one neither grows (the bytes allocated stay
// within 1/32 of the reply's size and 4 KiB) nor keeps more than an eighth
// of its size unused.
func TestReplyEncodeSizesItsBuffer(t *testing.T) {
	text := strings.Repeat("a \"quoted\" line\n", 64_000)
	msg := &a2a.Message{MessageID: "m1", Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg},
		History: []a2a.Message{*msg}, Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText(text)}}}}}
	small := &a2a.Task{ID: "t2", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	results := []struct {
		name string
		v    any
	}{
		{"SendMessageResponse with a task", &a2a.SendMessageResponse{Payload: task}},
		{"SendMessageResponse with a message", &a2a.SendMessageResponse{Payload: msg}},
		{"StreamResponse with a task", &a2a.StreamResponse{Payload: task}},
		{"StreamResponse with a status update", &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: task.Status, Metadata: map[string]any{"k": "v"}}}},
		{"StreamResponse with an artifact update", &a2a.StreamResponse{Payload: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Artifact: &task.Artifacts[0], Append: true, LastChunk: true}}},
		{"a task", task},
		{"a small task", small},
		{"a list of tasks", &a2a.ListTasksResponse{Tasks: []a2a.Task{*task, *small}, NextPageToken: "next", PageSize: 2, TotalSize: 9}},
		{"empty", &a2a.Empty{}},
	}
	id := json.RawMessage(`"7"`)
	for _, r := range results {
		t.Run(r.name, func(t *testing.T) {
			want, err := jsonrpc.EncodeResult(id, r.v)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			alloc := allocatedBy(t, func() {
				got, err = Reply{Result: r.v, Final: true}.Encode(id, jsonrpc.BindingMQTT)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %.200s\nwant %.200s", got, want)
			}
			if n := len(got); n > 64<<10 {
				if alloc > uint64(n+n/32+4096) {
					t.Errorf("%d bytes allocated for a reply of %d", alloc, n)
				}
				if cap(got)-n > n/8 {
					t.Errorf("capacity %d for a reply of %d", cap(got), n)
				}
			}
		})
	}
}

// TestStreamBeginsWithTheStoredEncoding checks that the first item of a
// SendStreamingMessage stream, the task as created, carries the stored
// encoding (laid around it for a large task) unless historyLength trims
// it, and that every item is byte for byte what encoding it gives.
func TestStreamBeginsWithTheStoredEncoding(t *testing.T) {
	long := strings.Repeat("a line \"streamed\"\n", 60_000)
	n := func(v int32) *int32 { return &v }
	cases := []struct {
		name            string
		text            string
		history         *int32
		reused, inPlace bool
	}{
		{"1 MB text", long, nil, true, true},
		{"a small text: copied", "hi", nil, true, false},
		{"historyLength 0: encoded apart", long, n(0), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newRecordingStore()
			s := NewServer(HandlerFunc(func(ctx context.Context, tn *Turn) error { return tn.Complete(ctx, "done") }), WithStore(store))
			ctx := context.Background()
			id := json.RawMessage(`"s1"`)
			msg := &a2a.Message{MessageID: uuidv4.New(), TaskID: uuidv4.New(), Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(tc.text)}}}
			p := &a2a.SendMessageRequest{Message: msg}
			if tc.history != nil {
				p.Configuration = &a2a.SendMessageConfiguration{HistoryLength: tc.history}
			}
			data, err := jsonrpc.EncodeRequest(id, a2a.MethodSendStreamingMessage, p)
			if err != nil {
				t.Fatal(err)
			}
			req, _, perr := jsonrpc.DecodeRequest(data)
			if perr != nil {
				t.Fatal(perr)
			}
			type item struct {
				got, want, stored []byte
				reused            bool
			}
			var items []item
			sink := SinkFunc(func(_ context.Context, r Reply) error {
				it := item{reused: r.task != nil, stored: store.stored(msg.TaskID)}
				var err error
				if it.got, err = r.Encode(id, jsonrpc.BindingMQTT); err != nil {
					return err
				}
				if it.want, err = jsonrpc.EncodeResult(id, r.Result); err != nil {
					return err
				}
				items = append(items, it)
				return nil
			})
			if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if len(items) < 2 {
				t.Fatalf("%d items, want the task and its events", len(items))
			}
			for i, it := range items {
				if !bytes.Equal(it.got, it.want) {
					t.Fatalf("item %d differs from its result encoded:\n got %.200s\nwant %.200s", i, it.got, it.want)
				}
				if i > 0 && it.reused {
					t.Errorf("item %d, an event, carries a task's encoding", i)
				}
			}
			if items[0].reused != tc.reused {
				t.Errorf("the first item carries the stored encoding: %v, want %v", items[0].reused, tc.reused)
			}
			if inPlace := within(items[0].stored, items[0].got); inPlace != tc.inPlace {
				t.Errorf("the first item laid around the stored encoding: %v, want %v", inPlace, tc.inPlace)
			}
		})
	}
}
