package runtime

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

// Decoder reads JSON directly into generated types. It records type
// mismatches as violations (and skips the offending value) instead of stopping,
// so that every problem of a payload can be listed; only a syntax error stops
// it. A Decoder must not be copied once it has read a value: the strings it
// decoded may share its chunk (see keep).
type Decoder struct {
	data  []byte
	pos   int
	depth int
	v     *Validator
	// own holds the violations of a checking decoder, whose v is nil (see
	// Check).
	own Validator
	// itemBound and stopAtViolation: see BoundItems.
	itemBound       int
	stopAtViolation bool
	syntax          *SyntaxError
	scratch         []byte
	// expect are long strings the document may hold again (see Expect).
	expect []string
	// chunk holds the bytes of the short strings decoded so far, one after
	// another; the strings point into it. Bytes once written are never
	// written again: a full chunk is left to its strings and a new one
	// made (see keep).
	chunk []byte
	// required asks the decoder to report required members that the decoded
	// Go value cannot show as missing (numbers, booleans, maps).
	required bool
	// alias lets strings point into data instead of being copied: set when
	// the decoded value never outlives the call (Validate<Type>JSON, which
	// keeps nothing), so that checking bytes costs no string allocation.
	// Then free JSON (Object, Value) is checked and skipped rather than
	// built, since no rule of the schema reads inside it; KeptValue builds
	// it for the members whose check does.
	alias bool
	// inScratch says the last rawString result lives in scratch, which the
	// next string overwrites: it is always copied.
	inScratch bool
	// fresh says the last rawString result is a buffer slowString made for
	// that string alone (a long one), which String may keep.
	fresh bool
	// below holds the steps from the path handed to skipAt or anyValue to
	// the value they read now. The steps are kept here rather than chained
	// as Paths, so that the caller's Path, which these recursive functions
	// only read, stays on the caller's stack.
	// belowN steps: the first ones in belowBuf, so that shallow free JSON
	// costs no allocation of its own, the rest in belowMore. (An index
	// rather than a slice of belowBuf, which would point into the Decoder
	// and make a caller's Decoder escape to the heap.)
	belowN    int
	belowBuf  [8]step
	belowMore []step
}

// push adds s to the steps below the current path.
func (d *Decoder) push(s step) {
	if d.belowN < len(d.belowBuf) {
		d.belowBuf[d.belowN] = s
	} else {
		d.belowMore = append(d.belowMore[:d.belowN-len(d.belowBuf)], s)
	}
	d.belowN++
}

// stepAt returns step i below the current path.
func (d *Decoder) stepAt(i int) step {
	if i < len(d.belowBuf) {
		return d.belowBuf[i]
	}
	return d.belowMore[i-len(d.belowBuf)]
}

// step is one step below a path: a member key, or an array index when key
// is "" and index is not negative.
type step struct {
	key   string
	index int
}

// duplicateBelow records that the member at the steps from base on, below
// p, appeared more than once in its object.
func (d *Decoder) duplicateBelow(p *Path, base int) {
	if d.Validator().full() {
		d.Validator().omitted++
		return
	}
	var b strings.Builder
	p.write(&b)
	last := ""
	for i := base; i < d.belowN; i++ {
		s := d.stepAt(i)
		b.WriteByte('/')
		if s.key == "" && s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		writeKey(&b, s.key)
		last = s.key
	}
	d.Validator().violations = append(d.Validator().violations, Violation{Pointer: b.String(), Rule: "duplicate", Message: "member " + strconv.Quote(last) + " appears more than once"})
}

func (d *Decoder) fail(msg string) {
	if d.syntax == nil {
		d.syntax = &SyntaxError{Offset: d.pos, Msg: msg}
	}
	d.pos = len(d.data)
}

func (d *Decoder) OK() bool { return d.syntax == nil }

func (d *Decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value, or 0 at the end.
func (d *Decoder) Peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// end checks that only white space follows the top-level value.
func (d *Decoder) end() {
	if !d.OK() {
		return
	}
	d.ws()
	if d.pos != len(d.data) {
		d.fail("invalid character after top-level value")
	}
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	}
	return "number"
}

