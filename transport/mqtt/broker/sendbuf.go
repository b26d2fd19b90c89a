package broker

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// The write side of a connection (limitConn): what mochi writes to a
// client goes to the socket as far as the socket takes it at once, the
// rest is queued, and a goroutine of the connection's own writes the queue
// out, so mochi never waits for a client to read. (While nothing is
// queued a write costs no copy and no hand-over.)
//
// mochi v2.7.9 writes to a client under the client's lock, which the
// goroutine reading the client's packets also takes to acknowledge them
// (PUBACK) and every publisher's goroutine takes to number a delivery to
// the client (Client.NextPacketID). A write blocks while the client's TCP
// receive window is full, that is while the client is not reading; so,
// with the socket written to directly:
//
//   - the broker stops reading from a client as soon as a write to it
//     blocks, and a client that stops reading while it writes (paho.golang
//     acknowledges a PUBLISH under its session lock, from the path that
//     reads, and its write waits behind its own large PUBLISH) never reads
//     again: each waits for the other until the connection's deadline (1.5
//     keep-alives; none with keep-alive 0) drops the client, and whatever
//     was in flight with it. 64 requests of 1 MB in flight between two
//     paho.golang clients stalled that way within the first round;
//   - every publisher whose message goes to such a client waits as long,
//     in its own reading goroutine: one client that stops reading stalls
//     everyone who publishes to it.
//
// With the queue, reading never waits for writing and publishers never
// wait for a subscriber. The queue is bounded (Config.MaxPendingBytes): a
// client that leaves more than that unread is disconnected with DISCONNECT
// 0x97 (Quota exceeded), written after what it has not read yet.

// DefaultMaxPendingBytes is the default of Config.MaxPendingBytes: 128
// MiB. A client with 64 requests of the maximum packet size (1 MiB by
// default) in flight, a paho.golang requester for instance, stops reading
// while it writes them; up to 64 replies of up to 1 MiB, and the
// acknowledgements of its requests, are then owed to it: a little over 64
// MiB. The default is the next power of two, so that such a client is
// never near the limit; a client that leaves more unread than that is
// behind by more than any request/reply exchange needs.
const DefaultMaxPendingBytes = 128 << 20

const (
	// sendChunk is the size of the chunks small writes are gathered
	// into; a write at least this large is queued as a chunk of its own.
	sendChunk = 32 << 10
	// writeSlice is the most the writer writes to the socket at once:
	// after each slice a write waiting for room sees progress.
	writeSlice = 256 << 10
	// closeFlushTimeout bounds how long a closed connection may take to
	// write what was queued before it was closed (a DISCONNECT, a
	// CONNACK refusing the client, the last deliveries); past it the
	// socket is closed with the rest unwritten.
	closeFlushTimeout = time.Second
	// pendingStall bounds how long a write made before the session is
	// established (the resend of the session's messages in flight) waits
	// for a client that reads nothing; past it the client is
	// disconnected with 0x97.
	pendingStall = 10 * time.Second
	// pendingReason is the Reason String of the DISCONNECT 0x97.
	pendingReason = "more sent to the client than it has read: past the broker's MaxPendingBytes"
)

// errPendingBytes is what mochi's write gets once the client is
// disconnected for leaving too much unread.
var errPendingBytes = errors.New("broker: the client leaves more than MaxPendingBytes unread")

// aLongTimeAgo is a read deadline that has passed: it ends a blocked read
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// sendChunks recycles the chunks of small writes.
var sendChunks = sync.Pool{New: func() any { b := make([]byte, 0, sendChunk); return &b }}

// pendingDisconnect is DISCONNECT 0x97 with its Reason String (MQTT v5
// §3.14; a Reason String is allowed on DISCONNECT whatever the client's
// Request Problem Information, [MQTT-3.1.2-29]).
var pendingDisconnect = func() []byte {
	var buf bytes.Buffer
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ProtocolVersion: 5,
		ReasonCode: packets.ErrQuotaExceeded.Code, Properties: packets.Properties{ReasonString: pendingReason}}
	if err := pk.DisconnectEncode(&buf); err != nil {
		panic(err) // a constant packet
	}
	return buf.Bytes()
}()

// sendQueue is the write side of a limitConn.
type sendQueue struct {
	max int // the bound on pending bytes (Config.MaxPendingBytes)
	// overflowed reports a client disconnected for leaving more than max
	// unread (counted and logged by the caller, outside the lock).
	overflowed func(c *limitConn)

	// raw writes to the socket without waiting (sendbuf_unix.go); nil
	// over TLS and where there is no such write.
	raw syscall.RawConn
	rw  rawWrite // writeNow's scratch, under mu

	// flush bounds the writes of a closed connection (closeFlushTimeout).
	flush time.Duration
	// stall bounds how long a write made before the session is
	// established waits for the client to read (pendingStall).
	stall time.Duration

	mu      sync.Mutex
	cond    sync.Cond // the writer waits on it for data or close
	room    sync.Cond // a write waiting for room waits on it
	queue   [][]byte  // written by mochi, not yet handed to the socket
	pending int       // bytes queued or being written
	written uint64    // slices written so far (progress)
	writing bool      // the writer is writing a batch
	closing bool      // Close was called (or the queue overflowed)
	closeBy time.Time // when closing: the end of the writes and the drain
	err     error     // the first write error; later writes return it
	done    chan struct{}
	// stopRead is set with closing: mochi reads nothing more.
	stopRead atomic.Bool
}

