package broker

import (
	"net"
	"sync"
	"sync/atomic"
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
// does so as soon as SessionExpiryInterval is set), so without this step
// such a client never sees a2a-* properties. This step of packetEncoder
// lets PUBLISH packets keep theirs; Reason Strings and the user properties
// of acknowledgements stay suppressed.
type publishProperties struct{}

// encode lets a PUBLISH carry its user properties.
func (*publishProperties) encode(pk *packets.Packet) {
	if pk.FixedHeader.Type == packets.Publish {
		pk.Mods.DisallowProblemInfo = false
	}
}

// packetEncoder is the one OnPacketEncode hook of the broker: it runs the
// encode steps of the limits, the user properties of PUBLISH packets and
// the broker-managed status, those configured, on one copy of the packet.
// mochi hands each hook the packet by value and takes it back; with one
// hook instead of three, every packet written to a client is copied twice
// instead of six times.
type packetEncoder struct {
	mqtt.HookBase
	limits *limitsHook
	props  *publishProperties // nil: mochi's own behaviour (Config.mochiProblemInfo)
	status *statusHook        // nil: no broker-managed status
}

// ID names the hook in mochi's log.
func (*packetEncoder) ID() string { return "a2a-packet-encode" }

// Provides reports the events the hook handles.
func (*packetEncoder) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

// OnPacketEncode applies the configured encode steps.
func (h *packetEncoder) OnPacketEncode(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	h.limits.encode(&pk)
	if h.props != nil {
		h.props.encode(&pk)
	}
	if h.status != nil {
		h.status.encode(&pk)
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

// takeoverTimeout bounds how long a new connection waits for the
// connections it took over to be torn down; past it the new connection is
// disconnected (0x89, server busy) and its client connects again.
const takeoverTimeout = 10 * time.Second

// takeoverWriteTimeout bounds how long the connection taken over may take
// to accept its DISCONNECT; past it, it is closed.
const takeoverWriteTimeout = time.Second

// orderedTakeover undoes the races of a mochi v2.7.9 session takeover (a
// client connecting with the Client ID of a connected client, which MQTT
// v5 §3.1.4 [MQTT-3.1.4-3] answers by disconnecting the existing client
// with 0x8E, Session taken over). mochi's takeover
// (inheritClientSession) looks the Client ID up, disconnects the
// connection it finds and adds the new one, with no lock held across the
// three steps, and lets the old connection's goroutine tear it down while
// the new connection goes on:
//
//   - two connections arriving together can both find the same old
//     connection; both are added, the second replacing the first in the
//     client table, and the first stays open outside the table: connected
//     but deaf (publishes go to the table's entry), and never taken over
//     again (the next takeover finds the other one);
//   - the old Will (the LWT card, offline / lwt) can be retained after the
//     card the new connection has just published, so discovery shows a
//     connected agent as offline;
//   - the old goroutine can decide that its session ends (it checks
//     "taken over" before the new connection has set it) and then removes
//     the Client ID from the client table, and its subscriptions from the
//     topic index, after the new connection was added: the new connection
//     stays open but receives nothing, and the next takeover does not find
//     it.
//
// The hook serialises the connections of one Client ID, from just before
// the takeover (OnSessionEstablish) to just before the new connection's
// first packet is read (OnSessionEstablished): a connection takes its turn,
// mochi takes over the one connection in the table and adds the new one,
// and the new connection then waits until the goroutine of every earlier
// connection with its Client ID has returned (as mosquitto finishes the
// old connection first) before it puts itself back into the client table,
// and its subscriptions back into the topic index, should a teardown have
// removed them; only then does the next connection get its turn. Each
// Client ID therefore has one live session at a time. A new connection
// whose predecessors are not torn down within takeoverTimeout is
// disconnected rather than left at the mercy of their teardown.
//
// mochi writes the DISCONNECT to the connection it takes over under that
// connection's write lock, which a write blocked on a client that stopped
// reading holds until the connection's deadline, and for good with a
// keep-alive of 0: the takeover, and every later connection with the
// Client ID, would wait as long (someone could keep an agent off the
// broker that way). The old connection is closed if the takeover is not
// over within takeoverWriteTimeout, which ends the blocked write.
//
// (Ordering the waits by the order in which connections reach
// OnSessionEstablished, without the turn, is not enough: that need not be
// the order of the takeovers, and under a burst a new connection waited
// for the live one, read nothing for 10 s, timed out ("not torn down in
// time") and went on exposed to the races above.)
type orderedTakeover struct {
	mqtt.HookBase

	srv *mqtt.Server
	// connDone returns a channel closed once the goroutine serving conn
	// has returned; set before the broker accepts connections.
	connDone func(conn net.Conn) <-chan struct{}
	// timeout is takeoverTimeout (shorter in tests).
	timeout time.Duration
	// holdServed, when set (tests only), runs before a served connection
	// is forgotten: a test holds teardowns with it.
	holdServed func()
	// beforeEstablished, when set (tests only), runs as a new connection's
	// wait for its predecessors begins.
	beforeEstablished func(cl *mqtt.Client)

	mu    sync.Mutex
	ids   map[string]*clientConns   // Client ID → its connections, while any is left
	conns map[net.Conn]*clientConns // connection → its Client ID's, until served
}

// clientConns is what orderedTakeover keeps of one Client ID.
type clientConns struct {
	id string
	// turn has one slot, filled by the connection between
	// OnSessionEstablish and OnSessionEstablished.
	turn chan struct{}
	// holder is the connection holding turn (nil when free).
	holder net.Conn
	// live are the connections that took their turn and are not served
	// yet, oldest first.
	live []net.Conn
	// waiting counts the connections waiting for turn.
	waiting int
	// closeOld closes the connection the holder takes over, should the
	// takeover not be over in takeoverWriteTimeout.
	closeOld *time.Timer
}

func newOrderedTakeover(srv *mqtt.Server) *orderedTakeover {
	return &orderedTakeover{
		srv:     srv,
		timeout: takeoverTimeout,
		ids:     make(map[string]*clientConns),
		conns:   make(map[net.Conn]*clientConns),
	}
}

// ID names the hook in mochi's log.
func (*orderedTakeover) ID() string { return "ordered-takeover" }

// Provides reports the events the hook handles.
func (*orderedTakeover) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablish || b == mqtt.OnSessionEstablished
}

// OnSessionEstablish runs just before mochi takes over the connection with
// cl's Client ID, if any, and adds cl to the client table: cl waits for
// its turn.
func (h *orderedTakeover) OnSessionEstablish(cl *mqtt.Client, _ packets.Packet) {
	if cl.Net.Conn == nil {
		return
	}
	h.mu.Lock()
	e := h.ids[cl.ID]
	if e == nil {
		e = &clientConns{id: cl.ID, turn: make(chan struct{}, 1)}
		h.ids[cl.ID] = e
	}
	e.waiting++
	h.mu.Unlock()
	// The holder gives the turn back within takeoverTimeout, or when its
	// connection is served, whichever comes first.
	e.turn <- struct{}{}
	h.mu.Lock()
	e.waiting--
	e.holder = cl.Net.Conn
	e.live = append(e.live, cl.Net.Conn)
	h.conns[cl.Net.Conn] = e
	if old, ok := h.srv.Clients.Get(cl.ID); ok && old != cl && old.Net.Conn != nil {
		oc := old.Net.Conn
		e.closeOld = time.AfterFunc(takeoverWriteTimeout, func() { _ = oc.Close() })
	}
	h.mu.Unlock()
}

// OnSessionEstablished runs after CONNACK and before cl's first packet is
// read: it waits for the earlier connections with cl's Client ID to be
// torn down, repairs what their teardown may have removed, and gives the
// turn to the next connection.
func (h *orderedTakeover) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	if cl.Net.Conn == nil {
		return
	}
	h.mu.Lock()
	e := h.conns[cl.Net.Conn]
	connDone, timeout := h.connDone, h.timeout
	var earlier []net.Conn
	if e != nil {
		for _, c := range e.live {
			if c != cl.Net.Conn {
				earlier = append(earlier, c)
			}
		}
	}
	before := h.beforeEstablished
	h.mu.Unlock()
	if e == nil {
		return
	}
	defer h.release(e, cl.Net.Conn)
	if before != nil {
		before(cl)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for _, c := range earlier {
		select {
		case <-connDone(c):
		case <-t.C:
			h.Log.Warn("session takeover: an earlier connection was not torn down in time; disconnecting the new one",
				"client", cl.ID, "timeout", timeout)
			// The client connects again; its next connection waits anew.
			_ = h.srv.DisconnectClient(cl, packets.ErrServerBusy)
			return
		}
	}
	// Nothing of the earlier connections can change the tables any more;
	// their teardown may have removed the Client ID (after cl was added)
	// and its subscriptions. That holds even when there was nothing left
	// to wait for: the connection cl took over may have been torn down,
	// and served, between the takeover and now.
	if _, ok := h.srv.Clients.Get(cl.ID); !ok {
		h.srv.Clients.Add(cl)
	}
	for _, sub := range cl.State.Subscriptions.GetAll() {
		h.srv.Topics.Subscribe(cl.ID, sub)
	}
}

// release gives conn's turn back, if it holds it.
func (h *orderedTakeover) release(e *clientConns, conn net.Conn) {
	h.mu.Lock()
	held := e.holder == conn
	if held {
		e.holder = nil
		if e.closeOld != nil {
			e.closeOld.Stop()
			e.closeOld = nil
		}
	}
	h.mu.Unlock()
	if held {
		<-e.turn
	}
}

// served forgets conn once the goroutine serving it has returned (nothing
// of it can change the client table any more), giving its turn back should
// its session have failed before OnSessionEstablished; a Client ID is
// forgotten with its last connection.
func (h *orderedTakeover) served(conn net.Conn) {
	h.mu.Lock()
	hold := h.holdServed
	h.mu.Unlock()
	if hold != nil {
		hold()
	}
	h.mu.Lock()
	e, ok := h.conns[conn]
	if !ok {
		h.mu.Unlock()
		return
	}
	delete(h.conns, conn)
	for i, c := range e.live {
		if c == conn {
			e.live = append(e.live[:i:i], e.live[i+1:]...)
			break
		}
	}
	h.mu.Unlock()
	h.release(e, conn)
	h.mu.Lock()
	if len(e.live) == 0 && e.waiting == 0 && e.holder == nil && h.ids[e.id] == e {
		delete(h.ids, e.id)
	}
	h.mu.Unlock()
}

// pending reports what the hook still keeps of a Client ID: whether it
// has an entry, and how many connections (for tests).
func (h *orderedTakeover) pending(id string) (entry bool, conns int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.conns {
		if e.id == id {
			conns++
		}
	}
	_, entry = h.ids[id]
	return entry, conns
}

// retainGuard undoes a mochi v2.7.9 data race. Storing a retained message
// writes the topic tree's retainPath under mochi's locks, but sending the
// retained messages of a new wildcard subscription reads it with no lock
// at all (TopicsIndex.scanMessages): a subscriber to
// {root}/discovery/{org_id}/{unit_id}/+ racing an agent's card or Will is
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
	// held counts the entries of writing and reading. A client's entry is
	// made and released on the goroutine that handles its packets (or its
	// Will), so a release that sees no entry at all has nothing to look up:
	// the packets that take no lock (all but retained publishes and
	// SUBSCRIBEs) pay no lock and no map lookup.
	held atomic.Int64
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
	g.held.Add(1)
	g.mu.Unlock()
}

// release lets go of what cl holds, if anything.
func (g *retainGuard) release(cl *mqtt.Client) {
	if g.held.Load() == 0 {
		return
	}
	g.mu.Lock()
	w, r := g.writing[cl], g.reading[cl]
	if w {
		delete(g.writing, cl)
		g.held.Add(-1)
	}
	if r {
		delete(g.reading, cl)
		g.held.Add(-1)
	}
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
		g.held.Add(1)
		g.mu.Unlock()
	}
	return pk
}

// OnPacketProcessed releases what the packet took, should it not have
// reached OnRetainMessage.
func (g *retainGuard) OnPacketProcessed(cl *mqtt.Client, _ packets.Packet, _ error) {
	g.release(cl)
}