// mismatch records a type violation and skips the value.
func (d *Decoder) Mismatch(p *Path, want string) {
	c := d.Peek()
	if c == 0 {
		d.fail("unexpected end of input")
		return
	}
	if d.Validator().full() {
		// Counted, with no message built for it.
		d.Validator().omitted++
	} else {
		d.Validator().Add(p, "type", "got "+kindOf(c)+", want "+want)
	}
	d.skipAt(p)
}

// openObject consumes '{' or, for another kind of value, records a type
// violation, skips it and reports false.
func (d *Decoder) OpenObject(p *Path) bool {
	if d.Peek() != '{' {
		d.Mismatch(p, "object")
		return false
	}
	d.pos++
	d.depth++
	if d.depth > maxDepth {
		d.fail("exceeded max depth")
		return false
	}
	return true
}

// nextKey moves to the next member of the object opened last and returns its
// key (valid until the next call), or reports false at the closing brace.
func (d *Decoder) NextKey(first *bool) ([]byte, bool) {
	if !d.OK() || d.stopped() {
		return nil, false
	}
	c := d.Peek()
	if *first {
		*first = false
		if c == '}' {
			d.pos++
			d.depth--
			return nil, false
		}
	} else {
		switch c {
		case '}':
			d.pos++
			d.depth--
			return nil, false
		case ',':
			d.pos++
			c = d.Peek()
		default:
			d.fail("expected , or } after object member")
			return nil, false
		}
	}
	if c != '"' {
		d.fail("expected string for object key")
		return nil, false
	}
	key := d.rawString()
	if !d.OK() {
		return nil, false
	}
	if d.Peek() != ':' {
		d.fail("expected : after object key")
		return nil, false
	}
	d.pos++
	return key, true
}

// openArray consumes '[' or records a type violation and skips the value.
func (d *Decoder) OpenArray(p *Path) bool {
	if d.Peek() != '[' {
		d.Mismatch(p, "array")
		return false
	}
	d.pos++
	d.depth++
	if d.depth > maxDepth {
		d.fail("exceeded max depth")
		return false
	}
	return true
}

// nextItem reports whether the array opened last has another element.
func (d *Decoder) NextItem(first *bool) bool {
	if !d.OK() || d.stopped() {
		return false
	}
	c := d.Peek()
	if *first {
		*first = false
		if c == ']' {
			d.pos++
			d.depth--
			return false
		}
		return true
	}
	switch c {
	case ']':
		d.pos++
		d.depth--
		return false
	case ',':
		d.pos++
		return true
	}
	d.fail("expected , or ] after array element")
	return false
}

// rawString reads a string token at d.pos and returns its decoded bytes, which
// alias d.data or d.scratch and must be copied before they are kept.
func (d *Decoder) rawString() []byte {
	d.fresh = false
	d.pos++ // opening quote
	start := d.pos
	for d.pos < len(d.data) {
		d.pos = plainUntil(d.data, d.pos)
		if d.pos >= len(d.data) {
			break
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			d.inScratch = false
			return s
		case c == '\\' || c >= utf8.RuneSelf:
			return d.slowString(start)
		case c < 0x20:
			d.fail("control character in string")
			return nil
		}
		d.pos++
	}
	d.fail("unexpected end of input in string")
	return nil
}

// freshStringMin is the length from which slowString decodes a string
// into a buffer of its own, sized from the raw token, rather than into the
// decoder's scratch: String then keeps that buffer as the string's bytes,
// so a long text is copied once, with no growth on the way.
const freshStringMin = 1 << 10

