package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// headerRecorder is an http.RoundTripper that keeps a copy of each
// request's header map as the client hands it over, then sends it.
type headerRecorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (r *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *headerRecorder) last() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[len(r.headers)-1]
}

// The client's request headers are what Header.Set makes of the
// binding's values (A2A v1.0 §9.1, §3.2.6), key by key, for a plain call,
// one with a bearer token and a stream, each call after another on the
// same client (the values it shares between calls stay as they were).
func TestClientRequestHeaders(t *testing.T) {
	base := cliAgent(t)
	rec := &headerRecorder{}
	c := cliClient(t, a2ahttp.ClientConfig{URL: base, HTTPClient: &http.Client{Transport: rec}})
	ctx := srvCtx(t)
	want := func(accept, bearer string) http.Header {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Accept", accept)
		h.Set("A2A-Version", "1.0")
		if bearer != "" {
			h.Set("Authorization", "Bearer "+bearer)
		}
		return h
	}
	cases := []struct {
		name string
		call func() error
		want http.Header
	}{
		{"SendMessage", func() error {
			_, err := c.SendMessage(ctx, text("hi"))
			return err
		}, want("application/json", "")},
		{"SendMessage with a bearer token", func() error {
			_, err := c.SendMessage(ctx, text("hi"), requester.WithBearer("s3cret"))
			return err
		}, want("application/json", "s3cret")},
		{"SendStreamingMessage", func() error {
			for _, err := range c.SendStreamingMessage(ctx, text("hi")) {
				if err != nil {
					return err
				}
			}
			return nil
		}, want("text/event-stream", "")},
		{"SendMessage again", func() error {
			_, err := c.SendMessage(ctx, text("hi"))
			return err
		}, want("application/json", "")},
		{"SendStreamingMessage with a bearer token", func() error {
			for _, err := range c.SendStreamingMessage(ctx, text("hi"), requester.WithBearer("t0ken")) {
				if err != nil {
					return err
				}
			}
			return nil
		}, want("text/event-stream", "t0ken")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			if got := rec.last(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("headers %v, want %v", got, tc.want)
			}
		})
	}
}

// sizedText returns n bytes of text that tell one call from another: the
// tag, then its letter repeated.
func sizedText(tag string, n int) string {
	return (tag + ":" + strings.Repeat(tag[:1], n))[:n]
}

