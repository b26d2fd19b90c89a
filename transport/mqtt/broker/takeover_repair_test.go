package broker

import (
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	mqtt "github.com/mochi-mqtt/server/v2"
)

// TestTakeoverRepairsAfterAFastTeardown: the connection taken over can be
// torn down, and served, between the takeover and the new connection's
// OnSessionEstablished, so the new connection finds nothing left to wait
// for; its teardown may still have removed the Client ID from the client
// table (it checks "taken over" before the takeover sets it). The new
// connection must put itself back all the same: it used to skip the repair
// when it had nothing to wait for, and stayed connected but deaf (about
// once in 300 bursts of TestTakeoverBurstLeavesOneLiveSession under -race).
func TestTakeoverRepairsAfterAFastTeardown(t *testing.T) {
	const id = "o/u/fast"
	b := startBroker(t, Config{})
	first := connect(t, b.Addr(), id)
	h := b.takeover
	h.mu.Lock()
	h.beforeEstablished = func(cl *mqtt.Client) {
		// The first connection is served...
		deadline := time.Now().Add(waitLong)
		for {
			if _, conns := h.pending(id); conns == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the connection taken over was not served")
				return
			}
			time.Sleep(time.Millisecond)
		}
		// ...and its teardown removed the Client ID, as it does when it
		// sees itself not taken over yet.
		b.srv.Clients.Delete(id)
	}
	h.mu.Unlock()
	second := connect(t, b.Addr(), id)
	<-first.pc.Done()
	h.mu.Lock()
	h.beforeEstablished = nil
	h.mu.Unlock()

	second.subscribe("fast/topic", 1)
	connect(t, b.Addr(), "o/u/publisher").publish(&paho.Publish{Topic: "fast/topic", QoS: 1, Payload: []byte("hello")})
	second.await("the publish", payloadIs([]byte("hello")))
	if cl, ok := b.srv.Clients.Get(id); !ok || cl.Closed() {
		t.Errorf("the live connection is not in the client table")
	}
}
