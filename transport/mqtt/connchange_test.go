package mqtt

import (
	"context"
	"testing"
	"time"

	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestOnConnectionChangeTellsLossAndReturn: a watch whose broker stops is
// told of the loss once, and of the reconnect once the broker is back;
// Close tells nothing.
func TestOnConnectionChangeTellsLossAndReturn(t *testing.T) {
	type change struct {
		up  bool
		err error
	}
	b := mqtttest.StartEmbedded(t)
	changes := make(chan change, 16)
	w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: b.URL(), ConnectTimeout: 5 * time.Second,
		OnConnectionChange: func(up bool, err error) { changes <- change{up, err} }}, Org: "acme", Unit: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string) change {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case <-time.After(30 * time.Second):
			t.Fatalf("no change told: want %s", what)
		}
		return change{}
	}
	steps := []struct {
		name string
		do   func()
		up   bool
	}{
		{"the broker stops: the loss", b.Stop, false},
		{"the broker is back: the reconnect", b.Restart, true},
	}
	for _, s := range steps {
		s.do()
		if c := next(s.name); c.up != s.up || (c.up && c.err != nil) {
			t.Fatalf("%s: told up=%v err=%v", s.name, c.up, c.err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-changes:
		t.Fatalf("Close told a change: %+v", c)
	default:
	}
}
