package refagent

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
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

// closeCounter is a store that counts its Close calls.
type closeCounter struct {
	*taskstore.Memory
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return c.Memory.Close() }

// TestStartTakesTheStoreOver: a Config.Store keeps the agent's tasks; a
// failed Start closes it, and so does Close, once.
func TestStartTakesTheStoreOver(t *testing.T) {
	ctx := context.Background()
	failing := []Config{
		{ID: "x"}, // no transport
		{ID: "x", HTTP: listen(t), DataDir: t.TempDir()}, // both a Store and a DataDir
		{ID: "x", HTTP: listen(t), Broker: "mqtt://127.0.0.1:1", Org: "o", Unit: "u"},
	}
	for i, c := range failing {
		st := &closeCounter{Memory: taskstore.NewMemory(nil)}
		c.Store = st
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if ra, err := Start(cctx, c); err == nil {
			ra.Close(ctx)
			t.Fatalf("config %d: Start succeeded", i)
		}
		if st.closed != 1 {
			t.Errorf("config %d: the store was closed %d times after a failed Start", i, st.closed)
		}
	}
	st := &closeCounter{Memory: taskstore.NewMemory(nil)}
	ra, err := Start(ctx, Config{ID: "kept", HTTP: listen(t), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: ra.HTTPURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	res, err := c.SendMessage(ctx, requester.TextMessage("hello", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, res.Task.ID); err != nil {
		t.Fatalf("the task is not in the store: %v", err)
	}
	if err := ra.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st.closed != 1 {
		t.Errorf("the store was closed %d times by Close", st.closed)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
