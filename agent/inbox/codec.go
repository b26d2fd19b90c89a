package inbox

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"time"

	"github.com/a2abind/a2abind/agent/sealed"
)

// The stored form of a record (the value under its key, the big-endian
// Seq), version 1, or 2 for a record whose payload is sealed:
//
//	byte      version (1, or 2)
//	uvarint   len(Peer), then Peer
//	uvarint   len(MessageID), then MessageID
//	uvarint   len(TaskID), then TaskID
//	uvarint   len(ContextID), then ContextID
//	uvarint   len(Payload), then Payload (version 2: sealed)
//	12 bytes  Enqueued (stamp)
//	12 bytes  Expires (stamp)
//	8 bytes   Seq, big-endian (the key, repeated)
//	4 bytes   CRC-32C (Castagnoli) of everything before it, big-endian
//
// A store given a key ring (BoltOptions.Keys) writes version 2: the
// payload is a value of package sealed (AES-256-GCM under the ring's
// current key), bound to the record's Peer, MessageID, TaskID and
// ContextID (payloadAAD). Its plaintext's length, which the record counts
// against the bounds, is read without opening it (sealed.PlainLen).
//
// A stamp is the Unix time in seconds (int64) then its nanoseconds
// (uint32), both big-endian, so that any time.Time round-trips to the
// nanosecond. The checksum and the repeated Seq let a record read from a
// damaged file be trusted or dropped: bbolt does not checksum its pages.
//
// The replay cache is stored as a log (bucketReplayLog): key the entry's
// counter, increasing from entry to entry (8 bytes, big-endian), value
//
//	16 bytes  the replay key's hash (replayHashOf)
//	12 bytes  Until (stamp)
//	4 bytes   CRC-32C of the counter's 8 bytes then everything before it,
//	          big-endian
//
// The file's layout is versioned by fileFormat, in the meta bucket.
const (
	recordVersion = 1
	recordSealed  = 2
)

const (
	stampLen    = 12
	crcLen      = 4
	recordTail  = 2*stampLen + 8 + crcLen
	logEntryLen = replayHashLen + stampLen + crcLen
)

// fileFormat is the layout of a queue file, stored under metaFormat:
// format 2 has the buckets records, replayLog and meta. Format 3 is format
// 2 whose records may be of version 2 (a sealed payload): a store given a
// key ring marks its file so, and earlier versions, which read format 2
// alone, refuse it (ErrFormat) rather than drop its sealed records as
// damaged. Format 1, an earlier layout that kept the replay cache under
// the keys themselves (buckets replay and replayOrder) and stored no
// format, is not read: OpenBolt reports it (ErrFormat) and leaves the
// file alone.
const (
	fileFormat       = 2
	fileFormatSealed = 3
)

// maxRecord is the largest stored record: bbolt's largest value.
const maxRecord = 1<<31 - 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errBadRecord = errors.New("inbox: malformed record")

// appendStamp appends t as a stamp.
func appendStamp(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix()))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

// parseStamp reads a stamp from the first stampLen bytes of b.
func parseStamp(b []byte) (time.Time, bool) {
	sec := int64(binary.BigEndian.Uint64(b))
	nsec := binary.BigEndian.Uint32(b[8:])
	if nsec >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(sec, int64(nsec)), true
}

// moment is a time as the replay cache keeps it: a stamp's Unix seconds
// and nanoseconds.
type moment struct {
	sec  int64
	nsec uint32
}

func momentOf(t time.Time) moment { return moment{t.Unix(), uint32(t.Nanosecond())} }

// after reports whether m is later than o.
func (m moment) after(o moment) bool { return m.sec > o.sec || m.sec == o.sec && m.nsec > o.nsec }

// payloadAAD binds a sealed payload to its record: it does not open in
// another.
func payloadAAD(r *Record) []byte {
	return sealed.AAD("a2abind/inbox/payload/v1", r.Peer, r.MessageID, r.TaskID, r.ContextID)
}

