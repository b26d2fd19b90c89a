package http_test

import (
	"io"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/agent"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// The runtime's request limits hold over HTTP too: a body over the
// server's size limit (within the handler's own) is invalid_request, a
// message of too many parts invalid_params, each naming its limit in a
// small reply.
func TestTheRuntimesLimitsHoldOverHTTP(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithMaxRequestBytes(8<<10), agent.WithMaxParts(10))
	cases := []struct {
		name    string
		body    string
		id      string
		code    int
		reason  string
		mention string
	}{
		{"a body over the server's limit", req("SendMessage", sendParams(strings.Repeat("x", 10<<10), "", "")), "null", -32600, "INVALID_REQUEST", "limit of 8192 bytes"},
		{"a message of too many parts", req("SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[`+strings.TrimSuffix(strings.Repeat(`{},`, 2000), ",")+`]}}`),
			"1", -32602, "INVALID_PARAMS", "limit of 10 parts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, a.endpoint, tc.body, nil)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			r := parseResp(t, b, tc.id)
			if r.Err == nil || r.Err.Code != tc.code || r.Err.reason() != tc.reason || !strings.Contains(r.Err.Message, tc.mention) {
				t.Fatalf("%s", b)
			}
			if len(b) > 4<<10 {
				t.Fatalf("a %d-byte request got a %d-byte reply", len(tc.body), len(b))
			}
		})
	}
}
