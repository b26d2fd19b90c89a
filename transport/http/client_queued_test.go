package http_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// sleepyEndpoint is a handwritten endpoint of an agent that is asleep
// (docs/protocol.md §7): every POST gets the same answer, written by
// answer with the request's JSON-RPC id; GETs (the card lookup) get 404.
// It counts the POSTs.
type sleepyEndpoint struct {
	posts  atomic.Int64
	answer func(w http.ResponseWriter, id string)
}

func (a *sleepyEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	a.posts.Add(1)
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	a.answer(w, string(req.ID))
}

// sleepyBody answers with the offline profile's HTTP shape: a status, a
// Retry-After header when given, and a JSON body that is no JSON-RPC
// envelope.
func sleepyBody(status int, retryAfter, body string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, _ string) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// sleepyRPCError answers with the JSON-RPC shape: HTTP 200 and a JSON-RPC error
// whose data is the A2A v1.0 ErrorInfo array.
func sleepyRPCError(code int, reason, metadata string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, id string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":`+strconv.Itoa(code)+`,"message":"asleep","data":[`+
			`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"`+reason+`","domain":"a2a-protocol.org","metadata":`+metadata+`}]}}`)
	}
}

// TestClientOfflineAnswers: an asleep agent's answers, in both shapes it
// may use, over a real loopback server. A 503 saying the message was
// queued is sent once (never retried by the transport nor the requester)
// and is *requester.Queued, with the wait from its body; a plain 503 is
// still retried; the JSON-RPC shape gives the same *requester.Queued; a
// full queue (507, or 429 for a peer) is asleep_queue_full with its kind.
func TestClientOfflineAnswers(t *testing.T) {
	const retries = 2 // so an answer retried by the transport is sent 3 times
	queuedTo := &requester.Queued{TaskID: "t-1", ContextID: "c-1", RetryAfter: 1800 * time.Second, HasRetryAfter: true, Message: "asleep"}
	cases := []struct {
		name   string
		answer func(http.ResponseWriter, string)
		posts  int64
		queued *requester.Queued
		// otherwise the error holds
		token  a2a.Token
		status int
		kind   offline.QueueFullKind
		plain  bool // a *StatusError, not an offline answer
	}{
		{"503 queued, the body's wait", sleepyBody(503, "1800",
			`{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":1800,"taskId":"t-1","contextId":"c-1"}`),
			1, queuedTo, "", 0, "", false},
		{"503 queued, Retry-After within the retry bound, is still sent once", sleepyBody(503, "1",
			`{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":4,"taskId":"t-1"}`),
			1, &requester.Queued{TaskID: "t-1", RetryAfter: 4 * time.Second, HasRetryAfter: true, Message: "asleep"}, "", 0, "", false},
		{"503 queued, the wait from Retry-After alone", sleepyBody(503, "2",
			`{"error":"agent_asleep","message":"asleep","queued":true,"taskId":"t-1"}`),
			1, &requester.Queued{TaskID: "t-1", RetryAfter: 2 * time.Second, HasRetryAfter: true, Message: "asleep"}, "", 0, "", false},
		{"503 queued, no wait known", sleepyBody(503, "", `{"error":"agent_asleep","message":"asleep","queued":true}`),
			1, &requester.Queued{Message: "asleep"}, "", 0, "", false},
		{"200 JSON-RPC queued", sleepyRPCError(-32003, "AGENT_ASLEEP",
			`{"queued":"true","retryAfterSec":"1800","taskId":"t-1","contextId":"c-1"}`),
			1, queuedTo, "", 0, "", false},
		{"plain 503 without a body is retried", func(w http.ResponseWriter, _ string) { w.WriteHeader(503) },
			1 + retries, nil, "", 0, "", true},
		{"503 asleep, not queued, is retried", sleepyBody(503, "", `{"error":"agent_asleep","message":"asleep","queued":false}`),
			1 + retries, nil, a2a.TokenAgentAsleep, 503, "", false},
		{"507 queue full", sleepyBody(507, "", `{"error":"asleep_queue_full","message":"full","queued":false,"kind":"messages"}`),
			1, nil, a2a.TokenAsleepQueueFull, 507, offline.QueueFullKindMessages, false},
		{"429 queue full for the peer, retried as any 429", sleepyBody(429, "", `{"error":"asleep_queue_full","message":"full","queued":false,"kind":"peer"}`),
			1 + retries, nil, a2a.TokenAsleepQueueFull, 429, offline.QueueFullKindPeer, false},
		{"200 JSON-RPC queue full for the peer", sleepyRPCError(-32004, "ASLEEP_QUEUE_FULL", `{"queued":"false","kind":"peer"}`),
			1, nil, a2a.TokenAsleepQueueFull, 429, offline.QueueFullKindPeer, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ag := &sleepyEndpoint{answer: tc.answer}
			srv := httptest.NewServer(ag)
			t.Cleanup(srv.Close)
			c := cliClient(t, a2ahttp.ClientConfig{URL: srv.URL + "/rpc", MaxRetries: retries,
				RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Second})
			_, err := c.SendMessage(srvCtx(t), text("are you there?"))
			if n := ag.posts.Load(); n != tc.posts {
				t.Fatalf("%d POSTs, want %d (%v)", n, tc.posts, err)
			}
			var q *requester.Queued
			if tc.queued != nil {
				if !errors.As(err, &q) || *q != *tc.queued {
					t.Fatalf("error %#v, want %#v", err, tc.queued)
				}
				if !errors.Is(err, a2a.ErrAgentAsleep) {
					t.Fatalf("%v: want errors.Is ErrAgentAsleep", err)
				}
				return
			}
			if errors.As(err, &q) {
				t.Fatalf("%v read as Queued", err)
			}
			if tc.plain {
				var se *a2ahttp.StatusError
				if !errors.As(err, &se) || se.StatusCode != 503 {
					t.Fatalf("error %v, want a 503 *StatusError", err)
				}
				return
			}
			var e *a2a.Error
			if !errors.As(err, &e) || e.Token != tc.token || e.HTTPStatus != tc.status {
				t.Fatalf("error %v (%+v), want %s with HTTP status %d", err, e, tc.token, tc.status)
			}
			info, _ := tc.token.Info()
			d, ok := jsonrpc.OfflineDetails(e)
			if !ok || d.Kind != tc.kind || d.Queued || e.Code != info.Code {
				t.Fatalf("%+v: details %+v, want kind %q, queued false, code %d", e, d, tc.kind, info.Code)
			}
		})
	}
}