// slowString decodes a string with escapes or non-ASCII bytes the way
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
// Runs of bytes that need no change are copied in one append.
func (d *Decoder) slowString(start int) []byte {
	var b []byte
	d.fresh = false
	inChunk := false
	if end := d.stringEnd(d.pos); end-start >= freshStringMin {
		// Decoding only shrinks an escape; U+FFFD for an invalid byte
		// grows it, which append absorbs.
		b = make([]byte, 0, end-start)
		d.fresh = true
	} else if end-start <= chunkedMax {
		// Decoded into the chunk's free room, where keep finds it and
		// claims it without a copy; until then it is scratch (the next
		// string may overwrite it).
		d.chunkRoom(end - start)
		b = d.chunk[len(d.chunk):len(d.chunk)]
		inChunk = true
	} else {
		b = d.scratch[:0]
	}
	b = append(b, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			switch {
			case d.fresh:
				d.inScratch = false
			case inChunk:
				d.inScratch = true
			default:
				d.scratch = b
				d.inScratch = true
			}
			return b
		case c < 0x20:
			d.fail("control character in string")
			return nil
		case c == '\\':
			enc, n, next, msg := unescapeAt(d.data, d.pos)
			d.pos = next
			if msg != "" {
				d.fail(msg)
				return nil
			}
			b = append(b, enc[:n]...)
		case c < utf8.RuneSelf:
			i := d.pos + 1
			i = plainUntil(d.data, i)
			for i < len(d.data) && plainByte(d.data[i]) {
				i++
			}
			b = append(b, d.data[d.pos:i]...)
			d.pos = i
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, d.data[d.pos:d.pos+size]...)
			}
			d.pos += size
		}
	}
	d.fail("unexpected end of input in string")
	return nil
}

// unescapeAt decodes the escape at data[i] (a backslash) the way
// encoding/json does (a lone surrogate becomes U+FFFD): the UTF-8 bytes it
// stands for are enc[:n], and next is the index past it; msg says what is
// wrong with an invalid one.
func unescapeAt(data []byte, i int) (enc [4]byte, n, next int, msg string) {
	if i+1 >= len(data) {
		return enc, 0, i, "unexpected end of input in string"
	}
	e := data[i+1]
	i += 2
	switch e {
	case '"', '\\', '/':
		enc[0] = e
	case 'b':
		enc[0] = '\b'
	case 'f':
		enc[0] = '\f'
	case 'n':
		enc[0] = '\n'
	case 'r':
		enc[0] = '\r'
	case 't':
		enc[0] = '\t'
	case 'u':
		r := hex4(data, i)
		if r < 0 {
			return enc, 0, i, "invalid \\u escape"
		}
		i += 4
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
				r2 = hex4(data, i+2)
			}
			if dec := utf16.DecodeRune(r, r2); r2 >= 0 && dec != utf8.RuneError {
				r = dec
				i += 6
			} else {
				r = utf8.RuneError
			}
		}
		return enc, utf8.EncodeRune(enc[:], r), i, ""
	default:
		return enc, 0, i, "invalid escape in string"
	}
	return enc, 1, i, ""
}

// plainByte reports whether c stands for itself inside a JSON string: ASCII,
// not a control character, a quote or a backslash.
func plainByte(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'
}

// skipString consumes a string token at d.pos, checking it as rawString
// does, without decoding it: a skipped value (a raw member kept as
// bytes) costs no buffer however long it is.
func (d *Decoder) skipString() {
	d.pos++ // opening quote
	for d.pos < len(d.data) {
		d.pos = plainUntil(d.data, d.pos)
		if d.pos >= len(d.data) {
			break
		}
		switch c := d.data[d.pos]; {
		case c == '"':
			d.pos++
			return
		case c < 0x20:
			d.fail("control character in string")
			return
		case c == '\\':
			// Checked as decoding checks it (the bytes it stands for are
			// dropped).
			_, _, next, msg := unescapeAt(d.data, d.pos)
			d.pos = next
			if msg != "" {
				d.fail(msg)
				return
			}
		default:
			// Plain ASCII, or UTF-8 (invalid bytes decode to U+FFFD,
			// never an error).
			d.pos++
		}
	}
	d.fail("unexpected end of input in string")
}

