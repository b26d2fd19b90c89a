package broker

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// The tests of the write side (sendbuf.go): a client that does not read
// holds up no one else, is disconnected with 0x97 once it leaves more than
// MaxPendingBytes unread, and loses nothing its session keeps.

const (
	// floodCount and floodSize make a flood of QoS 1 messages well past
	// what the TCP buffers of a loopback connection hold (a few MB).
	floodCount = 200
	floodSize  = 64 << 10
	// floodWait bounds a wait the broker used to block forever; running
	// out of it is a failure, never a timing assertion.
	floodWait = 20 * time.Second
)

// floodPayload is message i of a flood: its number, then filler.
func floodPayload(i int) []byte {
	p := make([]byte, floodSize)
	binary.BigEndian.PutUint32(p, uint32(i))
	return p
}

// floodIndex is the number of a flood message (-1 for another payload).
func floodIndex(p []byte) int {
	if len(p) != floodSize {
		return -1
	}
	return int(binary.BigEndian.Uint32(p))
}

// dialStuck connects a bare client with no keep-alive (so no deadline ever ends the broker's writes to it),
// subscribes it to filter at QoS 1, and leaves it not reading; expiry is
// its Session Expiry Interval in seconds (0: the session ends with the
// connection).
func dialStuck(t *testing.T, addr, id, filter string, expiry uint32) *rawConn {
	t.Helper()
	c := dialRaw(t, addr)
	cp := packets.NewControlPacket(packets.CONNECT)
	conn := cp.Content.(*packets.Connect)
	conn.ClientID, conn.KeepAlive, conn.CleanStart = id, 0, true
	if expiry > 0 {
		conn.Properties = &packets.Properties{SessionExpiryInterval: &expiry}
	}
	c.write(cp)
	if ca, ok := c.read().Content.(*packets.Connack); !ok || ca.ReasonCode != 0 {
		t.Fatalf("%s: want CONNACK 0, got %+v", id, ca)
	}
	sp := packets.NewControlPacket(packets.SUBSCRIBE)
	sub := sp.Content.(*packets.Subscribe)
	sub.PacketID = 1
	sub.Subscriptions = []packets.SubOptions{{Topic: filter, QoS: 1}}
	c.write(sp)
	if sa, ok := c.read().Content.(*packets.Suback); !ok || len(sa.Reasons) != 1 || sa.Reasons[0] != 1 {
		t.Fatalf("%s: want SUBACK 1, got %+v", id, sa)
	}
	return c
}

// flood publishes floodCount QoS 1 messages to topic and fails unless each
// is acknowledged with success within floodWait.
func flood(t *testing.T, pub *client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), floodWait)
	defer cancel()
	for i := range floodCount {
		resp, err := pub.pc.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: floodPayload(i)})
		if err != nil {
			t.Fatalf("publish %d of %d: %v (the publisher waits for a subscriber that does not read)", i, floodCount, err)
		}
		if resp.ReasonCode != 0 {
			t.Fatalf("publish %d: PUBACK %#x, want success", i, resp.ReasonCode)
		}
	}
}

// awaitPendingDenial waits until the broker has disconnected a client for
// MaxPendingBytes.
func awaitPendingDenial(t *testing.T, b *Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), floodWait)
	defer cancel()
	for b.Denials().PendingBytes == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the client that does not read was never disconnected for MaxPendingBytes")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readFlood reads the flood's messages from c, acknowledging each, and
// fails unless they are 0, 1, ... up to the first packet that is not one of
// them, which it returns with the count.
func readFlood(t *testing.T, c *rawConn) (int, *packets.ControlPacket) {
	t.Helper()
	n := 0
	for {
		p := c.read()
		pub, ok := p.Content.(*packets.Publish)
		if !ok {
			return n, p
		}
		if got := floodIndex(pub.Payload); got != n {
			t.Fatalf("message %d of the flood arrived as number %d", got, n)
		}
		n++
		ack := packets.NewControlPacket(packets.PUBACK)
		ack.Content.(*packets.Puback).PacketID = pub.PacketID
		c.write(ack)
		if n == floodCount {
			return n, nil
		}
	}
}

// TestPublishersDoNotWaitForASubscriberThatDoesNotRead: a subscriber that
// stops reading (within MaxPendingBytes) holds up neither the publisher
// nor the publisher's other subscribers, is not disconnected, and receives
// every message, in order, once it reads again. (mochi numbers each
// delivery under the subscriber's lock, which a blocked write to the
// subscriber held: the publisher's goroutine stopped at the first delivery
// after the subscriber's TCP buffers filled up, and with it the
// publisher's PUBACKs and everything else it sent.)
func TestPublishersDoNotWaitForASubscriberThatDoesNotRead(t *testing.T) {
	b := startBroker(t, Config{})
	stuck := dialStuck(t, b.Addr(), "o/u/stuck", "slow/t", 0)
	other := connect(t, b.Addr(), "o/u/other")
	other.subscribe("fast/t", 1)
	pub := connect(t, b.Addr(), "o/u/pub")

	flood(t, pub, "slow/t")
	pub.publish(&paho.Publish{Topic: "fast/t", QoS: 1, Payload: []byte("after the flood")})
	other.await("the message published after the flood", payloadIs([]byte("after the flood")))
	if got := b.Denials().PendingBytes; got != 0 {
		t.Errorf("Denials().PendingBytes = %d, want 0: %d bytes are within the default bound", got, floodCount*floodSize)
	}
	if n, p := readFlood(t, stuck); n != floodCount {
		t.Fatalf("the subscriber received %d of %d messages, then %s", n, floodCount, p.PacketType())
	}
}