// TestClientQueuedStream: SendStreamingMessage to an asleep agent that
// queued the message ends with *requester.Queued too, after one POST.
func TestClientQueuedStream(t *testing.T) {
	ag := &sleepyEndpoint{answer: sleepyBody(503, "60", `{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":60,"taskId":"t-2"}`)}
	srv := httptest.NewServer(ag)
	t.Cleanup(srv.Close)
	c := cliClient(t, a2ahttp.ClientConfig{URL: srv.URL + "/rpc", RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Minute})
	var err error
	for _, err = range c.SendStreamingMessage(srvCtx(t), text("stream")) {
		if err != nil {
			break
		}
	}
	var q *requester.Queued
	if !errors.As(err, &q) || q.TaskID != "t-2" || q.RetryAfter != time.Minute || ag.posts.Load() != 1 {
		t.Fatalf("error %v after %d POSTs, want Queued as t-2 after one", err, ag.posts.Load())
	}
}

// TestClientOfflineBodyLargerThanThePeek: the retry policy reads at most
// 64 KiB of a 503 to decide; what it read is put back, so the answer the
// caller gets holds the whole body.
func TestClientOfflineBodyLargerThanThePeek(t *testing.T) {
	long := strings.Repeat("z", 100<<10)
	ag := &sleepyEndpoint{answer: sleepyBody(503, "", `{"error":"agent_asleep","message":"`+long+`","queued":false}`)}
	srv := httptest.NewServer(ag)
	t.Cleanup(srv.Close)
	c := cliClient(t, a2ahttp.ClientConfig{URL: srv.URL + "/rpc", MaxRetries: -1})
	_, err := c.SendMessage(srvCtx(t), text("hi"))
	var e *a2a.Error
	if !errors.As(err, &e) || e.Token != a2a.TokenAgentAsleep || len(e.Message) != len(long) || ag.posts.Load() != 1 {
		t.Fatalf("error %.200v, want agent_asleep with the whole message", err)
	}
}
