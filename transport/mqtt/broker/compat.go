package broker

import (
	"net"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// The hooks here work around defects of mochi v2.7.9 (the newest release)
// that change what clients of this broker see.

// publishProperties undoes a mochi v2.7.9 defect: for a client that sent
// Request Problem Information = 0 in CONNECT, mochi drops the user
// properties of every packet it sends, PUBLISH included, where MQTT v5
// (3.1.2.11.7, [MQTT-3.1.2-29]) restricts only packets other than
// PUBLISH, CONNACK and DISCONNECT. paho.golang sends that 0 whenever
// ConnectProperties is set and RequestProblemInfo is left false (autopaho
// does so as soon as SessionExpiryInterval is set), so without this hook
// such a client never sees a2a-* properties. The hook lets PUBLISH
// packets keep theirs; Reason Strings and the user properties of
// acknowledgements stay suppressed.
type publishProperties struct {
	mqtt.HookBase
}

// ID names the hook in mochi's log.
func (*publishProperties) ID() string { return "publish-user-properties" }

// Provides reports the events the hook handles.
func (*publishProperties) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

// OnPacketEncode lets a PUBLISH carry its user properties.
func (*publishProperties) OnPacketEncode(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type == packets.Publish {
		pk.Mods.DisallowProblemInfo = false
	}
	return pk
}

// noSendQuota undoes a mochi v2.7.9 deadlock. For a client that announced
// a Receive Maximum, mochi counts a send quota and, after every packet it
// reads from the client, looks for held-back deliveries with
// Inflight.NextImmediate, which takes the in-flight table's read lock
// twice; when a publisher's goroutine asks for the write lock in between
// (to add a delivery for that client), both wait forever, and so does
// every later publisher to that client. (Seen here within seconds: eight
// QoS 1 publishers, one subscriber with Receive Maximum 65535.) The hook
// sets the quota to zero, which mochi reads as "no flow control": the
// broker no longer holds deliveries back to honour the client's Receive
// Maximum (paho.golang simply stops reading until it has caught up).
type noSendQuota struct {
	mqtt.HookBase
}

// ID names the hook in mochi's log.
func (*noSendQuota) ID() string { return "no-send-quota" }

// Provides reports the events the hook handles.
func (*noSendQuota) Provides(b byte) bool {
	return b == mqtt.OnConnect || b == mqtt.OnSessionEstablished
}

// OnConnect clears the quota ParseConnect set, before anyone can deliver
// to the client.
func (*noSendQuota) OnConnect(cl *mqtt.Client, _ packets.Packet) error {
	cl.State.Inflight.ResetSendQuota(0)
	return nil
}

// OnSessionEstablished clears it again: taking over a session with
// messages in flight sets it anew. It runs before the client's first
// packet is read.
func (*noSendQuota) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}

// takeoverTimeout bounds how long a new connection waits for the one it
// took over to be torn down.
const takeoverTimeout = 10 * time.Second

// orderedTakeover undoes two mochi v2.7.9 races of a session takeover
// (a client connecting with the Client ID of a connected client). mochi
// closes the old connection and lets its goroutine tear it down while the
// new connection goes on:
//
//   - the old Will (the LWT card, offline / lwt) can be retained after the
//     card the new connection has just published, so discovery shows a
//     connected agent as offline;
//   - the old goroutine can decide that its session ends (it checks
//     "taken over" before the new connection has set it) and then removes
//     the Client ID from the client table after the new connection was
//     added: the new connection stays open but receives nothing, and the
//     next takeover does not find it (both seen here).
//
// The hook holds the new connection, after CONNACK and before its first
// packet is read, until the old connection's goroutine has returned (at
// most takeoverTimeout), as mosquitto finishes the old connection first;
// then it puts the new connection back into the client table, and its
// subscriptions back into the topic index, should the old one have
// removed them.
type orderedTakeover struct {
	mqtt.HookBase

	srv *mqtt.Server
	// connDone returns a channel closed once the goroutine serving conn
	// has returned; set before the broker accepts connections.
	connDone func(conn net.Conn) <-chan struct{}

	mu      sync.Mutex
	current map[string]*mqtt.Client // Client ID → latest connection, until served
	ids     map[net.Conn]string     // connection → its Client ID, until served
}

func newOrderedTakeover(srv *mqtt.Server) *orderedTakeover {
	return &orderedTakeover{
		srv:     srv,
		current: make(map[string]*mqtt.Client),
		ids:     make(map[net.Conn]string),
	}
}

// ID names the hook in mochi's log.
func (*orderedTakeover) ID() string { return "ordered-takeover" }

// Provides reports the events the hook handles.
func (*orderedTakeover) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablished
}