// startWriter starts the goroutine that writes the queue to the socket;
// it ends, having closed the socket, once the connection is closed and
// the queue written (or closeFlushTimeout has passed), or on a write
// error.
func (c *limitConn) startWriter(max int, flush time.Duration, overflowed func(*limitConn)) {
	c.send.max, c.send.flush, c.send.overflowed = max, flush, overflowed
	c.send.cond.L, c.send.room.L = &c.send.mu, &c.send.mu
	c.send.stall = pendingStall
	c.send.done = make(chan struct{})
	if tc, ok := c.Conn.(*net.TCPConn); ok && canWriteNow {
		c.send.raw, _ = tc.SyscallConn()
	}
	go c.writeLoop()
}

// Write writes p, or what of it the socket takes at once, and queues the
// rest; it returns at once. A client with more than the bound already
// queued and unwritten is disconnected instead (the write is dropped and
// reported as an error): DISCONNECT 0x97 is queued after what it has not
// read yet, and the connection closed.
func (c *limitConn) Write(p []byte) (int, error) {
	s := &c.send
	s.mu.Lock()
	if s.err != nil || s.closing {
		err := s.err
		s.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return 0, err
	}
	// A write always fits in an empty queue, whatever its size (a
	// delivery can exceed MaxPacketSize by the properties the broker
	// adds).
	if s.pending > 0 && s.pending+len(p) > s.max {
		cl := c.client.Load()
		if cl == nil && c.waitRoom(len(p)) {
			// Room was made.
		} else if s.err != nil || s.closing {
			err := s.err
			s.mu.Unlock()
			if err == nil {
				err = net.ErrClosed
			}
			return 0, err
		} else {
			if cl != nil && cl.Properties.ProtocolVersion == 5 {
				s.enqueue(pendingDisconnect)
			}
			s.err = errPendingBytes
			c.closeLocked()
			s.mu.Unlock()
			if s.overflowed != nil {
				s.overflowed(c)
			}
			return 0, errPendingBytes
		}
	}
	n := 0
	if len(s.queue) == 0 && !s.writing && s.raw != nil {
		// Nothing is queued: what the socket takes now needs no copy
		// and no hand-over to the writer.
		var err error
		if n, err = writeNow(s.raw, &s.rw, p); err != nil {
			s.err = err
			s.cond.Signal() // the writer closes the socket
			s.mu.Unlock()
			return n, err
		}
	}
	s.enqueue(p[n:])
	s.mu.Unlock()
	return len(p), nil
}

// waitRoom waits, with c.send.mu held, until n more bytes fit in the
// queue, and reports whether they do: false when the connection closed
// or failed, or the writer wrote nothing for s.stall. Only writes made
// before the session is established wait: mochi then resends, at once,
// every QoS 1 and 2 message the session holds in flight, which can be
// more than the bound; it does so before it reads anything from the
// client, so the client reading is all it takes. (Once the session is
// established the reading goroutine and every publisher to the client
// take the lock a waiting write holds: a write past the bound disconnects
// the client instead.)
func (c *limitConn) waitRoom(n int) bool {
	s := &c.send
	for s.pending > 0 && s.pending+n > s.max {
		if s.err != nil || s.closing {
			return false
		}
		before := s.written
		stalled := false
		t := time.AfterFunc(s.stall, func() {
			s.mu.Lock()
			stalled = true
			s.room.Broadcast()
			s.mu.Unlock()
		})
		for s.written == before && !stalled && s.err == nil && !s.closing {
			s.room.Wait()
		}
		t.Stop()
		if s.written == before && s.err == nil && !s.closing {
			return false // no progress for s.stall
		}
	}
	return s.err == nil && !s.closing
}

// enqueue copies p to the queue; s.mu is held.
func (s *sendQueue) enqueue(p []byte) {
	if len(p) == 0 {
		return
	}
	s.pending += len(p)
	if n := len(s.queue); n > 0 {
		last := s.queue[n-1]
		if cap(last) == sendChunk && len(p) <= cap(last)-len(last) {
			s.queue[n-1] = append(last, p...)
			return
		}
	}
	var chunk []byte
	if len(p) >= sendChunk {
		chunk = append(make([]byte, 0, len(p)), p...)
	} else {
		chunk = append((*sendChunks.Get().(*[]byte))[:0], p...)
	}
	s.queue = append(s.queue, chunk)
	if len(s.queue) == 1 {
		s.cond.Signal()
	}
}

