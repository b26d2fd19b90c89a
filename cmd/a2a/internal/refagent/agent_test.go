package refagent

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
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

// TestSpawnedCredentials: on a broker that admits each user under its own
// Client ID only (the embedded broker with a password file), the spawned
// instance {id}-c1 needs a user of its own: without SpawnedUsername Start
// is refused, with it a handed-over task is answered by {id}-c1.
func TestSpawnedCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var pw broker.PasswordFile
	for _, u := range []string{"acme/lab/echo", "acme/lab/echo-c1", "acme/lab/req"} {
		if err := pw.Set(u, "pw-"+u, 101); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "passwd")
	if err := pw.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(ctx, broker.Config{PasswordFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Broker: b.URL(), Org: "acme", Unit: "lab", ID: "echo", Username: "acme/lab/echo", Password: []byte("pw-acme/lab/echo")}

	if ra, err := Start(ctx, cfg); err == nil {
		ra.Close(ctx)
		t.Fatal("echo-c1 connected with echo's credentials")
	} else {
		t.Logf("refused: %v", err)
	}
	if n := b.Denials().ClientID; n == 0 {
		t.Fatal("the broker counted no Client ID refusal")
	}

	cfg.SpawnedUsername, cfg.SpawnedPassword = "acme/lab/echo-c1", []byte("pw-acme/lab/echo-c1")
	ra, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close(ctx)
	c, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: a2amqtt.Connection{Broker: b.URL(), Username: "acme/lab/req", Password: []byte("pw-acme/lab/req")},
		Org: "acme", Unit: "lab", ID: "req"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	res, err := c.SendMessage(ctx, requester.TextMessage("handover please", "", ""), requester.To(requester.Target{Agent: "echo"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Responder != "echo-c1" || res.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("handover answered by %q in %s", res.Responder, res.Task.Status.State)
	}
}
