package mqtt

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/eclipse/paho.golang/paho/session/state"
)

// newSession returns the paho session state of one connection manager,
// with packetStores instead of paho's in-memory stores.
func newSession() *state.State {
	return state.New(newPacketStore(), newPacketStore())
}

// packetStore is where paho keeps the packets of a session that are not
// acknowledged yet (a QoS 1 publish until its PUBACK). paho's in-memory
// store encodes every packet into a new buffer when it is put, on the
// publishing goroutine, to read it back only if a resumed session has to
// send it again. packetStore keeps the packet itself and encodes it when it
// is read. That is the same bytes, because nothing in this package changes
// a packet or its payload once it is published: every publish is built,
// and its payload encoded, for that publish alone.
type packetStore struct {
	mu   sync.Mutex
	seq  uint64
	data map[uint16]storedPacket
}

type storedPacket struct {
	seq uint64 // order of Put, for List
	pkt io.WriterTo
}

func newPacketStore() *packetStore {
	return &packetStore{data: map[uint16]storedPacket{}}
}

// Put keeps the packet under its identifier.
func (s *packetStore) Put(id uint16, _ byte, pkt io.WriterTo) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.data[id] = storedPacket{seq: s.seq, pkt: pkt}
	return nil
}

// Get returns the packet's wire form.
func (s *packetStore) Get(id uint16) (io.ReadCloser, error) {
	s.mu.Lock()
	p, ok := s.data[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("mqtt: session store: packet %d not found", id)
	}
	var b bytes.Buffer
	if _, err := p.pkt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("mqtt: session store: packet %d: %w", id, err)
	}
	return io.NopCloser(&b), nil
}

// Delete forgets the packet; an unknown identifier is an error, as in
// paho's stores.
func (s *packetStore) Delete(id uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[id]; !ok {
		return fmt.Errorf("mqtt: session store: delete packet %d: not found", id)
	}
	delete(s.data, id)
	return nil
}

// Quarantine is called for a packet that could not be read back; there is
// nothing to keep it for.
func (s *packetStore) Quarantine(id uint16) error { return s.Delete(id) }

// List returns the identifiers in the order the packets were put.
func (s *packetStore) List() ([]uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uint16, 0, len(s.data))
	for id := range s.data {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uint16) int {
		return cmp.Compare(s.data[a].seq, s.data[b].seq)
	})
	return ids, nil
}

// Reset forgets every packet.
func (s *packetStore) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.data)
	return nil
}
