package runtime

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"unsafe"
)

// This file holds the helpers that one generated member calls, so that a
// member costs a generated line or two instead of a dozen.

// Key returns the path of member key under p (p may be nil: the root).
func (p *Path) Key(key string) Path { return Path{parent: p, key: key, index: -1} }

// Index returns the path of element i under p.
func (p *Path) Index(i int) Path { return Path{parent: p, index: i} }

// Seen records that the member at p, with bit, was read in the object whose
// members *seen tracks. A member read twice is a violation (see
// [Decoder.Duplicate]).
func (d *Decoder) Seen(seen *uint64, bit uint64, p *Path) {
	if *seen&bit != 0 {
		d.Duplicate(p)
	}
	*seen |= bit
}

// Member records that the member with bit was read in the object whose
// members *seen tracks (see [Decoder.Seen]) and reports whether its value is
// null, which it then consumes. On a member that may be unset, null means
// "not set", as in ProtoJSON; on a required member (required true) it is
// recorded as a violation at p. Members whose values may be null
// (google.protobuf.Value, JSON-RPC identifiers) call Seen instead.
func (d *Decoder) Member(seen *uint64, bit uint64, p *Path, required bool) bool {
	d.Seen(seen, bit, p)
	if d.Peek() != 'n' {
		return false
	}
	if !d.null() {
		d.fail("invalid literal")
		return true
	}
	if required {
		d.Validator().Add(p, "type", "must not be null")
	}
	return true
}

// Missing records, at its own pointer, each required member of the object
// at p that was not read, when the decoder checks required members
// (Validate<Type>JSON, Parse<Type>JSON): those whose bit is in mask but not
// in seen. names holds the JSON name of each member by bit. A member found
// under its snake_case name (unknown holds the members the type does not
// define) is named in the message, since ProtoJSON writes the camelCase one.
func (d *Decoder) Missing(p *Path, seen, mask uint64, unknown *Keys, names ...string) {
	if !d.required || !d.OK() {
		return
	}
	for bit, name := range names {
		if mask&(1<<bit) == 0 || seen&(1<<bit) != 0 {
			continue
		}
		msg := "missing property " + strconv.Quote(name)
		if snake := snakeCase(name); snake != name && unknown.has(snake) {
			msg += ": found " + snake + "; the ProtoJSON name is " + name
		}
		kp := p.Key(name)
		d.Validator().Add(&kp, "required", msg)
	}
}