// writeLoop writes the queue to the socket until the connection is
// closed and the queue written, or a write fails; then it closes the
// socket.
func (c *limitConn) writeLoop() {
	s := &c.send
	defer close(s.done)
	var batch, iov [][]byte
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closing && s.err == nil {
			s.cond.Wait()
		}
		if len(s.queue) == 0 || (s.err != nil && s.err != errPendingBytes) {
			s.mu.Unlock()
			break
		}
		batch, s.queue = s.queue, batch[:0]
		s.writing = true
		s.mu.Unlock()

		err := c.writeBatch(batch, &iov)
		for i, b := range batch {
			if cap(b) == sendChunk {
				b = b[:0]
				sendChunks.Put(&b)
			}
			batch[i] = nil
		}

		s.mu.Lock()
		s.writing = false
		if err != nil && s.err == nil {
			s.err = err
		}
		s.room.Broadcast()
		s.mu.Unlock()
		if err != nil {
			break
		}
	}
	// What was not written is dropped with the connection.
	s.mu.Lock()
	for _, b := range s.queue {
		if cap(b) == sendChunk {
			b = b[:0]
			sendChunks.Put(&b)
		}
	}
	s.queue, s.pending = nil, 0
	flushed, closeBy := s.err == nil || s.err == errPendingBytes, s.closeBy
	s.mu.Unlock()
	if flushed {
		c.linger(closeBy)
	}
	_ = c.Conn.Close()
}

// writeBatch writes batch to the socket in slices of at most writeSlice
// bytes, giving back their room in the queue, and counting the progress a
// waiting write looks for, after each; iov is scratch space.
func (c *limitConn) writeBatch(batch [][]byte, iov *[][]byte) error {
	s := &c.send
	n := 0
	write := func() error {
		// net.Buffers writes with writev on a TCP connection, and
		// reslices what it is given.
		bufs := net.Buffers(*iov)
		_, err := bufs.WriteTo(c.Conn)
		clear(*iov)
		*iov = (*iov)[:0]
		s.mu.Lock()
		s.pending -= n
		s.written++
		s.room.Broadcast()
		s.mu.Unlock()
		n = 0
		return err
	}
	for _, b := range batch {
		for len(b) > 0 {
			k := min(len(b), writeSlice-n)
			*iov = append(*iov, b[:k])
			n += k
			b = b[k:]
			if n == writeSlice {
				if err := write(); err != nil {
					return err
				}
			}
		}
	}
	if n == 0 {
		return nil
	}
	return write()
}

// linger ends a connection whose writes are all written as TCP would
// have it: it sends FIN, then reads and drops what the client still sends
// until the client closes its side or closeBy passes. Closing a socket
// with unread input sends RST instead, and a client that is still
// acknowledging what it reads (as it should) could then lose what it has
// not read yet, the DISCONNECT that says why included.
func (c *limitConn) linger(closeBy time.Time) {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	if c.Conn.SetReadDeadline(closeBy) != nil {
		return
	}
	_, _ = io.Copy(io.Discard, c.Conn)
}

// Close stops reading at once and lets the writer write what is queued
// (within closeFlushTimeout) before it closes the socket; it does not
// wait for that (see closed).
func (c *limitConn) Close() error {
	c.send.mu.Lock()
	c.closeLocked()
	c.send.mu.Unlock()
	return nil
}

// closeLocked is Close with c.send.mu held.
func (c *limitConn) closeLocked() {
	s := &c.send
	if s.closing {
		return
	}
	s.closing = true
	s.closeBy = time.Now().Add(s.flush)
	s.stopRead.Store(true)
	s.cond.Signal()
	s.room.Broadcast()
	_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	_ = c.Conn.SetWriteDeadline(s.closeBy)
}

// closed returns a channel closed once the writer has ended and the
// socket is closed.
func (c *limitConn) closed() <-chan struct{} {
	return c.send.done
}

// SetDeadline sets the read deadline and that of the writes to the socket
// (mochi's keep-alive deadline: 1.5 keep-alives after each packet read),
// unless the connection is closed.
func (c *limitConn) SetDeadline(t time.Time) error { return c.unlessClosing(c.Conn.SetDeadline, t) }

// SetReadDeadline sets the read deadline, unless the connection is
// closed.
func (c *limitConn) SetReadDeadline(t time.Time) error {
	return c.unlessClosing(c.Conn.SetReadDeadline, t)
}

// SetWriteDeadline sets the deadline of the writes to the socket, unless
// the connection is closed.
func (c *limitConn) SetWriteDeadline(t time.Time) error {
	return c.unlessClosing(c.Conn.SetWriteDeadline, t)
}

// unlessClosing sets a deadline with set, unless the connection is
// closing (its close set the deadlines it needs).
func (c *limitConn) unlessClosing(set func(time.Time) error, t time.Time) error {
	c.send.mu.Lock()
	defer c.send.mu.Unlock()
	if c.send.closing {
		return nil
	}
	return set(t)
}