// encodedLen is the length of r's stored form, its payload sealed with
// keys (nil: in clear).
func encodedLen(r *Record, keys *sealed.Ring) int {
	n := 1 + recordTail
	payload := len(r.Payload)
	if keys != nil {
		payload += keys.Overhead()
	}
	for _, l := range [...]int{len(r.Peer), len(r.MessageID), len(r.TaskID), len(r.ContextID), payload} {
		n += uvarintLen(uint64(l)) + l
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// encodeRecord appends to b (from its start) r's stored form without its
// Seq and checksum, with room for them: sealRecord completes it once the
// Seq is known. With keys, the payload is sealed (version 2).
func encodeRecord(b []byte, r *Record, keys *sealed.Ring) ([]byte, error) {
	if n := encodedLen(r, keys); cap(b) < n {
		b = make([]byte, 0, n)
	}
	payload, version := r.Payload, byte(recordVersion)
	if keys != nil {
		var err error
		if payload, err = SealPayload(keys, r); err != nil {
			return nil, err
		}
		version = recordSealed
	}
	b = append(b[:0], version)
	for _, s := range [...]string{r.Peer, r.MessageID, r.TaskID, r.ContextID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = append(b, payload...)
	b = appendStamp(b, r.Enqueued)
	return appendStamp(b, r.Expires), nil
}

// sealRecord appends seq and the checksum to a record from encodeRecord.
func sealRecord(b []byte, seq uint64) []byte {
	b = binary.BigEndian.AppendUint64(b, seq)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// seqKey is the key of the record of seq.
func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// decodeRecord reads a stored record, checking its checksum and that it is
// the record of key. The result shares no memory with b. For a record of
// version 2, isSealed is set and the Payload is the sealed value
// (OpenPayload opens it).
func decodeRecord(key, b []byte) (r Record, isSealed bool, err error) {
	if len(key) != 8 || len(b) < 1+5+recordTail || b[0] != recordVersion && b[0] != recordSealed {
		return Record{}, false, errBadRecord
	}
	isSealed = b[0] == recordSealed
	body := b[:len(b)-crcLen]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
		return Record{}, false, errBadRecord
	}
	rest := body[1:]
	var fields [5][]byte
	for i := range fields {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return Record{}, false, errBadRecord
		}
		fields[i], rest = rest[n:n+int(l)], rest[n+int(l):]
	}
	if len(rest) != 2*stampLen+8 {
		return Record{}, false, errBadRecord
	}
	seq := binary.BigEndian.Uint64(rest[2*stampLen:])
	if seq != binary.BigEndian.Uint64(key) {
		return Record{}, false, errBadRecord
	}
	enq, ok1 := parseStamp(rest)
	exp, ok2 := parseStamp(rest[stampLen:])
	if !ok1 || !ok2 {
		return Record{}, false, errBadRecord
	}
	r.Seq = seq
	r.Peer, r.MessageID, r.TaskID, r.ContextID = string(fields[0]), string(fields[1]), string(fields[2]), string(fields[3])
	r.Payload = append([]byte(nil), fields[4]...)
	r.Enqueued, r.Expires = enq, exp
	if isSealed {
		if _, err := sealed.PlainLen(r.Payload); err != nil {
			return Record{}, false, errBadRecord
		}
	}
	return r, isSealed, nil
}

// SealPayload returns r's payload sealed with keys, bound to r (its Peer,
// MessageID, TaskID and ContextID): it does not open in another record.
// The stores of this module (the bbolt one, and pginbox) store payloads
// so with a key ring, and OpenPayload reverses it. With keys nil it
// returns an error matching ErrNoKeys.
func SealPayload(keys *sealed.Ring, r *Record) ([]byte, error) {
	if keys == nil {
		return nil, ErrNoKeys
	}
	return keys.Seal(r.Payload, payloadAAD(r))
}

// OpenPayload opens with keys r's payload, sealed by SealPayload, in
// place. With keys nil it returns ErrNoKeys; a payload that does not open
// is the error of sealed.Ring.Open and leaves r as it was.
func OpenPayload(r *Record, keys *sealed.Ring) error {
	if keys == nil {
		return ErrNoKeys
	}
	plain, err := keys.Open(r.Payload, payloadAAD(r))
	if err != nil {
		return err
	}
	r.Payload = plain
	return nil
}

// storedSize is what a record read from the file counts against the
// bounds: its payload's length, in clear.
func storedSize(r *Record, isSealed bool) int64 {
	if !isSealed {
		return r.Size()
	}
	n, _ := sealed.PlainLen(r.Payload) // checked by decodeRecord
	return int64(n)
}

// encodeLogEntry is the stored value of the replay log entry of counter
// ctr: the key of hash h, kept until until.
func encodeLogEntry(ctr uint64, h replayHash, until moment) []byte {
	b := make([]byte, 0, logEntryLen)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(until.sec))
	b = binary.BigEndian.AppendUint32(b, until.nsec)
	return binary.BigEndian.AppendUint32(b, logSum(ctr, b))
}

// logSum is the checksum of the log entry of counter ctr whose value,
// without its checksum, is b.
func logSum(ctr uint64, b []byte) uint32 {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], ctr)
	return crc32.Update(crc32.Checksum(k[:], castagnoli), castagnoli, b)
}

// decodeLogEntry reads a replay log entry, checking its checksum.
func decodeLogEntry(key, v []byte) (ctr uint64, h replayHash, until moment, ok bool) {
	if len(key) != 8 || len(v) != logEntryLen {
		return 0, h, until, false
	}
	ctr = binary.BigEndian.Uint64(key)
	body := v[:logEntryLen-crcLen]
	if logSum(ctr, body) != binary.BigEndian.Uint32(v[logEntryLen-crcLen:]) {
		return 0, h, until, false
	}
	copy(h[:], body)
	until = moment{int64(binary.BigEndian.Uint64(body[replayHashLen:])), binary.BigEndian.Uint32(body[replayHashLen+8:])}
	if until.nsec >= 1e9 {
		return 0, h, until, false
	}
	return ctr, h, until, true
}

// clampCount converts a stored counter, which may be damaged, to an int.
func clampCount(v []byte) (int, bool) {
	if len(v) != 8 {
		return 0, false
	}
	n := binary.BigEndian.Uint64(v)
	if n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}
