package inbox

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"time"
)

// The stored form of a record (the value under its key, the big-endian
// Seq), version 1:
//
//	byte      version (1)
//	uvarint   len(Peer), then Peer
//	uvarint   len(MessageID), then MessageID
//	uvarint   len(TaskID), then TaskID
//	uvarint   len(ContextID), then ContextID
//	uvarint   len(Payload), then Payload
//	12 bytes  Enqueued (stamp)
//	12 bytes  Expires (stamp)
//	8 bytes   Seq, big-endian (the key, repeated)
//	4 bytes   CRC-32C (Castagnoli) of everything before it, big-endian
//
// A stamp is the Unix time in seconds (int64) then its nanoseconds
// (uint32), both big-endian, so that any time.Time round-trips to the
// nanosecond. The checksum and the repeated Seq let a record read from a
// damaged file be trusted or dropped: bbolt does not checksum its pages.
//
// The value of a replay key is its Until stamp (12 bytes) then the CRC-32C
// of the key followed by the stamp (4 bytes).
const recordVersion = 1

const (
	stampLen   = 12
	crcLen     = 4
	recordTail = 2*stampLen + 8 + crcLen
	replayLen  = stampLen + crcLen
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

// sortStamp is t as a key that sorts in time order: the seconds with the
// sign bit flipped, then the nanoseconds.
func sortStamp(t time.Time) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, stampLen), uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

// encodedLen is the length of r's stored form.
func encodedLen(r *Record) int {
	n := 1 + recordTail
	for _, l := range [...]int{len(r.Peer), len(r.MessageID), len(r.TaskID), len(r.ContextID), len(r.Payload)} {
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
// Seq is known.
func encodeRecord(b []byte, r *Record) []byte {
	if n := encodedLen(r); cap(b) < n {
		b = make([]byte, 0, n)
	}
	b = append(b[:0], recordVersion)
	for _, s := range [...]string{r.Peer, r.MessageID, r.TaskID, r.ContextID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Payload)))
	b = append(b, r.Payload...)
	b = appendStamp(b, r.Enqueued)
	return appendStamp(b, r.Expires)
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
// the record of key. The result shares no memory with b.
func decodeRecord(key, b []byte) (Record, error) {
	if len(key) != 8 || len(b) < 1+5+recordTail || b[0] != recordVersion {
		return Record{}, errBadRecord
	}
	body := b[:len(b)-crcLen]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
		return Record{}, errBadRecord
	}
	var r Record
	rest := body[1:]
	var fields [5][]byte
	for i := range fields {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return Record{}, errBadRecord
		}
		fields[i], rest = rest[n:n+int(l)], rest[n+int(l):]
	}
	if len(rest) != 2*stampLen+8 {
		return Record{}, errBadRecord
	}
	seq := binary.BigEndian.Uint64(rest[2*stampLen:])
	if seq != binary.BigEndian.Uint64(key) {
		return Record{}, errBadRecord
	}
	enq, ok1 := parseStamp(rest)
	exp, ok2 := parseStamp(rest[stampLen:])
	if !ok1 || !ok2 {
		return Record{}, errBadRecord
	}
	r.Seq = seq
	r.Peer, r.MessageID, r.TaskID, r.ContextID = string(fields[0]), string(fields[1]), string(fields[2]), string(fields[3])
	r.Payload = append([]byte(nil), fields[4]...)
	r.Enqueued, r.Expires = enq, exp
	return r, nil
}

// encodeReplay is the stored value of a replay key.
func encodeReplay(key []byte, until time.Time) []byte {
	b := appendStamp(make([]byte, 0, replayLen), until)
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, b)
	return binary.BigEndian.AppendUint32(b, sum)
}

// decodeReplay reads the stored value of a replay key.
func decodeReplay(key, v []byte) (time.Time, bool) {
	if len(v) != replayLen {
		return time.Time{}, false
	}
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, v[:stampLen])
	if sum != binary.BigEndian.Uint32(v[stampLen:]) {
		return time.Time{}, false
	}
	return parseStamp(v)
}

// replayOrderKey is the key of a replay key in the index by time: the
// sortable Until, then the key.
func replayOrderKey(key []byte, until time.Time) []byte {
	return append(sortStamp(until), key...)
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
