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
// The replay cache is stored as a log (bucketReplayLog): key the entry's
// counter, increasing from entry to entry (8 bytes, big-endian), value
//
//	16 bytes  the replay key's hash (replayHashOf)
//	12 bytes  Until (stamp)
//	4 bytes   CRC-32C of the counter's 8 bytes then everything before it,
//	          big-endian
//
// The file's layout is versioned by fileFormat, in the meta bucket.
const recordVersion = 1

const (
	stampLen    = 12
	crcLen      = 4
	recordTail  = 2*stampLen + 8 + crcLen
	logEntryLen = replayHashLen + stampLen + crcLen
)

// fileFormat is the layout of a queue file, stored under metaFormat:
// format 2 has the buckets records, replayLog and meta. Format 1, an
// earlier layout that kept the replay cache under the keys themselves
// (buckets replay and replayOrder) and stored no format, is not read:
// OpenBolt reports it (ErrFormat) and leaves the file alone.
const fileFormat = 2

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
