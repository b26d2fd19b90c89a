package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
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