// OnSessionEstablished waits for the connection cl took over, if its
// goroutine has not returned yet, then repairs what its teardown may have
// removed.
func (h *orderedTakeover) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if cl.Net.Conn == nil {
		return
	}
	h.mu.Lock()
	prev := h.current[cl.ID]
	h.current[cl.ID] = cl
	h.ids[cl.Net.Conn] = cl.ID
	h.mu.Unlock()
	if prev != nil && prev.Net.Conn != nil {
		t := time.NewTimer(takeoverTimeout)
		defer t.Stop()
		select {
		case <-h.connDone(prev.Net.Conn):
		case <-t.C:
			h.Log.Warn("session takeover: the old connection was not torn down in time; going on",
				"client", cl.ID, "timeout", takeoverTimeout)
		}
	}
	// The old connection's teardown, once over, may have removed the Client
	// ID (after this connection was added) and its subscriptions.
	if _, ok := h.srv.Clients.Get(cl.ID); !ok {
		h.srv.Clients.Add(cl)
	}
	if prev != nil {
		for _, sub := range cl.State.Subscriptions.GetAll() {
			h.srv.Topics.Subscribe(cl.ID, sub)
		}
	}
}

// served forgets conn's client once the goroutine serving conn has
// returned (nothing of it can change the client table any more).
func (h *orderedTakeover) served(conn net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[conn]
	if !ok {
		return
	}
	delete(h.ids, conn)
	if cl := h.current[id]; cl != nil && cl.Net.Conn == conn {
		delete(h.current, id)
	}
}

// retainGuard undoes a mochi v2.7.9 data race. Storing a retained message
// writes the topic tree's retainPath under mochi's locks, but sending the
// retained messages of a new wildcard subscription reads it with no lock
// at all (TopicsIndex.scanMessages): a subscriber to
// $a2a/v1/discovery/{org_id}/{unit_id}/+ racing an agent's card or Will is
// a data race (the race detector reports it, seen here; unguarded, a torn
// string read). The hook brackets both with its own lock: the write from
// OnPublish or OnWill (when the message is retained) to OnRetainMessage,
// the read from OnSubscribe to OnPacketProcessed (the SUBSCRIBE, retained
// messages included, is handled in between). Delayed wills (Will Delay
// Interval) are retained by mochi's housekeeping loop without any hook and
// stay unguarded.
type retainGuard struct {
	mqtt.HookBase

	rw sync.RWMutex // held for writing while a retained message is stored

	mu      sync.Mutex
	writing map[*mqtt.Client]bool // holds rw for writing
	reading map[*mqtt.Client]bool // holds rw for reading
}

func newRetainGuard() *retainGuard {
	return &retainGuard{
		writing: make(map[*mqtt.Client]bool),
		reading: make(map[*mqtt.Client]bool),
	}
}

// ID names the hook in mochi's log.
func (*retainGuard) ID() string { return "retain-guard" }

// Provides reports the events the hook handles.
func (*retainGuard) Provides(b byte) bool {
	switch b {
	case mqtt.OnPublish, mqtt.OnWill, mqtt.OnRetainMessage, mqtt.OnSubscribe, mqtt.OnPacketProcessed:
		return true
	}
	return false
}

func (g *retainGuard) lockWrite(cl *mqtt.Client) {
	g.rw.Lock()
	g.mu.Lock()
	g.writing[cl] = true
	g.mu.Unlock()
}

// release lets go of what cl holds, if anything.
func (g *retainGuard) release(cl *mqtt.Client) {
	g.mu.Lock()
	w, r := g.writing[cl], g.reading[cl]
	delete(g.writing, cl)
	delete(g.reading, cl)
	g.mu.Unlock()
	if w {
		g.rw.Unlock()
	}
	if r {
		g.rw.RUnlock()
	}
}

// OnPublish takes the write lock for a message that will be retained.
func (g *retainGuard) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Retain {
		g.lockWrite(cl)
	}
	return pk, nil
}

// OnWill takes the write lock for a will that will be retained now.
func (g *retainGuard) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	if will.Retain && will.WillDelayInterval == 0 {
		g.lockWrite(cl)
	}
	return will, nil
}

// OnRetainMessage runs once the message is stored.
func (g *retainGuard) OnRetainMessage(cl *mqtt.Client, _ packets.Packet, _ int64) {
	g.release(cl)
}

// OnSubscribe takes the read lock for the SUBSCRIBE, whose retained
// messages mochi sends before OnPacketProcessed.
func (g *retainGuard) OnSubscribe(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if !cl.Net.Inline {
		g.rw.RLock()
		g.mu.Lock()
		g.reading[cl] = true
		g.mu.Unlock()
	}
	return pk
}

// OnPacketProcessed releases what the packet took, should it not have
// reached OnRetainMessage.
func (g *retainGuard) OnPacketProcessed(cl *mqtt.Client, _ packets.Packet, _ error) {
	g.release(cl)
}