// Messages of every size, sent at the same time, each come back in their
// own reply: the buffers the client and the server reuse for bodies
// (pooled below 64 KiB, in size classes above) never hand one call's bytes
// to another.
func TestBodiesOfEverySizeAreKeptApart(t *testing.T) {
	base := cliAgent(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: base})
	ctx := srvCtx(t)
	sizes := []struct {
		name string
		n    int
	}{
		{"300 B", 300}, {"10 KB", 10_000}, {"70 KB", 70_000}, {"300 KB", 300_000}, {"1.2 MB", 1_200_000},
	}
	const rounds = 3
	var wg sync.WaitGroup
	errs := make(chan error, rounds*len(sizes)*2)
	for r := range rounds {
		for i, sz := range sizes {
			for k := range 2 {
				tag := string(rune('a'+i)) + fmt.Sprint(r, k)
				want := sizedText(tag, sz.n)
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := c.SendMessage(ctx, text(want))
					if err != nil {
						errs <- fmt.Errorf("%s: %w", sz.name, err)
						return
					}
					if a := res.Task.Artifacts; len(a) != 1 || agentText(a[0].Parts) != want {
						errs <- fmt.Errorf("%s: the echo is not the text sent (%s)", sz.name, tag)
						return
					}
					if h := res.Task.History; len(h) == 0 || agentText(h[0].Parts) != want {
						errs <- fmt.Errorf("%s: the history is not the text sent (%s)", sz.name, tag)
					}
				}()
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// onlyReader hides a reader's length, so that net/http sends its bytes
// chunked, without a Content-Length.
type onlyReader struct{ io.Reader }

// The server reads a body with or without a Content-Length, of any size up
// to its limit, and refuses one past it naming the limit, either way.
func TestServerReadsBodiesOfEverySize(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	body := func(n int) string {
		params, err := json.Marshal(map[string]any{"message": map[string]any{
			"messageId": fmt.Sprint("m-", n), "role": "ROLE_USER", "parts": []any{map[string]any{"text": sizedText("t", n)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return req("SendMessage", string(params))
	}
	cases := []struct {
		name    string
		n       int
		chunked bool
		tooBig  bool
	}{
		{"300 B with its length", 300, false, false},
		{"300 B chunked", 300, true, false},
		{"200 KB with its length", 200_000, false, false},
		{"200 KB chunked", 200_000, true, false},
		{"3 MB chunked", 3_000_000, true, false},
		{"5 MB with its length", 5_000_000, false, true},
		{"5 MB chunked", 5_000_000, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := body(tc.n)
			var r io.Reader = strings.NewReader(b)
			if tc.chunked {
				r = onlyReader{r}
			}
			hr, err := http.NewRequestWithContext(srvCtx(t), http.MethodPost, a.endpoint, r)
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("A2A-Version", "1.0")
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if len(resp.TransferEncoding) > 0 {
				t.Fatalf("reply sent chunked (%v): want a Content-Length", resp.TransferEncoding)
			}
			out, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ContentLength != int64(len(out)) {
				t.Fatalf("Content-Length %d, body %d bytes", resp.ContentLength, len(out))
			}
			if tc.tooBig {
				r := parseResp(t, out, "null")
				if r.Err == nil || r.Err.Code != -32600 || !strings.Contains(r.Err.Message, "limit of 4194304 bytes") {
					t.Fatalf("%.300s", out)
				}
				return
			}
			r2 := parseResp(t, out, "1")
			tk := task(t, r2.Result)
			if tk.Status == nil || tk.Status.State != a2a.TaskStateCompleted || len(tk.Artifacts) != 1 || agentText(tk.Artifacts[0].Parts) != sizedText("t", tc.n) {
				t.Fatalf("the task does not hold the %d-byte echo", tc.n)
			}
		})
	}
}

// Every unary reply goes out with its Content-Length, never chunked,
// whether the handler declares it (larger replies) or net/http does
// (replies that fit its buffer): texts from 500 B to 1.5 KB, echoed twice
// in the reply, put replies on both sides of the line between the two.
func TestUnaryRepliesDeclareTheirLength(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	sizes := 0
	for n := 500; n <= 1500; n += 20 {
		params, err := json.Marshal(map[string]any{"message": map[string]any{
			"messageId": fmt.Sprint("len-", n), "role": "ROLE_USER", "parts": []any{map[string]any{"text": sizedText("t", n)}}}})
		if err != nil {
			t.Fatal(err)
		}
		hr, err := http.NewRequestWithContext(srvCtx(t), http.MethodPost, a.endpoint, strings.NewReader(req("SendMessage", string(params))))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.TransferEncoding) > 0 || resp.ContentLength != int64(len(out)) {
			t.Fatalf("text of %d B: reply of %d B sent with Content-Length %d, Transfer-Encoding %v", n, len(out), resp.ContentLength, resp.TransferEncoding)
		}
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("text of %d B: Content-Type %q", n, resp.Header.Get("Content-Type"))
		}
		if len(out) > 2048 {
			sizes |= 2
		} else {
			sizes |= 1
		}
	}
	if sizes != 3 {
		t.Fatalf("the replies were not on both sides of 2048 bytes (%b)", sizes)
	}
}

// A request read whole leaves its connection open for the next one, with
// or without a Content-Length, small or past what net/http would drain
// after the handler.
func TestServerKeepsTheConnectionAfterABody(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	cases := []struct {
		name    string
		n       int
		chunked bool
	}{
		{"300 B with its length", 300, false},
		{"300 B chunked", 300, true},
		{"300 KB with its length", 300_000, false},
		{"300 KB chunked", 300_000, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params, err := json.Marshal(map[string]any{"message": map[string]any{
				"messageId": fmt.Sprint("keep-", i), "role": "ROLE_USER", "parts": []any{map[string]any{"text": sizedText("k", tc.n)}}}})
			if err != nil {
				t.Fatal(err)
			}
			for call := range 2 {
				var r io.Reader = strings.NewReader(req("SendMessage", string(params)))
				if tc.chunked {
					r = onlyReader{r}
				}
				reused := false
				ctx := httptrace.WithClientTrace(srvCtx(t), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }})
				hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, r)
				if err != nil {
					t.Fatal(err)
				}
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("A2A-Version", "1.0")
				resp, err := hc.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("call %d: %s %v", call, resp.Status, err)
				}
				if call > 0 && !reused {
					t.Fatalf("call %d went on a new connection: the server closed the last one", call)
				}
			}
		})
	}
}

// chunkedTask answers a SendMessage with a completed task whose status
// message holds n bytes of text, written in pieces and flushed, so that
// the reply goes out chunked, without a Content-Length.
func chunkedTask(n int) func(http.ResponseWriter, []byte) {
	return func(w http.ResponseWriter, body []byte) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"`)
		w.(http.Flusher).Flush()
		text := sizedText("r", n)
		for len(text) > 0 {
			k := min(len(text), 50_000)
			io.WriteString(w, text[:k])
			w.(http.Flusher).Flush()
			text = text[k:]
		}
		io.WriteString(w, `"}]}}}}}`)
	}
}

// A reply without a Content-Length (chunked, as many servers send large
// JSON) is read whole at every size up to MaxReplyBytes, and refused past
// it naming the limit.
func TestClientReadsChunkedRepliesOfEverySize(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		maxReply int64
		tooLarge string
	}{
		{"300 B", 300, 0, ""},
		{"100 KB", 100_000, 0, ""},
		{"1.5 MB", 1_500_000, 0, ""},
		{"5 MB", 5_000_000, 0, ""},
		{"1.5 MB past a 1 MiB limit", 1_500_000, 1 << 20, "more than 1048576 bytes"},
		{"100 KB past a 64 KiB limit", 100_000, 64 << 10, "more than 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: []func(http.ResponseWriter, []byte){chunkedTask(tc.n)}}
			c := scriptedClient(t, s, func(cfg *a2ahttp.ClientConfig) { cfg.MaxReplyBytes = tc.maxReply })
			for range 3 {
				res, err := c.SendMessage(srvCtx(t), text("hi"))
				if tc.tooLarge != "" {
					if err == nil || !strings.Contains(err.Error(), tc.tooLarge) {
						t.Fatalf("error %v, want one saying %q", err, tc.tooLarge)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if m := res.Task.Status.Message; m == nil || agentText(m.Parts) != sizedText("r", tc.n) {
					t.Fatalf("the status message does not hold the %d-byte text", tc.n)
				}
			}
		})
	}
}