// snakeCase turns a lowerCamelCase member name into the snake_case name of
// its protobuf field.
func snakeCase(name string) string {
	var b []byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			b = append(b, '_', c-'A'+'a')
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// OneOf records that member number m (from 1) of a oneof group was read in
// the object at p, whose group *member tracks; a second member of the group
// is a violation. names lists the group's members for the message.
func (d *Decoder) OneOf(p *Path, member *int, m int, names string) {
	if *member != 0 && *member != m {
		d.Validator().Add(p, "oneOf", "more than one of "+names+" is set")
	}
	*member = m
}

// Validator returns the collector the decoder records violations in.
func (d *Decoder) Validator() *Validator {
	if d.v == nil {
		return &d.own // a checking decoder's (see Check)
	}
	return d.v
}

// IsObject reports whether an object comes next; otherwise it records a type
// violation at p and skips the value.
func (d *Decoder) IsObject(p *Path) bool {
	if d.Peek() == '{' {
		return true
	}
	d.Mismatch(p, "object")
	return false
}

// Int32 reads an integer within the range of int32.
func (d *Decoder) Int32(p *Path) (int32, bool) {
	n, ok := d.integer(p, math.MinInt32, math.MaxInt32)
	return int32(n), ok
}

// Int64 reads an integer within the range of int64.
func (d *Decoder) Int64(p *Path) (int64, bool) {
	return d.integer(p, math.MinInt64, math.MaxInt64)
}

// Enum converts a string read by Decoder.String to the enum type E (whose
// values Validate checks).
func Enum[E ~string](s string, ok bool) (E, bool) { return E(s), ok }

// Ptr returns a pointer to v when ok (a member with explicit presence that
// was read), else nil.
func Ptr[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

// Strings reads an array of strings. It returns nil when the value is not an
// array, and an empty slice for [].
func (d *Decoder) Strings(p *Path) []string {
	it := d.Array(p)
	if !it.Open() {
		return nil
	}
	out := []string{}
	for it.Next(d) {
		s, _ := d.String(it.At())
		out = append(out, s)
	}
	return out
}

// StringMap reads an object of string values. It returns nil when the value
// is not an object.
func (d *Decoder) StringMap(p *Path) map[string]string {
	if !d.OpenObject(p) {
		return nil
	}
	out := map[string]string{}
	for first := true; ; {
		k, ok := d.NextMember(&first)
		if !ok {
			return out
		}
		kp := p.Key(k)
		if _, dup := out[k]; dup {
			d.Duplicate(&kp)
		}
		out[k], _ = d.String(&kp)
	}
}

// NextMember moves to the next member of the object opened last and returns
// its key, or reports false at the closing brace.
func (d *Decoder) NextMember(first *bool) (string, bool) {
	kb, ok := d.NextKey(first)
	if !ok {
		return "", false
	}
	return d.KeyString(kb), true
}

// Items walks the elements of an array; see [Decoder.Array]. It holds the
// element's path, but not the decoder, so that the path stays on the stack.
type Items struct {
	open  bool
	first bool
	// bounded says the decoder's item bound applies (BoundedArray).
	bounded bool
	path    Path
}

// Array opens the array at p and returns an Items whose Next reports each
// element. When something else comes next it records a type violation and
// skips it, and the Items is not open and has no element.
func (d *Decoder) Array(p *Path) Items {
	open := d.OpenArray(p)
	return Items{open: open, first: open, path: Path{parent: p, index: -1}}
}

// BoundedArray is Array for an array whose items a reader may bound
// (x-item-bound in the schema): past the bound set with BoundItems, Next
// stops the reading.
func (d *Decoder) BoundedArray(p *Path) Items {
	it := d.Array(p)
	it.bounded = true
	return it
}

// BoundItems bounds the arrays read with BoundedArray to max items (0 or
// less: no bound), and StopAtViolation stops the reading at the first
// violation recorded: the next member or item is not read, as if the
// document ended there (a syntax error). Both are for a reader with
// another way to answer a document that strays: one that decodes a
// message in one pass and, past a responder's part limit or on any fault,
// answers with a slower reading that counts and reports.
func (d *Decoder) BoundItems(max int) { d.itemBound = max }

// StopAtViolation: see BoundItems.
func (d *Decoder) StopAtViolation() { d.stopAtViolation = true }

// stopped reports whether the reading must stop at a violation, and then
// stops it.
func (d *Decoder) stopped() bool {
	if !d.stopAtViolation || d.Validator().empty() {
		return false
	}
	d.fail("stopped at a violation")
	return true
}

// Open reports whether an array was opened (the caller then sets an empty,
// non-nil slice: [] is not a missing member).
func (it *Items) Open() bool { return it.open }

// Next moves to the next element read by d and reports whether there is one.
func (it *Items) Next(d *Decoder) bool {
	if !it.open || !d.NextItem(&it.first) {
		return false
	}
	it.path.index++
	if it.bounded && d.itemBound > 0 && it.path.index >= d.itemBound {
		d.fail("more items than the reader's bound")
		return false
	}
	return true
}

// At returns the path of the current element.
func (it *Items) At() *Path { return &it.path }

// Duplicate records that the member at p appeared more than once in its
// object. Such a document is refused, at every depth: readers that keep the
// first occurrence and readers that keep the last would see different values
// (RFC 8259 §4 leaves the behaviour open; ProtoJSON parsers refuse it).
func (d *Decoder) Duplicate(p *Path) {
	d.Validator().Add(p, "duplicate", "member "+strconv.Quote(p.key)+" appears more than once")
}

// Keys is the set of the member names read in one object, for finding a
// member that appears twice ([Decoder.Unknown], maps of objects). The zero
// value is empty; the first keysInline names cost no allocation.
type Keys struct {
	n    int
	few  [keysInline]string
	more map[string]struct{}
}

// keysInline is the number of names a Keys holds before it needs a map:
// most objects have fewer members.
const keysInline = 8

// has reports whether k was recorded.
func (s *Keys) has(k string) bool {
	for i := range min(s.n, keysInline) {
		if s.few[i] == k {
			return true
		}
	}
	if s.more == nil {
		return false
	}
	_, ok := s.more[k]
	return ok
}

// Add records k and reports whether it was recorded before.
func (s *Keys) Add(k string) bool {
	if s.has(k) {
		return true
	}
	if s.n < keysInline {
		s.few[s.n] = k
	} else {
		if s.more == nil {
			s.more = map[string]struct{}{}
		}
		s.more[k] = struct{}{}
	}
	s.n++
	return false
}

// Unknown skips the value of member key, which the type of the object at p
// does not define; keys holds the object's other such members, so that one
// appearing twice is recorded as a duplicate.
func (d *Decoder) Unknown(p *Path, key []byte, keys *Keys) {
	k := d.tempKey(key)
	base := d.belowN
	d.push(step{key: k, index: -1})
	if keys.Add(k) {
		d.duplicateBelow(p, base)
	}
	d.skipBelow(p, base)
	d.belowN = base
}

// tempKey turns an object key from NextKey into a string that stays valid
// while the document is read: it points into data unless the key was
// unescaped into scratch.
func (d *Decoder) tempKey(b []byte) string {
	if !d.inScratch && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// Unmarshal decodes data with decode, which resets and fills the value: the
// UnmarshalJSON of generated types. It returns a *SyntaxError, a
// *ValidationError for values of the wrong JSON type, or nil; it checks no
// other rule.
func Unmarshal(data []byte, decode func(d *Decoder)) error {
	var v Validator
	if err := decodeMode(data, &v, false, false, decode); err != nil {
		return err
	}
	return v.Err()
}

// Parse decodes data into x with decode, checking required members, then
// runs validate: Parse<Type>JSON. It returns x only when it is valid.
func Parse[T any](data []byte, x *T, decode func(d *Decoder), validate func(v *Validator, p *Path)) (*T, error) {
	var v Validator
	if err := decodeMode(data, &v, true, false, decode); err != nil {
		return nil, err
	}
	validate(&v, nil)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return x, nil
}

// Check prepares d to check data against a schema as it reads it, recording
// violations in v: Validate<Type>JSON. Strings alias data, free JSON is
// checked and skipped, and each object runs its own checks as its
// DecodeJSONAt ends (see Checking), so nothing read needs to outlive the
// call and a value holding objects is not built. The violations are kept
// in d itself, so that a Decoder declared in the caller costs no
// allocation. Call Verdict when the value has been read.
func (d *Decoder) Check(data []byte) {
	*d = Decoder{data: data, required: true, alias: true}
}

// Checking reports whether d checks as it reads (Check, and raw values
// checked by DecodeAt): each DecodeJSONAt then checks its object's own
// members when it ends, and members that hold objects are read, checked
// and dropped rather than kept.
func (d *Decoder) Checking() bool { return d.alias }

// ChecksEach reports whether each object's own rules are checked as its
// DecodeJSONAt ends: on a checking decoder (Checking), and on one that
// stops at the first violation (StopAtViolation), so that a run of
// invalid objects stops at the first.
func (d *Decoder) ChecksEach() bool { return d.alias || d.stopAtViolation }

// Verdict ends a document read after Check: it returns a *SyntaxError, a
// *ValidationError listing every violation, or nil.
func (d *Decoder) Verdict() error {
	d.end()
	if d.syntax != nil {
		return d.syntax
	}
	return d.Validator().Err()
}

// AppendKey appends key, a quoted member name with its colon, after a comma
// unless it is the first member of the object opened at offset open.
func AppendKey(b []byte, open int, key string) []byte {
	if len(b) != open {
		b = append(b, ',')
	}
	return append(b, key...)
}

// AppendStrings appends a JSON array of strings.
func AppendStrings[S ~string](b []byte, list []S) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, string(s))
	}
	return append(b, ']')
}

// AppendStringMap appends a JSON object of string values, its keys sorted.
func AppendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		b = AppendString(b, m[k])
	}
	return append(b, '}')
}
