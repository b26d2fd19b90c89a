package jsonrpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// sendWithParts is a SendMessage request whose message has the given
// parts, joined by commas.
func sendWithParts(method string, part string, n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":"r9","method":"` + method + `","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[` +
		strings.TrimSuffix(strings.Repeat(part+",", n), ",") + `]}}}`)
}

func TestLimitsAnswerEachBoundWithItsError(t *testing.T) {
	l := Limits{MaxRequestBytes: 4096, MaxParts: 10}
	cases := []struct {
		name    string
		in      []byte
		token   a2a.Token // "" for accepted
		echoID  string
		mention string // in the message
	}{
		{"within both bounds", sendWithParts("SendMessage", `{"text":"a"}`, 10), "", `"r9"`, ""},
		{"a payload over the size bound", sendWithParts("SendMessage", `{"text":"a"}`, 400), a2a.TokenInvalidRequest, "", "limit of 4096 bytes"},
		{"a message over the parts bound", sendWithParts("SendMessage", `{"text":"a"}`, 11), a2a.TokenInvalidParams, `"r9"`, "limit of 10 parts"},
		{"a streaming message over the parts bound", sendWithParts("SendStreamingMessage", `{"text":"a"}`, 11), a2a.TokenInvalidParams, `"r9"`, "has 11 parts"},
		{"invalid parts past the bound are counted, not validated", sendWithParts("SendMessage", `{}`, 200), a2a.TokenInvalidParams, `"r9"`, "limit of 10 parts"},
		{"the parts bound concerns messages only", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","parts":[1,2,3,4,5,6,7,8,9,10,11]}}`), "", "1", ""},
		{"not JSON is still a parse error", []byte(`{"jsonrpc":`), a2a.TokenParseError, "", ""},
		{"escaped quotes and backslashes in texts are no bounds of a string", sendWithParts("SendMessage", `{"text":"a\\\"],[\\"}`, 11), a2a.TokenInvalidParams, `"r9"`, "limit of 10 parts"},
		{"a text ending in backslashes, within the bound", sendWithParts("SendMessage", `{"text":"\\\\"}`, 10), "", `"r9"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, id, err := l.DecodeRequest(tc.in)
			if tc.token == "" {
				if err != nil || req == nil || string(id) != tc.echoID {
					t.Fatalf("refused: %v (id %s)", err, id)
				}
				return
			}
			if err == nil || err.Token != tc.token || !strings.Contains(err.Message, tc.mention) || string(id) != tc.echoID {
				t.Fatalf("got %v (id %s), want %s mentioning %q, id %s", err, id, tc.token, tc.mention, tc.echoID)
			}
		})
	}
	// The zero value bounds nothing.
	if _, _, err := (Limits{}).DecodeRequest(sendWithParts("SendMessage", `{"text":"a"}`, 5000)); err != nil {
		t.Fatal(err)
	}
	// The errors carry their figures.
	big := sendWithParts("SendMessage", `{"text":"a"}`, 400)
	_, _, err := l.DecodeRequest(big)
	if d := err.Data.(map[string]any); d["limit"] != 4096 || d["size"] != len(big) {
		t.Fatalf("size error data %v", d)
	}
}

func TestPartsAreCountedWithoutDecoding(t *testing.T) {
	cases := []struct {
		params string
		n      int
		ok     bool
	}{
		{`{"message":{"parts":[]}}`, 0, true},
		{`{"message":{"parts":[{"text":"a,b]"},{"data":{"parts":[1,2,3]}},"x"]}}`, 3, true},
		{` { "configuration" : {"parts":[1,2,3,4]} , "message" : { "metadata":{"a":[[],{}]}, "parts" : [ 1 , 2 ] } } `, 2, true},
		{`{"message":{"par\u0074s":[1,2,3]}}`, 3, true},
		{`{"message":{"parts":[1],"parts":[1,2,3,4]}}`, 4, true},
		{`{"message":{"text":"\"parts\":[1,2,3]"}}`, 0, true},
		{`{"message":"parts"}`, 0, true},
		{`{"message":{"parts":[1,2`, 2, false},
		{`[1]`, 0, false},
	}
	for _, tc := range cases {
		n, ok := partsIn([]byte(tc.params))
		if n != tc.n || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.params, n, ok, tc.n, tc.ok)
		}
	}
}

func TestInvalidParamsListTheFirstViolationsAndCountTheRest(t *testing.T) {
	cases := []struct {
		name            string
		ids             int // invalid referenceTaskIds
		listed, omitted int
		more            string
	}{
		{"a few: every one listed", 3, 3, 0, ""},
		{"exactly the bound", MaxReportedViolations, MaxReportedViolations, 0, ""},
		{"more than the validator records", 5000, MaxReportedViolations, 5000 - MaxReportedViolations, "more; error.data lists the first 20)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"referenceTaskIds":[` +
				strings.TrimSuffix(strings.Repeat("1,", tc.ids), ",") + `]}}}`
			_, _, err := DecodeRequest([]byte(in))
			if err == nil || err.Token != a2a.TokenInvalidParams {
				t.Fatalf("%v", err)
			}
			d := err.Data.(map[string]any)
			if list := d["violations"].([]any); len(list) != tc.listed {
				t.Fatalf("%d listed, want %d", len(list), tc.listed)
			}
			if got, _ := d["omitted"].(int); got != tc.omitted {
				t.Fatalf("omitted %v, want %d", d["omitted"], tc.omitted)
			}
			if !strings.Contains(err.Message, "/message/referenceTaskIds/0: type") || !strings.Contains(err.Message, tc.more) {
				t.Fatalf("message %q", err.Message)
			}
			if tc.omitted > 0 && !strings.Contains(err.Message, fmt.Sprintf("(and %d more", tc.ids-strings.Count(err.Message, "/message/referenceTaskIds/"))) {
				t.Fatalf("message %q does not count the rest", err.Message)
			}
		})
	}
}