// TestAClientThatLeavesTooMuchUnreadIsDisconnected: past MaxPendingBytes
// the client that does not read is disconnected with DISCONNECT 0x97
// (Quota exceeded), written after everything it had not read; the
// publisher is never held up, and the refusal is counted.
func TestAClientThatLeavesTooMuchUnreadIsDisconnected(t *testing.T) {
	b := startBroker(t, Config{MaxPendingBytes: 1 << 20, closeFlush: waitLong})
	stuck := dialStuck(t, b.Addr(), "o/u/stuck", "slow/t", 0)
	pub := connect(t, b.Addr(), "o/u/pub")

	flood(t, pub, "slow/t")
	awaitPendingDenial(t, b)
	n, p := readFlood(t, stuck)
	if n == floodCount || p == nil {
		t.Fatalf("the client received the whole flood (%d messages), want a part and then DISCONNECT", n)
	}
	d, ok := p.Content.(*packets.Disconnect)
	if !ok || d.ReasonCode != packets.DisconnectQuotaExceeded {
		t.Fatalf("after %d messages: %s %+v, want DISCONNECT 0x97", n, p.PacketType(), p.Content)
	}
	if d.Properties == nil || !strings.Contains(d.Properties.ReasonString, "MaxPendingBytes") {
		t.Errorf("DISCONNECT Reason String %+v, want it to name MaxPendingBytes", d.Properties)
	}
	stuck.closed()
	if got := b.Denials().PendingBytes; got != 1 {
		t.Errorf("Denials().PendingBytes = %d, want 1", got)
	}
}

// TestASessionKeepsWhatItsDisconnectionLeftUnsent: a client with a
// session that is disconnected for MaxPendingBytes gets every QoS 1
// message when it reconnects: those it never received, and those it did
// not acknowledge. mochi resends them all at once, more than
// MaxPendingBytes; the broker sends them as the client reads instead of
// disconnecting it again.
func TestASessionKeepsWhatItsDisconnectionLeftUnsent(t *testing.T) {
	const id = "o/u/durable"
	b := startBroker(t, Config{MaxPendingBytes: 1 << 20})
	stuck := dialStuck(t, b.Addr(), id, "slow/t", 300)
	pub := connect(t, b.Addr(), "o/u/pub")
	marker := connect(t, b.Addr(), "o/u/marker")
	marker.subscribe("marker/t", 1)
	flood(t, pub, "slow/t")
	// The broker handles a publisher's packets one after the other, and
	// acknowledges each before it hands it to the subscribers: once the
	// marker published after the flood arrives, the whole flood is with
	// the session. (mochi loses a message handed to a session while it
	// is being taken over: it copies the messages in flight to the new
	// connection, then clears the old one's.)
	pub.publish(&paho.Publish{Topic: "marker/t", QoS: 1, Payload: []byte("flood routed")})
	marker.await("the marker after the flood", payloadIs([]byte("flood routed")))
	awaitPendingDenial(t, b)
	_ = stuck.conn.Close()

	expiry := uint32(300)
	again := dial(t, b.Addr(), &paho.Connect{ClientID: id, CleanStart: false,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}, nil)
	seen := make(map[int]bool)
	ctx, cancel := context.WithTimeout(testContext(t), floodWait)
	defer cancel()
	for len(seen) < floodCount {
		select {
		case m := <-again.msgs:
			if i := floodIndex(m.Payload); i >= 0 && i < floodCount {
				seen[i] = true
			}
		case <-ctx.Done():
			var missing []int
			for i := range floodCount {
				if !seen[i] {
					missing = append(missing, i)
				}
			}
			t.Fatalf("the session's messages after reconnecting: %d of %d (missing %v)", len(seen), floodCount, missing)
		}
	}
	if got := b.Denials().PendingBytes; got != 1 {
		t.Errorf("Denials().PendingBytes = %d, want 1 (the reconnected client was disconnected again)", got)
	}
}

// TestMaxPendingBytes: the bound in force, and the values Start refuses.
func TestMaxPendingBytes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		want    int // the bound; 0 when Start refuses cfg
		wantErr string
	}{
		{name: "the default", cfg: Config{}, want: DefaultMaxPendingBytes},
		{name: "twice a maximum packet size over half the default", cfg: Config{MaxPacketSize: 256 << 20}, want: 512 << 20},
		{name: "a value of one's own", cfg: Config{MaxPendingBytes: 8 << 20}, want: 8 << 20},
		{name: "the maximum packet size itself", cfg: Config{MaxPacketSize: 4096, MaxPendingBytes: 4096}, want: 4096},
		{name: "below the maximum packet size", cfg: Config{MaxPendingBytes: 1000}, wantErr: "MaxPendingBytes 1000 is below MaxPacketSize 1048576"},
		{name: "negative", cfg: Config{MaxPendingBytes: -1}, wantErr: "MaxPendingBytes -1 is below MaxPacketSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.checkPendingBytes()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("checkPendingBytes: %v, want %q", err, tc.wantErr)
				}
				if b, err := Start(context.Background(), tc.cfg); err == nil {
					_ = b.Close()
					t.Fatalf("Start accepted %+v", tc.cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("checkPendingBytes: %v", err)
			}
			if got := tc.cfg.maxPendingBytes(orDefault(tc.cfg.MaxPacketSize, DefaultMaxPacketSize)); got != tc.want {
				t.Errorf("the bound is %d, want %d", got, tc.want)
			}
		})
	}
}
