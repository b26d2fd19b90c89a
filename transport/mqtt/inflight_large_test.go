package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestSixtyFourRequestsOfOneMegabyteInFlight: 64 requests of 1 MB in
// flight at once, between a bare paho.golang requester and echo responder
// (the floor of bench_test.go, with a longer wait for acknowledgements),
// each answered intact, on both brokers.
// paho.golang stops reading while it writes, so its replies pile up in
// the broker; the embedded broker used to stop reading from a client as
// soon as a write to it blocked, and the two then waited for each other
// until the keep-alive deadline dropped the requester and the replies in
// flight (transport/mqtt/broker, sendbuf.go). The 64 × 1 MB owed to the
// requester are within the broker's MaxPendingBytes (128 MiB).
func TestSixtyFourRequestsOfOneMegabyteInFlight(t *testing.T) {
	const (
		inFlight = 64
		rounds   = 1 // requests per worker: all 64 in flight at once
		size     = 1_000_000
		// wait bounds the whole exchange; running out of it is a lost
		// reply, never a timing assertion. The exchange takes a second or
		// two; under the race detector, which checks every byte of each
		// 1 MB copy, on a loaded machine, 20 s and more.
		wait = 60 * time.Second
	)
	mqtttest.ForEach(t, func(t *testing.T, b mqtttest.Broker) {
		topic := largeEcho(t, b.URL(), wait)
		r := largeRequester(t, b.URL(), wait)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		var wg sync.WaitGroup
		errs := make(chan error, inFlight)
		for w := range inFlight {
			wg.Go(func() {
				for i := range rounds {
					// Each request its own bytes, so a reply given to the
					// wrong request, or cut, shows.
					req := bytes.Repeat([]byte{byte('a' + (w+i)%26)}, size)
					copy(req, fmt.Sprintf("request %d/%d:", w, i))
					got, err := r.call(ctx, topic, req)
					if err != nil {
						errs <- fmt.Errorf("request %d/%d: %w", w, i, err)
						return
					}
					if !bytes.Equal(got, req) {
						errs <- fmt.Errorf("request %d/%d: the reply (%d bytes) is not the request (%d bytes)", w, i, len(got), len(req))
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if failed < 3 {
				t.Error(err)
			}
			failed++
		}
		if failed > 0 {
			t.Errorf("%d of %d requesters did not get all their replies", failed, inFlight)
		}
	})
}

// dialLarge is dialBare (bench_test.go) for a test: paho.golang's wait for
// each acknowledgement (10 s by default) is the test's own bound, so a
// slow run (the race detector, a loaded machine) is not taken for a lost
// message. The connection is closed at cleanup.
func dialLarge(t *testing.T, brokerURL, clientID string, wait time.Duration, onPublish func(*paho.Publish), filter string) *autopaho.ConnectionManager {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		ClientConfig: paho.ClientConfig{ClientID: clientID, PacketTimeout: wait,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				onPublish(pr.Packet)
				return true, nil
			}}}}
	ctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = cm.Disconnect(dctx)
		cancel()
		<-cm.Done()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), wait)
	defer wcancel()
	if err := cm.AwaitConnection(wctx); err != nil {
		t.Fatalf("connect %s: %v", clientID, err)
	}
	if _, err := cm.Subscribe(wctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatalf("subscribe %s: %v", filter, err)
	}
	return cm
}

// largeEcho is rawEcho (bench_test.go) on a dialLarge connection.
func largeEcho(t *testing.T, brokerURL string, wait time.Duration) string {
	t.Helper()
	topic, err := mqttbind.RequestTopic(benchOrg, benchUnit, "large-echo")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var cm *autopaho.ConnectionManager
	ready := make(chan struct{})
	cm = dialLarge(t, brokerURL, benchOrg+"/"+benchUnit+"/large-echo", wait, func(p *paho.Publish) {
		if p.Properties == nil || p.Properties.ResponseTopic == "" {
			return
		}
		<-ready
		wg.Go(func() {
			_, _ = cm.Publish(context.Background(), &paho.Publish{Topic: p.Properties.ResponseTopic, QoS: 1, Payload: p.Payload,
				Properties: &paho.PublishProperties{CorrelationData: p.Properties.CorrelationData}})
		})
	}, topic)
	close(ready)
	t.Cleanup(wg.Wait) // runs before the connection closes
	return topic
}

// largeRequester is newRawRequester (bench_test.go) on a dialLarge
// connection.
func largeRequester(t *testing.T, brokerURL string, wait time.Duration) *rawRequester {
	t.Helper()
	reply, err := mqttbind.ReplyTopic(benchOrg, benchUnit, "large-req", "r1")
	if err != nil {
		t.Fatal(err)
	}
	r := &rawRequester{reply: reply, waiting: map[string]chan []byte{}}
	r.cm = dialLarge(t, brokerURL, benchOrg+"/"+benchUnit+"/large-req", wait, r.onReply, reply)
	return r
}