// stringEnd returns the offset of the quote that closes the string whose
// body continues at i, or len(d.data) when there is none: the first quote
// preceded by an even number of backslashes.
func (d *Decoder) stringEnd(i int) int {
	for i < len(d.data) {
		j := bytes.IndexByte(d.data[i:], '"')
		if j < 0 {
			return len(d.data)
		}
		i += j
		k := i
		for k > 0 && d.data[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
		i++
	}
	return len(d.data)
}

// hex4 reads the four hex digits of a \u escape at data[at], or returns -1.
func hex4(data []byte, at int) rune {
	if at+4 > len(data) {
		return -1
	}
	var r rune
	for _, c := range data[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// str reads a string value.
func (d *Decoder) String(p *Path) (string, bool) {
	if d.Peek() != '"' {
		d.Mismatch(p, "string")
		return "", false
	}
	if len(d.expect) > 0 {
		if s, ok := d.expected(); ok {
			return s, true
		}
	}
	b := d.rawString()
	if !d.OK() {
		return "", false
	}
	if (d.alias || d.fresh) && !d.inScratch && len(b) > 0 {
		// Aliased input, or a buffer slowString made for this string
		// alone.
		d.fresh = false
		return unsafe.String(&b[0], len(b)), true
	}
	return d.keep(b), true
}

// ExpectMin is the length of a string token from which a decoder given
// expected strings (Expect) compares the token with them before decoding
// it.
const ExpectMin = 4 << 10

// Expect tells d that the document may hold some of the long strings ss
// again: a requester reading the reply that echoes the message it sent
// (the task's history). A string token of ExpectMin bytes or more whose
// decoded form equals one of them is read as that very string: compared in
// place, with no copy and no allocation, instead of decoded into a new one.
// Any other token is decoded as usual. ss must not be changed while d
// reads.
func (d *Decoder) Expect(ss []string) { d.expect = ss }

// expected reads the string token at d.pos as one of d.expect, when it is
// long enough to be worth the comparison and decodes to one of them.
func (d *Decoder) expected() (string, bool) {
	start := d.pos + 1
	if len(d.data)-start < ExpectMin {
		return "", false
	}
	end := d.stringEnd(start)
	if end >= len(d.data) || end-start < ExpectMin {
		return "", false
	}
	raw := d.data[start:end]
	for _, s := range d.expect {
		if equalDecoded(raw, s) {
			d.fresh, d.inScratch = false, false
			d.pos = end + 1
			return s, true
		}
	}
	return "", false
}

// equalDecoded reports whether raw, the body of a JSON string token
// (between its quotes), decodes without error to s, as slowString would
// decode it, without decoding it into memory: runs of plain bytes are
// compared in place, escapes and non-ASCII characters one at a time.
func equalDecoded(raw []byte, s string) bool {
	i, j := 0, 0
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '\\':
			enc, n, next, msg := unescapeAt(raw, i)
			if msg != "" || len(s)-j < n || s[j:j+n] != string(enc[:n]) {
				return false
			}
			i, j = next, j+n
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			k := plainUntil(raw, i+1)
			for k < len(raw) && plainByte(raw[k]) {
				k++
			}
			if len(s)-j < k-i || s[j:j+k-i] != string(raw[i:k]) {
				return false
			}
			i, j = k, j+k-i
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				// An invalid byte decodes to U+FFFD.
				if !strings.HasPrefix(s[j:], string(utf8.RuneError)) {
					return false
				}
				i, j = i+1, j+len(string(utf8.RuneError))
				continue
			}
			if len(s)-j < size || s[j:j+size] != string(raw[i:i+size]) {
				return false
			}
			i, j = i+size, j+size
		}
	}
	return j == len(s)
}

// Short strings (chunkedMax bytes or fewer) are copied into a chunk shared
// with the other short strings the decoder reads, instead of one allocation
// each: a message's ids, role, media types and short texts cost one
// allocation together. The first chunk holds chunkFirst bytes, each next
// one twice the one before up to chunkMax, and none more than the input has
// left (the strings still to come cannot be longer), so a chunk outlives
// no more than the strings of its own document and wastes little of it.
const (
	chunkedMax = 512
	chunkFirst = 512
	chunkMax   = 8 << 10
)

// chunkRoom makes sure the chunk has room for n more bytes, starting a new
// chunk if not.
func (d *Decoder) chunkRoom(n int) {
	if cap(d.chunk)-len(d.chunk) >= n {
		return
	}
	// The input left after this string bounds what the next ones need;
	// the decoded form of a string is at most its raw length but for
	// U+FFFD replacing invalid bytes, which a new chunk absorbs.
	size := chunkFirst
	if d.chunk != nil {
		size = min(2*cap(d.chunk), chunkMax)
	}
	size = min(size, n+len(d.data)-d.pos)
	d.chunk = make([]byte, 0, max(size, n))
}

