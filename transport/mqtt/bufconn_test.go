package mqtt

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/eclipse/paho.golang/packets"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// countingReader counts the reads that reach the socket.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func publishPacket(topic string, size int) *packets.ControlPacket {
	cp := packets.NewControlPacket(packets.PUBLISH)
	p := cp.Content.(*packets.Publish)
	p.Topic, p.QoS, p.PacketID = topic, 1, 7
	p.Properties = &packets.Properties{CorrelationData: []byte("corr"), ResponseTopic: "$a2a/v1/reply/o/u/r/x",
		User: []packets.User{{Key: "a2a-context-id", Value: "ctx"}}}
	p.Payload = bytes.Repeat([]byte{'x'}, size)
	return cp
}

func pubackPacket(id uint16) *packets.ControlPacket {
	cp := packets.NewControlPacket(packets.PUBACK)
	cp.Content.(*packets.Puback).PacketID = id
	return cp
}

// TestBufferedConnReadsWholePacketsInOneRead shows the point of the read
// buffer: packets that arrived together cost one read from the socket
// instead of paho's several per packet, and packets larger than the buffer
// or split across segments still arrive intact.
func TestBufferedConnReadsWholePacketsInOneRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkts []*packets.ControlPacket
		// split writes the encoded packets in two halves, the second from
		// another goroutine while the reader may already be waiting.
		split    bool
		maxReads int
	}{
		{name: "one publish", pkts: []*packets.ControlPacket{publishPacket("a", 300)}, maxReads: 1},
		{name: "a publish and its puback together", pkts: []*packets.ControlPacket{publishPacket("a", 300), pubackPacket(7)}, maxReads: 1},
		{name: "ten packets in one segment", pkts: func() []*packets.ControlPacket {
			var out []*packets.ControlPacket
			for i := range 10 {
				out = append(out, publishPacket("t", 100*i))
			}
			return out
		}(), maxReads: 1},
		{name: "a publish larger than the buffer", pkts: []*packets.ControlPacket{publishPacket("big", 3*readBufferSize)}, maxReads: 64},
		{name: "a publish split across two writes", pkts: []*packets.ControlPacket{publishPacket("s", 1000), pubackPacket(9)}, split: true, maxReads: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			var wire bytes.Buffer
			for _, p := range tc.pkts {
				if _, err := p.WriteTo(&wire); err != nil {
					t.Fatal(err)
				}
			}
			want := wire.Bytes()
			if tc.split {
				if _, err := server.Write(want[:len(want)/2]); err != nil {
					t.Fatal(err)
				}
				go func() { _, _ = server.Write(want[len(want)/2:]) }()
			} else if _, err := server.Write(want); err != nil {
				t.Fatal(err)
			}
			counter := &countingReader{r: client}
			bc := newBufferedTCP(client, nil)
			bc.r.Reset(counter)
			for i, p := range tc.pkts {
				got, err := packets.ReadPacket(bc)
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				var a, b bytes.Buffer
				if _, err := p.WriteTo(&a); err != nil {
					t.Fatal(err)
				}
				if _, err := got.WriteTo(&b); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("packet %d: read back %d bytes that differ from the %d written", i, b.Len(), a.Len())
				}
			}
			if counter.reads > tc.maxReads {
				t.Fatalf("%d packets took %d reads from the socket, want at most %d", len(tc.pkts), counter.reads, tc.maxReads)
			}
		})
	}
}

// TestBufferedConnWritesGoToTheSocket: writes bypass the buffer, with
// net.Buffers (as paho writes a packet) and plain Write alike.
func TestBufferedConnWritesGoToTheSocket(t *testing.T) {
	client, server := tcpPair(t)
	bc := newBufferedTCP(client, nil)
	bufs := net.Buffers{[]byte("ab"), []byte("cd"), []byte("ef")}
	if _, err := bufs.WriteTo(bc); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Write([]byte("gh")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if _, err := io.ReadFull(server, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != "abcdefgh" {
		t.Fatalf("peer read %q, want abcdefgh", got)
	}
}
