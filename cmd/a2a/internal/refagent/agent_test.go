package refagent

import (
	"context"
	"net"
	"testing"
)

func TestEndpointURL(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"127.0.0.1:8080", "http://127.0.0.1:8080/a2a"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/a2a"},
		{"[::]:8080", "http://127.0.0.1:8080/a2a"},
		{":8080", "http://127.0.0.1:8080/a2a"},
		{"[::1]:8080", "http://[::1]:8080/a2a"},
		{"192.0.2.7:80", "http://192.0.2.7:80/a2a"},
	}
	for _, tc := range cases {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := EndpointURL(addr); got != tc.want {
			t.Errorf("EndpointURL(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

func TestStartNeedsATransport(t *testing.T) {
	if _, err := Start(context.Background(), Config{ID: "x"}); err == nil {
		t.Fatal("Start with neither a broker nor a listener succeeded")
	}
}

// TestStartClosesTheListenerOnFailure: a failed Start (here: a broker
// nothing listens on) leaves no listener open.
func TestStartClosesTheListenerOnFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{Broker: "mqtt://127.0.0.1:1", Org: "o", Unit: "u", ID: "x", HTTP: ln}); err == nil {
		t.Fatal("Start succeeded without a broker")
	}
	// The address is free again only when the listener was closed.
	again, err := net.Listen("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the listener is still open: %v", err)
	}
	again.Close()
}