// keep returns b, decoded bytes that alias the input or the scratch buffer,
// as a string of its own: a short one in the decoder's chunk.
func (d *Decoder) keep(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > chunkedMax {
		return string(b)
	}
	if d.inScratch && len(b) <= cap(d.chunk)-len(d.chunk) && unsafe.SliceData(b) == unsafe.SliceData(d.chunk[len(d.chunk):cap(d.chunk)]) {
		// slowString decoded it into the chunk's free room.
		at := len(d.chunk)
		d.chunk = d.chunk[:at+len(b)]
		return unsafe.String(&d.chunk[at], len(b))
	}
	d.chunkRoom(len(b))
	at := len(d.chunk)
	d.chunk = append(d.chunk, b...)
	return unsafe.String(&d.chunk[at], len(b))
}

// keyString turns an object key from nextKey into a string, aliasing data
// when the decoder may.
func (d *Decoder) KeyString(b []byte) string {
	if d.alias && !d.inScratch && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return d.keep(b)
}

// bytes reads a base64 (standard, padded) string value.
func (d *Decoder) Bytes(p *Path) ([]byte, bool) {
	s, ok := d.String(p)
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		d.Validator().Add(p, "contentEncoding", "not standard base64")
		return nil, false
	}
	return b, true
}

func (d *Decoder) Bool(p *Path) (bool, bool) {
	c := d.Peek()
	switch {
	case c == 't' && bytes.HasPrefix(d.data[d.pos:], []byte("true")):
		d.pos += 4
		return true, true
	case c == 'f' && bytes.HasPrefix(d.data[d.pos:], []byte("false")):
		d.pos += 5
		return false, true
	case c == 't' || c == 'f':
		d.fail("invalid literal")
		return false, false
	}
	d.Mismatch(p, "boolean")
	return false, false
}

// null consumes a JSON null if one is next.
func (d *Decoder) null() bool {
	if d.Peek() == 'n' {
		if bytes.HasPrefix(d.data[d.pos:], []byte("null")) {
			d.pos += 4
			return true
		}
	}
	return false
}

// numberToken scans a JSON number and reports whether it had a fraction or an
// exponent.
func (d *Decoder) numberToken() ([]byte, bool) {
	start := d.pos
	i := d.pos
	n := len(d.data)
	if i < n && d.data[i] == '-' {
		i++
	}
	switch {
	case i < n && d.data[i] == '0':
		i++
	case i < n && '1' <= d.data[i] && d.data[i] <= '9':
		for i < n && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
	default:
		d.pos = i
		d.fail("invalid number")
		return nil, false
	}
	frac := false
	if i < n && d.data[i] == '.' {
		frac = true
		i++
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			d.pos = i
			d.fail("invalid number")
			return nil, false
		}
		for i < n && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		frac = true
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			d.pos = i
			d.fail("invalid number")
			return nil, false
		}
		for i < n && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
	}
	d.pos = i
	return d.data[start:i], frac
}

