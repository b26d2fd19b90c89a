package inbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/internal/sealtest"
)

// secretPayload is a queued request carrying a push config's secrets.
func secretPayload(id string) []byte {
	return []byte(`{"message":{"messageId":"` + id + `","parts":[{"text":"hello"}]},"configuration":{"taskPushNotificationConfig":` +
		`{"url":"https://hooks.example/","token":"tok-5c0e-in-clear","authentication":{"scheme":"Bearer","credentials":"cred-91fd-in-clear"}}}}`)
}

// rawRecord reads the stored value of seq from a closed queue file.
func rawRecord(t *testing.T, path string, seq uint64) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucketRecords).Get(seqKey(seq)))
		return nil
	})
	return v
}

// formatOf reads the format of a closed queue file.
func formatOf(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var f uint64
	db.View(func(tx *bolt.Tx) error {
		f = binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(metaFormat))
		return nil
	})
	return f
}

// sealedBy says how a stored record's payload is kept: "clear", or the id
// of the key that sealed it.
func sealedBy(t *testing.T, v []byte) string {
	t.Helper()
	r, isSealed, err := decodeRecord(seqKey(binary.BigEndian.Uint64(v[len(v)-crcLen-8:])), v)
	if err != nil {
		t.Fatal(err)
	}
	if !isSealed {
		return "clear"
	}
	id, err := sealed.KeyID(r.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A store with a ring seals each payload (no secret in the file), reads it
// back intact, counts its clear length against the bounds, before and
// after a reopen, and marks its file format 3.
func TestPayloadsAreSealed(t *testing.T) {
	path := dbPath(t)
	keys := sealtest.NewRing(t, "k1")
	s, _ := openAt(t, path, BoltOptions{Keys: keys})
	r := msg("p1", "a")
	r.Payload = secretPayload("a")
	stored := mustEnqueue(t, s, r)
	check := func(s *Bolt) {
		t.Helper()
		got := all(t, s)
		if len(got) != 1 || !bytes.Equal(got[0].Payload, r.Payload) {
			t.Fatalf("read back %+v", got)
		}
		if l, ok, err := s.Lookup(bg, r.TaskID); !ok || err != nil || !bytes.Equal(l.Payload, r.Payload) {
			t.Fatalf("Lookup: %v %v", ok, err)
		}
		if st, _ := s.Stats(bg); st.Bytes != int64(len(r.Payload)) {
			t.Fatalf("Stats %+v, want the clear payload's %d bytes", st, len(r.Payload))
		}
	}
	check(s)
	s.Close()
	v := rawRecord(t, path, stored.Seq)
	if sealedBy(t, v) != "k1" || formatOf(t, path) != fileFormatSealed {
		t.Fatalf("stored %s in a file of format %d", sealedBy(t, v), formatOf(t, path))
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sealtest.AssertAbsent(t, "the file", file, "tok-5c0e-in-clear", "cred-91fd-in-clear", "hello")
	s, _ = openAt(t, path, BoltOptions{Keys: keys})
	check(s)
}

// A file written without a ring is read with one; its records stay in
// clear (they live no longer than their time to live), new ones are
// sealed. A store without a ring refuses a sealed record with ErrNoKeys,
// naming its Seq, and a store lacking its key with sealed.ErrUnknownKey;
// both still remove it. A file marked format 3 stays so when opened
// without a ring.
func TestClearAndSealedRecords(t *testing.T) {
	path := dbPath(t)
	s, _ := openAt(t, path, BoltOptions{})
	clear := mustEnqueue(t, s, msg("p1", "a"))
	s.Close()
	if formatOf(t, path) != fileFormat {
		t.Fatalf("a file without a ring is of format %d", formatOf(t, path))
	}
	k1 := sealtest.NewKey(t, "k1")
	s, _ = openAt(t, path, BoltOptions{Keys: sealtest.RingOf(t, k1)})
	sealedRec := mustEnqueue(t, s, msg("p1", "b"))
	if got := all(t, s); len(got) != 2 || string(got[0].Payload) != string(msg("p1", "a").Payload) || string(got[1].Payload) != string(msg("p1", "b").Payload) {
		t.Fatalf("read %+v", got)
	}
	s.Close()
	if a, b := sealedBy(t, rawRecord(t, path, clear.Seq)), sealedBy(t, rawRecord(t, path, sealedRec.Seq)); a != "clear" || b != "k1" {
		t.Fatalf("stored %s and %s", a, b)
	}

	for _, tc := range []struct {
		name string
		keys *sealed.Ring
		want error
	}{
		{"without a ring", nil, ErrNoKeys},
		{"without the key", sealtest.RingOf(t, sealtest.NewKey(t, "k2")), sealed.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openAt(t, path, BoltOptions{Keys: tc.keys})
			if st, _ := s.Stats(bg); st.Messages != 2 || st.Bytes != int64(len(msg("p1", "a").Payload)+len(msg("p1", "b").Payload)) {
				t.Fatalf("Stats %+v", st)
			}
			if _, err := s.Next(bg, 0, 10); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "seq 2") {
				t.Fatalf("Next: %v", err)
			}
			if _, _, err := s.Lookup(bg, "task-b"); !errors.Is(err, tc.want) {
				t.Fatalf("Lookup: %v", err)
			}
			if r, ok, err := s.Lookup(bg, "task-a"); !ok || err != nil || string(r.Payload) != string(msg("p1", "a").Payload) {
				t.Fatalf("Lookup of the clear record: %v %v", ok, err)
			}
			s.Close()
		})
	}
	if formatOf(t, path) != fileFormatSealed {
		t.Fatalf("opened without a ring, the file became format %d", formatOf(t, path))
	}
	s, _ = openAt(t, path, BoltOptions{})
	removed, err := s.Remove(bg, []uint64{sealedRec.Seq})
	if err != nil || len(removed) != 1 || removed[0].Seq != sealedRec.Seq || removed[0].Payload != nil || removed[0].TaskID != "task-b" {
		t.Fatalf("Remove of a record it cannot open: %+v %v", removed, err)
	}
	if got := all(t, s); len(got) != 1 || got[0].Seq != clear.Seq {
		t.Fatalf("left %+v", got)
	}
}

// Rotation: records sealed with k1 open while k1 is in the ring; a record
// written again (Untake) is sealed with the current key k2, and opens once
// k1 is gone.
func TestRotation(t *testing.T) {
	path := dbPath(t)
	k1, k2 := sealtest.NewKey(t, "k1"), sealtest.NewKey(t, "k2")
	s, _ := openAt(t, path, BoltOptions{Keys: sealtest.RingOf(t, k1)})
	a, b := mustEnqueue(t, s, msg("p1", "a")), mustEnqueue(t, s, msg("p1", "b"))
	s.Close()

	s, _ = openAt(t, path, BoltOptions{Keys: sealtest.RingOf(t, k2, k1)})
	got := all(t, s)
	if len(got) != 2 || string(got[0].Payload) != string(msg("p1", "a").Payload) {
		t.Fatalf("records of k1 read with both: %+v", got)
	}
	if _, _, err := s.Take(bg, []Taken{{Seq: a.Seq, ReplayKey: "obj-a", Until: t0.Add(2 * 3600e9)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Untake(bg, []Record{got[0]}, []string{"obj-a"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if x, y := sealedBy(t, rawRecord(t, path, a.Seq)), sealedBy(t, rawRecord(t, path, b.Seq)); x != "k2" || y != "k1" {
		t.Fatalf("after Untake, sealed with %s and %s", x, y)
	}

	s, _ = openAt(t, path, BoltOptions{Keys: sealtest.RingOf(t, k2)})
	if r, ok, err := s.Lookup(bg, "task-a"); !ok || err != nil || string(r.Payload) != string(msg("p1", "a").Payload) {
		t.Fatalf("the record sealed again, without k1: %v %v", ok, err)
	}
	if _, _, err := s.Lookup(bg, "task-b"); !errors.Is(err, sealed.ErrUnknownKey) {
		t.Fatalf("a record of k1 without k1: %v", err)
	}
}

// A sealed payload opens only in its own record: moved to another, it
// fails with sealed.ErrOpen.
func TestASealedPayloadIsBoundToItsRecord(t *testing.T) {
	path := dbPath(t)
	keys := sealtest.NewRing(t, "k1")
	s, _ := openAt(t, path, BoltOptions{Keys: keys})
	a, b := mustEnqueue(t, s, msg("p1", "a")), mustEnqueue(t, s, msg("p2", "b"))
	s.Close()
	ra, _, err := decodeRecord(seqKey(a.Seq), rawRecord(t, path, a.Seq))
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := decodeRecord(seqKey(b.Seq), rawRecord(t, path, b.Seq))
	if err != nil {
		t.Fatal(err)
	}
	rb.Payload = ra.Payload // a's sealed payload in b's record
	enc, err := encodeRecord(nil, &rb, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc[0] = recordSealed
	writeBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).Put(seqKey(b.Seq), sealRecord(enc, b.Seq))
	})
	s, rec := openAt(t, path, BoltOptions{Keys: keys})
	if rec.Unreadable != 0 {
		t.Fatalf("the moved record was dropped as damaged: %+v", rec)
	}
	if _, _, err := s.Lookup(bg, "task-b"); !errors.Is(err, sealed.ErrOpen) {
		t.Fatalf("Lookup: %v", err)
	}
}

// A file that may hold sealed records stays marked so (format 3) when a
// store without a ring repairs it (a record failing its checksum is
// dropped) or salvages it (damaged: its sealed records are copied to a
// fresh file); the sealed records it keeps open with the key.
func TestAFileOfSealedRecordsStaysMarked(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	path := dbPath(t)
	s, _ := openAt(t, path, BoltOptions{Keys: keys})
	for i := range 200 {
		r := msg("p1", string(rune('a'+i%26))+strings.Repeat("x", i/26))
		r.Payload = bytes.Repeat([]byte("y"), 200)
		mustEnqueue(t, s, r)
	}
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("repaired", func(t *testing.T) {
		p := dbPath(t)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		writeBolt(t, p, func(tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bucketRecords).Get(seqKey(7)))
			v[len(v)-1] ^= 1
			return tx.Bucket(bucketRecords).Put(seqKey(7), v)
		})
		s, rec := openAt(t, p, BoltOptions{})
		if rec.Unreadable != 1 {
			t.Fatalf("recovery %+v, want the one record dropped", rec)
		}
		s.Close()
		if f := formatOf(t, p); f != fileFormatSealed {
			t.Fatalf("format %d after the repair", f)
		}
	})

	t.Run("salvaged", func(t *testing.T) {
		p := dbPath(t)
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		pageSize := db.Info().PageSize
		var hwm int64
		db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil })
		db.Close()
		if err := os.WriteFile(p, data[:hwm-int64(pageSize)], 0o600); err != nil {
			t.Fatal(err)
		}
		s, rec := openAt(t, p, BoltOptions{})
		if !rec.Damaged || rec.Records == 0 {
			t.Fatalf("recovery %+v, want a damaged file with records salvaged", rec)
		}
		s.Close()
		if f := formatOf(t, p); f != fileFormatSealed {
			t.Fatalf("format %d after the salvage", f)
		}
		s, _ = openAt(t, p, BoltOptions{Keys: keys})
		if got := all(t, s); len(got) != rec.Records || !bytes.Equal(got[0].Payload, bytes.Repeat([]byte("y"), 200)) {
			t.Fatalf("%d records read with the key, %d salvaged", len(got), rec.Records)
		}
	})
}
