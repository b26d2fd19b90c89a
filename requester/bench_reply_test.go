package requester

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
)

// benchReply returns the reply to a SendMessage whose text part has n
// bytes, as an agent answers it: the completed task, its history holding
// the message (the text of transport/mqtt's size benchmarks: words, a
// newline, which JSON escapes, every 100 bytes or so).
func benchReply(b *testing.B, n int) []byte {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	text := strings.Repeat(line, n/len(line)+1)[:n]
	task := &a2a.Task{ID: "0b5e7c8e-4a4f-4c39-9a51-0d1f7e0c7a11", ContextID: "c-1",
		Status:  &a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2026-01-02T10:00:00Z"},
		History: []a2a.Message{{MessageID: "m-1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}}}
	out, err := jsonrpc.EncodeResult([]byte(`"req-1"`), &a2a.SendMessageResponse{Payload: task})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a2a.ParseJSONRPCResponseJSON(out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkDecodeReply decodes the reply to a SendMessage with a text
// part of 300 B, 10 KB and 1 MB as the Client does (decodeReply, on the
// transport's goroutine): "one-pass" reads the envelope and the result
// together (jsonrpc.DecodeResult), "two-pass" is the decode of the
// envelope, which copies the result out of it, then of the result. Run
// with -benchmem: the bytes and allocations per reply are the figures to
// compare.
func BenchmarkDecodeReply(b *testing.B) {
	twoPass := decodeSendMessageResponse
	twoPass.inPlace = func([]byte, []string) (*jsonrpc.Response, any, bool) { return nil, nil, false }
	for _, sz := range []struct {
		name string
		n    int
	}{{"300B", 300}, {"10KB", 10_000}, {"1MB", 1_000_000}} {
		payload := benchReply(b, sz.n)
		for _, c := range []struct {
			name string
			dec  resultDecoder
		}{{"one-pass", decodeSendMessageResponse}, {"two-pass", twoPass}} {
			b.Run(sz.name+"/"+c.name, func(b *testing.B) {
				ex := &exchange{c: &Client{log: slog.New(slog.DiscardHandler)}, decode: c.dec, errors: jsonrpc.BindingMQTT}
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					in := ex.decodeReply(&Reply{Payload: payload})
					if in.value == nil || in.valueErr != nil || in.taskID == "" {
						b.Fatalf("reply not read: %v %v", in.envErr, in.valueErr)
					}
				}
			})
		}
	}
}