// integer reads an integer that must fit the Go type's range [lo, hi]. A
// number with a fraction or an exponent (10.0, 1e1) is not an integer, even
// when its value is whole: ProtoJSON writes integers as decimal integers. A
// value outside the range is recorded as a minimum / maximum violation and
// returned clamped (still reporting true). Only a non-integer reports false.
func (d *Decoder) integer(p *Path, lo, hi int64) (int64, bool) {
	c := d.Peek()
	if c != '-' && (c < '0' || c > '9') {
		d.Mismatch(p, "integer")
		return 0, false
	}
	tok, frac := d.numberToken()
	if !d.OK() {
		return 0, false
	}
	if frac {
		d.Validator().Add(p, "type", notInteger(tok))
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err == nil {
		return d.bound(p, n, lo, hi), true
	}
	if tok[0] == '-' {
		d.Validator().Add(p, "minimum", "below "+strconv.FormatInt(lo, 10))
		return lo, true
	}
	d.Validator().Add(p, "maximum", "above "+strconv.FormatInt(hi, 10))
	return hi, true
}

// notInteger is the message for a number with a fraction or an exponent
// where an integer is wanted.
func notInteger(tok []byte) string {
	return "got " + string(tok) + ", want an integer (no fraction or exponent)"
}

func (d *Decoder) bound(p *Path, n, lo, hi int64) int64 {
	if n < lo {
		d.Validator().Add(p, "minimum", "below "+strconv.FormatInt(lo, 10))
		return lo
	}
	if n > hi {
		d.Validator().Add(p, "maximum", "above "+strconv.FormatInt(hi, 10))
		return hi
	}
	return n
}

// number reads a JSON number as float64.
func (d *Decoder) Number(p *Path) (float64, bool) {
	c := d.Peek()
	if c != '-' && (c < '0' || c > '9') {
		d.Mismatch(p, "number")
		return 0, false
	}
	tok, _ := d.numberToken()
	if !d.OK() {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		d.Validator().Add(p, "maximum", "out of float64 range")
		return math.Copysign(math.MaxFloat64, f), false
	}
	return f, true
}

// raw reads any JSON value at p and returns a copy of its bytes.
func (d *Decoder) raw(p *Path) []byte {
	d.ws()
	start := d.pos
	d.skipAt(p)
	if !d.OK() {
		return nil
	}
	return append([]byte(nil), d.data[start:d.pos]...)
}

// rawKinds reads any JSON value whose kind must be one of the given kinds
// ("string", "number", "integer", "boolean", "null", "object", "array"); no
// kinds means any value.
func (d *Decoder) RawKinds(p *Path, kinds ...string) []byte {
	c := d.Peek()
	k := kindOf(c)
	if len(kinds) == 0 {
		return d.raw(p)
	}
	match := false
	for _, want := range kinds {
		if want == k || (want == "integer" && k == "number") {
			match = true
		}
	}
	if !match {
		d.Mismatch(p, joinKinds(kinds))
		return nil
	}
	out := d.raw(p)
	if k == "number" && !hasKind(kinds, "number") && bytes.ContainsAny(out, ".eE") {
		d.Validator().Add(p, "type", notInteger(out))
	}
	return out
}

func hasKind(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinKinds(list []string) string {
	s := ""
	for i, x := range list {
		if i > 0 {
			s += " or "
		}
		s += x
	}
	return s
}

// object reads a JSON object into a map[string]any (protobuf Struct).
func (d *Decoder) Object(p *Path) (map[string]any, bool) {
	if d.Peek() != '{' {
		d.Mismatch(p, "object")
		return nil, false
	}
	if d.alias {
		d.skipAt(p)
		return nil, d.OK()
	}
	v := d.anyValue(p, d.belowN)
	m, _ := v.(map[string]any)
	return m, d.OK()
}

// anyValue reads any JSON value at p the way encoding/json decodes into any,
// except that a number too large for float64 is kept as a json.Number
// instead of failing, and a member that appears twice in one object is a
// violation instead of the last occurrence winning.
// base is the number of steps below (d.belowN) when the value at p began.
func (d *Decoder) anyValue(p *Path, base int) any {
	switch c := d.Peek(); c {
	case '{':
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			d.fail("exceeded max depth")
			return nil
		}
		m := map[string]any{}
		first := true
		for {
			k, ok := d.NextKey(&first)
			if !ok {
				break
			}
			key := d.KeyString(k)
			d.push(step{key: key, index: -1})
			if _, dup := m[key]; dup {
				d.duplicateBelow(p, base)
			}
			m[key] = d.anyValue(p, base)
			d.belowN--
		}
		if !d.OK() {
			return nil
		}
		return m
	case '[':
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			d.fail("exceeded max depth")
			return nil
		}
		a := []any{}
		first := true
		for d.NextItem(&first) {
			d.push(step{index: len(a)})
			a = append(a, d.anyValue(p, base))
			d.belowN--
		}
		if !d.OK() {
			return nil
		}
		return a
	case '"':
		b := d.rawString()
		return string(b)
	case 't', 'f':
		b, _ := d.Bool(nil)
		return b
	case 'n':
		if !d.null() {
			d.fail("invalid literal")
		}
		return nil
	case 0:
		d.fail("unexpected end of input")
		return nil
	default:
		if c != '-' && (c < '0' || c > '9') {
			d.fail("invalid character looking for beginning of value")
			return nil
		}
		tok, _ := d.numberToken()
		if !d.OK() {
			return nil
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return json.Number(tok)
		}
		return f
	}
}

