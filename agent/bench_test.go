package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// BenchmarkServeSendMessage is the responder's share of a round trip in
// one process: decode a SendMessage request, serve it with a handler that
// completes at once, encode the reply.
func BenchmarkServeSendMessage(b *testing.B) {
	s := NewServer(HandlerFunc(func(context.Context, *Turn) error { return nil }))
	defer s.Close(context.Background())
	ctx := context.Background()
	var out []byte
	sink := SinkFunc(func(_ context.Context, r Reply) error {
		var err error
		out, err = r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingMQTT)
		return err
	})
	b.ReportAllocs()
	for b.Loop() {
		msg := &a2a.Message{MessageID: uuid.NewString(), TaskID: uuid.NewString(), Role: a2a.RoleUser,
			Parts: []a2a.Part{{Content: a2a.PartText("hello")}}}
		data, err := jsonrpc.EncodeRequest(json.RawMessage(`"1"`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			b.Fatal(err)
		}
		req, _, perr := jsonrpc.DecodeRequest(data)
		if perr != nil {
			b.Fatal(perr)
		}
		if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
			b.Fatal(err)
		}
	}
	if len(out) == 0 {
		b.Fatal("no reply")
	}
}

// BenchmarkServeSmallSendMessage is the responder's fixed cost per call:
// a blocking SendMessage with a text part of 300 B (the request decoded
// once outside the loop; each iteration serves a copy with fresh ids, as
// over MQTT, or without a task id, as over HTTP) that creates a task the
// handler completes at once, its reply encoded by the sink.
func BenchmarkServeSmallSendMessage(b *testing.B) {
	line := "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	text := strings.Repeat(line, 4)[:300]
	bindings := []struct {
		name string
		ids  tasklife.IDOrigin
	}{{"requester-ids", tasklife.RequesterIDs}, {"responder-ids", tasklife.ResponderIDs}}
	for _, bc := range bindings {
		b.Run(bc.name+"/300B", func(b *testing.B) {
			s := NewServer(HandlerFunc(func(context.Context, *Turn) error { return nil }))
			defer s.Close(context.Background())
			ctx := context.Background()
			msg := &a2a.Message{MessageID: uuidv4.New(), Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
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
				out, err = r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingHTTP)
				return err
			})
			b.ReportAllocs()
			for b.Loop() {
				m := *decoded.Message
				m.MessageID = uuidv4.New()
				if bc.ids == tasklife.RequesterIDs {
					m.TaskID = uuidv4.New()
				}
				p := *decoded
				p.Message = &m
				if err := s.Serve(ctx, Call{Request: &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: &p}, IDs: bc.ids}, sink); err != nil {
					b.Fatal(err)
				}
				if len(out) < len(text) {
					b.Fatalf("reply of %d bytes", len(out))
				}
			}
		})
	}
}

// BenchmarkServeResumedSendMessage is the responder's cost of a message
// of 300 B that resumes a task waiting for input (the task asked for it
// when the first message of 300 B created it, outside the timing), which
// the handler then completes at once.
func BenchmarkServeResumedSendMessage(b *testing.B) {
	line := "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	text := strings.Repeat(line, 4)[:300]
	s := NewServer(HandlerFunc(func(ctx context.Context, tn *Turn) error {
		if !tn.Resumed {
			return tn.AskInput(ctx, "which depot?")
		}
		return nil
	}))
	defer s.Close(context.Background())
	ctx := context.Background()
	var out []byte
	sink := SinkFunc(func(_ context.Context, r Reply) error {
		var err error
		out, err = r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingMQTT)
		return err
	})
	serve := func(taskID, contextID string) {
		m := &a2a.Message{MessageID: uuidv4.New(), TaskID: taskID, ContextID: contextID, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
		req := &jsonrpc.Request{ID: json.RawMessage(`"1"`), Method: a2a.MethodSendMessage, Params: &a2a.SendMessageRequest{Message: m}}
		if err := s.Serve(ctx, Call{Request: req, IDs: tasklife.RequesterIDs}, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		taskID, contextID := uuidv4.New(), uuidv4.New()
		serve(taskID, contextID)
		b.StartTimer()
		serve(taskID, contextID)
		if len(out) < 2*len(text) {
			b.Fatalf("reply of %d bytes", len(out))
		}
	}
}
