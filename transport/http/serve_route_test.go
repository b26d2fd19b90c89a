package http_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/a2abind/a2abind/agent"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// Serve routes every request as Register on a ServeMux does, whatever the
// request's target: the endpoint's own path (which Serve hands to the
// handler without the mux's routing), and the card, other paths, unclean
// and escaped ones, absolute-form targets, which go through the mux.
func TestServeRoutesAsTheMux(t *testing.T) {
	srv := agent.NewServer(srvHandler(nil))
	t.Cleanup(func() { srv.Close(context.Background()) })
	listen := func() (net.Listener, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln, ln.Addr().String()
	}
	newHandler := func(endpoint string) *a2ahttp.Handler {
		h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: srvCard("http://"+endpoint+"/a2a", true, false)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(context.Background()) })
		return h
	}
	served, servedAddr := listen()
	go newHandler(servedAddr).Serve(served, "/a2a")
	muxed, muxedAddr := listen()
	mux := http.NewServeMux()
	newHandler(muxedAddr).Register(mux, "/a2a")
	ms := &http.Server{Handler: mux}
	go ms.Serve(muxed)
	t.Cleanup(func() { ms.Close() })

	body := req("SendMessage", `{"message":{"messageId":"route-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`)
	// answer sends one request as written and returns its status line and
	// the headers that say where it went.
	answer := func(addr, method, target string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			method, target, addr, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%s Location=%q Allow=%q Content-Type=%q body=%v", resp.Status, resp.Header.Get("Location"),
			resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), len(b) > 0)
	}
	cases := []struct {
		name, method, target, want string
	}{
		{"the endpoint", "POST", "/a2a", "200 OK"},
		{"the endpoint with a query", "POST", "/a2a?x=1", "200 OK"},
		{"the endpoint, another method", "GET", "/a2a", "405 Method Not Allowed"},
		{"the endpoint in absolute form", "POST", "http://example.com/a2a", "200 OK"},
		{"the endpoint escaped", "POST", "/a%32a", "200 OK"},
		{"the card", "GET", "/.well-known/agent-card.json", "200 OK"},
		{"below the endpoint", "POST", "/a2a/", "404 Not Found"},
		{"an escaped slash", "POST", "/a2a%2F", "404 Not Found"},
		{"another case", "POST", "/A2A", "404 Not Found"},
		{"an unclean path", "POST", "/x/../a2a", "307 Temporary Redirect"},
		{"a double slash", "POST", "//a2a", "307 Temporary Redirect"},
		{"the server itself", "OPTIONS", "*", "200 OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := answer(servedAddr, tc.method, tc.target), answer(muxedAddr, tc.method, tc.target)
			if got != want {
				t.Fatalf("Serve: %s\nmux:   %s", got, want)
			}
			if got[:len(tc.want)] != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}