// Skip consumes any JSON value, checking its syntax and recording members
// that appear twice in one object (see skipAt) at pointers from the root.
func (d *Decoder) Skip() { d.skipAt(nil) }

// skipAt consumes the JSON value at p, checking its syntax; a member that
// appears twice in one object is recorded as a violation.
func (d *Decoder) skipAt(p *Path) {
	base := d.belowN
	d.skipBelow(p, base)
	d.belowN = base
}

// skipBelow consumes the value at the steps from base on below p.
func (d *Decoder) skipBelow(p *Path, base int) {
	switch c := d.Peek(); c {
	case '{':
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			d.fail("exceeded max depth")
			return
		}
		var keys Keys
		for first := true; ; {
			k, ok := d.NextKey(&first)
			if !ok {
				return
			}
			key := d.tempKey(k)
			d.push(step{key: key, index: -1})
			if keys.Add(key) {
				d.duplicateBelow(p, base)
			}
			d.skipBelow(p, base)
			d.belowN--
		}
	case '[':
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			d.fail("exceeded max depth")
			return
		}
		for i, first := 0, true; d.NextItem(&first); i++ {
			d.push(step{index: i})
			d.skipBelow(p, base)
			d.belowN--
		}
	case '"':
		d.skipString()
	case 't':
		if !bytes.HasPrefix(d.data[d.pos:], []byte("true")) {
			d.fail("invalid literal")
			return
		}
		d.pos += 4
	case 'f':
		if !bytes.HasPrefix(d.data[d.pos:], []byte("false")) {
			d.fail("invalid literal")
			return
		}
		d.pos += 5
	case 'n':
		if !d.null() {
			d.fail("invalid literal")
		}
	case 0:
		d.fail("unexpected end of input")
	default:
		if c != '-' && (c < '0' || c > '9') {
			d.fail("invalid character looking for beginning of value")
			return
		}
		d.numberToken()
	}
}

// decodeDoc runs fn over data as a whole document. With required set (the
// Validate<Type>JSON path, whose value is discarded) strings alias data. It
// returns a syntax error, or nil with any violations left in v.
func decodeDoc(data []byte, v *Validator, required bool, fn func(d *Decoder)) error {
	return decodeMode(data, v, required, required, fn)
}

// decodeMode is decodeDoc with aliasing chosen apart from the required
// checks: Parse<Type>JSON keeps its value, so it checks required members but
// copies strings.
func decodeMode(data []byte, v *Validator, required, alias bool, fn func(d *Decoder)) error {
	d := Decoder{data: data, v: v, required: required, alias: alias}
	fn(&d)
	d.end()
	if d.syntax != nil {
		return d.syntax
	}
	return nil
}

// DecodeAt decodes a raw value nested at path p (JSON-RPC params),
// recording its violations under p.
func DecodeAt(v *Validator, p *Path, raw []byte, fn func(d *Decoder, p *Path)) {
	var sub Validator
	err := decodeDoc(raw, &sub, true, func(d *Decoder) { fn(d, p) })
	if err != nil {
		v.Add(p, "type", err.Error())
		return
	}
	v.merge(&sub)
}

// Value reads any JSON value (protobuf Value). On the Validate<Type>JSON
// path it checks the value and returns nil (see Decoder.alias).
func (d *Decoder) Value(p *Path) any {
	if d.alias {
		d.skipAt(p)
		return nil
	}
	return d.anyValue(p, d.belowN)
}

// KeptValue reads any JSON value (protobuf Value) on every path, for a
// member whose validation reads the value (the data of a JSON-RPC error).
func (d *Decoder) KeptValue(p *Path) any {
	return d.anyValue(p, d.belowN)
}

// CheckRaw checks that a raw value built in Go is JSON of one of the kinds.
func CheckRaw(v *Validator, p *Path, raw []byte, kinds ...string) {
	d := Decoder{data: raw, v: v}
	d.RawKinds(p, kinds...)
	d.end()
	if d.syntax != nil {
		v.Add(p, "type", d.syntax.Error())
	}
}
