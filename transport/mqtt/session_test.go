package mqtt

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho/store/memory"
)

// sessionStore is what paho asks of a session store.
type sessionStore interface {
	Put(packetID uint16, packetType byte, w io.WriterTo) error
	Get(packetID uint16) (io.ReadCloser, error)
	Delete(id uint16) error
	Quarantine(id uint16) error
	List() ([]uint16, error)
	Reset() error
}

func storedBytes(t *testing.T, s sessionStore, id uint16) []byte {
	t.Helper()
	r, err := s.Get(id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPacketStoreAnswersAsPahosMemoryStore runs the same operations on
// packetStore and paho's memory store: the packets read back (what a
// resumed session sends again) and the order of List are the same.
func TestPacketStoreAnswersAsPahosMemoryStore(t *testing.T) {
	pub := func(id uint16, payload string) *packets.Publish {
		return &packets.Publish{Topic: "$a2a/v1/request/o/u/a", QoS: 1, PacketID: id, Payload: []byte(payload),
			Properties: &packets.Properties{CorrelationData: []byte("c"), ResponseTopic: "$a2a/v1/reply/o/u/r/x",
				User: []packets.User{{Key: "a2a-context-id", Value: "ctx"}}}}
	}
	for _, tc := range []struct {
		name    string
		ops     func(s sessionStore) error
		wantIDs []uint16
	}{
		{"puts listed in put order, not id order", func(s sessionStore) error {
			for _, id := range []uint16{9, 3, 7} {
				if err := s.Put(id, packets.PUBLISH, pub(id, "p")); err != nil {
					return err
				}
			}
			return nil
		}, []uint16{9, 3, 7}},
		{"a deleted packet is gone", func(s sessionStore) error {
			_ = s.Put(1, packets.PUBLISH, pub(1, "a"))
			_ = s.Put(2, packets.PUBLISH, pub(2, "b"))
			return s.Delete(1)
		}, []uint16{2}},
		{"a quarantined packet is gone", func(s sessionStore) error {
			_ = s.Put(1, packets.PUBLISH, pub(1, "a"))
			return s.Quarantine(1)
		}, []uint16{}},
		{"an id put again moves to the end", func(s sessionStore) error {
			_ = s.Put(1, packets.PUBLISH, pub(1, "a"))
			_ = s.Put(2, packets.PUBLISH, pub(2, "b"))
			return s.Put(1, packets.PUBLISH, pub(1, "c"))
		}, []uint16{2, 1}},
		{"reset forgets everything", func(s sessionStore) error {
			_ = s.Put(1, packets.PUBLISH, pub(1, "a"))
			return s.Reset()
		}, []uint16{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, paho := newPacketStore(), memory.New()
			if err := tc.ops(ours); err != nil {
				t.Fatal(err)
			}
			if err := tc.ops(paho); err != nil {
				t.Fatal(err)
			}
			gotIDs, _ := ours.List()
			pahoIDs, _ := paho.List()
			if !slices.Equal(gotIDs, tc.wantIDs) || !slices.Equal(pahoIDs, tc.wantIDs) {
				t.Fatalf("List: packetStore %v, paho %v, want %v", gotIDs, pahoIDs, tc.wantIDs)
			}
			for _, id := range gotIDs {
				if got, want := storedBytes(t, ours, id), storedBytes(t, paho, id); !bytes.Equal(got, want) {
					t.Fatalf("packet %d reads back as %q, paho's store as %q", id, got, want)
				}
				if _, err := packets.ReadPacket(bytes.NewReader(storedBytes(t, ours, id))); err != nil {
					t.Fatalf("packet %d does not parse: %v", id, err)
				}
			}
		})
	}
}

// TestPacketStoreRefusesUnknownIDs: Get and Delete of an identifier that
// was never put (or was deleted) are errors, as in paho's stores.
func TestPacketStoreRefusesUnknownIDs(t *testing.T) {
	s := newPacketStore()
	if _, err := s.Get(4); err == nil {
		t.Fatal("Get of an unknown id: no error")
	}
	if err := s.Delete(4); err == nil {
		t.Fatal("Delete of an unknown id: no error")
	}
	_ = s.Put(4, packets.PUBLISH, &packets.Publish{Topic: "t", QoS: 1, PacketID: 4})
	_ = s.Delete(4)
	if _, err := s.Get(4); err == nil {
		t.Fatal("Get after Delete: no error")
	}
}
