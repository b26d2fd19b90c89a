package mqtt

import (
	"bufio"
	"net"
)

// readBufferSize is the size of a connection's read buffer: a typical A2A
// request or reply, with its fixed header, fits in one read.
const readBufferSize = 8 << 10

// bufferedTCP is a TCP connection whose reads go through a buffer. paho
// reads a packet in several small reads (the first byte, the length one
// byte at a time, then the rest), each a system call on a bare connection;
// through the buffer a packet that arrived whole costs one. Writes are the
// TCP connection's own: the embedded *net.TCPConn keeps the vectored write
// paho's net.Buffers rely on (one writev per packet).
type bufferedTCP struct {
	*net.TCPConn
	r *bufio.Reader
}

// newBufferedTCP wraps c.
func newBufferedTCP(c *net.TCPConn) *bufferedTCP {
	return &bufferedTCP{TCPConn: c, r: bufio.NewReaderSize(c, readBufferSize)}
}

// Read reads from the buffer, refilling it from the connection when empty.
func (c *bufferedTCP) Read(p []byte) (int, error) { return c.r.Read(p) }
