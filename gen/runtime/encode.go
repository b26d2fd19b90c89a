package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// Word masks of safeWord: every byte 0x01, every byte 0x80.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialBytes returns the top bit of each byte of w that needs escaping
// or a UTF-8 check (below 0x20, '"', '\\', from 0x80), the others clear.
// It is the classic test for a byte below n, (x - n·0x01…) &^ x & 0x80…,
// applied to w (n = 0x20) and, for a zero byte, to w xor '"' and w xor
// '\\'; a borrow can flag a byte wrongly only above one flagged rightly, so
// the lowest flagged byte is exact.
func specialBytes(w uint64) uint64 {
	q := w ^ ('"' * lsb)
	bs := w ^ ('\\' * lsb)
	return ((w-0x20*lsb)&^w | (q-lsb)&^q | (bs-lsb)&^bs | w) & msb
}

// plainUntil returns the index of the first byte of b at or after i that
// needs escaping or a UTF-8 check (below 0x20, '"', '\\', from 0x80); from
// len(b)-7 on it returns the index reached, for the caller to check byte by
// byte. Where the processor offers it (scan_amd64.s) sixteen bytes are read
// at a time, then plainUntilWords reads the rest.
func plainUntil(b []byte, i int) int {
	if len(b)-i >= 16 && haveVectorScan {
		i = plainUntilVector(b, i)
		if i < len(b) && !plainByte(b[i]) {
			return i
		}
	}
	return plainUntilWords(b, i)
}

// plainUntilWords returns the index of the first byte of b at or after i that
// needs escaping or a UTF-8 check, reading 32 bytes at a time while none
// is found and then eight; from len(b)-7 on it returns the index reached,
// for the caller to check byte by byte. (A word whose specialBytes is zero
// holds no such byte, so the four words' results may be tested together.)
func plainUntilWords(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	s := b[i:]
	for len(s) >= 32 {
		w0 := binary.LittleEndian.Uint64(s)
		w1 := binary.LittleEndian.Uint64(s[8:])
		w2 := binary.LittleEndian.Uint64(s[16:])
		w3 := binary.LittleEndian.Uint64(s[24:])
		if specialBytes(w0)|specialBytes(w1)|specialBytes(w2)|specialBytes(w3) != 0 {
			break
		}
		s = s[32:]
	}
	for len(s) >= 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(s)); m != 0 {
			return len(b) - len(s) + bits.TrailingZeros64(m)>>3
		}
		s = s[8:]
	}
	return len(b) - len(s)
}

// PlainUntil returns the index of the first byte of s at or after i that
// AppendString must escape or check as UTF-8 (below 0x20, '"', '\\', from
// 0x80), reading many bytes at a time; from len(s)-7 on it may return the
// index reached, for the caller to check byte by byte. It is the scan
// AppendString itself runs, for this module's estimates of encoded sizes.
func PlainUntil(s string, i int) int { return plainUntilString(s, i) }

// plainUntilString is plainUntil over the bytes of s, read in place.
func plainUntilString(s string, i int) int {
	if len(s) == 0 {
		return i
	}
	return plainUntil(unsafe.Slice(unsafe.StringData(s), len(s)), i)
}

// stringHeadroom is what AppendString reserves past a long string for the
// escapes it may add and for what the caller appends after it: the output
// grows once, to about its final size, instead of by doubling.
func stringHeadroom(n int) int { return n/16 + 512 }

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD and
// U+2028 / U+2029 are escaped, as encoding/json does; <, > and & are kept.
// Runs of bytes that need no escape are copied in one append, found eight
// bytes at a time.
func AppendString(b []byte, s string) []byte {
	if len(s) >= 1024 && cap(b)-len(b) < len(s)+2 {
		b = slices.Grow(b, len(s)+2+stringHeadroom(len(s)))
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i = plainUntilString(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func AppendBytes(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// As encoding/json: e-07 becomes e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendAny appends a free JSON value (protobuf Struct or Value) the way
// encoding/json marshals it, without HTML escaping.
func AppendAny(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// AppendRaw appends raw JSON, or null when it is empty.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	if !json.Valid(raw) {
		return b, &SyntaxError{Msg: "raw value is not JSON"}
	}
	return append(b, raw...), nil
}

// CloneAny deep-copies a free JSON value as decoded (maps, slices and
// scalars).
func CloneAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneObject(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CloneAny(e)
		}
		return out
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	case []byte:
		return append([]byte(nil), x...)
	}
	return v
}

// CloneObject deep-copies a free JSON object (protobuf Struct).
func CloneObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = CloneAny(v)
	}
	return out
}