// Whatever a request holds, its error reply stays small: at most a few
// KiB, and never much larger than the request.
func TestErrorRepliesStaySmall(t *testing.T) {
	const mib = 1 << 20
	long := strings.Repeat("\u00e9", mib) // two bytes each
	ctrl := strings.Repeat(`\u0001`, mib/8)
	cases := []struct {
		name string
		in   string
	}{
		{"many invalid ids", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"referenceTaskIds":[` + strings.TrimSuffix(strings.Repeat("1,", mib), ",") + `]}}}`},
		{"many invalid parts", string(sendWithParts("SendMessage", `{}`, mib/3))},
		{"a long unknown method", `{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`},
		{"a long invalid role", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"` + long + `","parts":[{"text":"a"}]}}}`},
		{"a role of control characters", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"` + ctrl + `","parts":[{"text":"a"}]}}}`},
		{"long member names in pointers", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[` +
			strings.TrimSuffix(strings.Repeat(`{"text":1,"`+strings.Repeat("k", 4000)+`":0},`, 100), ",") + `]}}}`},
		{"an oversized payload", strings.Repeat(" ", 5*mib) + "{}"},
		{"a small invalid request", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}`},
	}
	l := DefaultLimits()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, id, e := l.DecodeRequest([]byte(tc.in))
			if e == nil {
				t.Fatal("accepted")
			}
			for _, b := range []Binding{BindingMQTT, BindingHTTP} {
				reply, err := EncodeError(id, e, b)
				if err != nil {
					t.Fatal(err)
				}
				if len(reply) > 16<<10 || len(reply) > 2*len(tc.in)+1024 {
					t.Fatalf("binding %d: a %d-byte request got a %d-byte %s reply", b, len(tc.in), len(reply), e.Token)
				}
			}
		})
	}
}

func BenchmarkDecodeManyInvalidParts(b *testing.B) {
	in := sendWithParts("SendMessage", `{}`, 1<<20)
	for _, l := range []struct {
		name string
		l    Limits
	}{{"unbounded", Limits{}}, {"default limits", Limits{MaxParts: DefaultMaxParts}}} {
		b.Run(l.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				l.l.DecodeRequest(in)
			}
		})
	}
}

// BenchmarkInvalidRequestReply decodes a hostile request within the default
// limits and encodes its error reply (MQTT binding); reply-bytes is the
// reply's size. docs/benchmarks.md, "Bounded memory".
func BenchmarkInvalidRequestReply(b *testing.B) {
	cases := []struct {
		name string
		in   []byte
	}{
		{"100k invalid parts", sendWithParts("SendMessage", `{}`, 100_000)},
		{"2M invalid ids", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"referenceTaskIds":[` +
			strings.TrimSuffix(strings.Repeat("1,", 2<<20-100), ",") + `]}}}`)},
	}
	l := DefaultLimits()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var reply []byte
			for b.Loop() {
				_, id, e := l.DecodeRequest(tc.in)
				var err error
				if reply, err = EncodeError(id, e, BindingMQTT); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tc.in)), "request-bytes")
			b.ReportMetric(float64(len(reply)), "reply-bytes")
		})
	}
}
