package runtime

import (
	"sort"
	"strconv"
	"strings"
)

// Path is one step of the way from the document root to a value. Paths are
// built on the stack as validation descends and turned into a JSON pointer
// only when a violation is recorded, so valid values cost no allocation.
type Path struct {
	parent *Path
	key    string
	index  int
}

func (p *Path) pointer() string {
	var b strings.Builder
	p.write(&b)
	return b.String()
}

// write appends the pointer of p to b. It copies the keys rather than
// keeping them, so that paths built on the stack stay there.
func (p *Path) write(b *strings.Builder) {
	if p == nil {
		return
	}
	p.parent.write(b)
	b.WriteByte('/')
	if p.key == "" && p.index >= 0 {
		b.WriteString(strconv.Itoa(p.index))
		return
	}
	writeKey(b, p.key)
}

// writeKey appends a member key to a JSON pointer, escaped.
func writeKey(b *strings.Builder, key string) {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(c)
		}
	}
}

// MaxViolations bounds the violations a validator records. Past it a
// violation is only counted (ValidationError.Omitted): a document of many
// small mistakes costs memory and time in proportion to the bound, not to
// its size, and its report stays small.
const MaxViolations = 100

// Validator collects violations, at most MaxViolations of them, and
// counts the rest.
type Validator struct {
	violations []Violation
	omitted    int
}

// Add records that the value at p breaks rule, explained by msg; past
// MaxViolations it only counts.
func (v *Validator) Add(p *Path, rule, msg string) {
	if v.full() {
		v.omitted++
		return
	}
	v.violations = append(v.violations, Violation{Pointer: p.pointer(), Rule: rule, Message: msg})
}

// empty reports whether nothing was recorded or counted.
func (v *Validator) empty() bool { return len(v.violations) == 0 && v.omitted == 0 }

// full reports whether a violation added now would only be counted.
func (v *Validator) full() bool { return len(v.violations) >= MaxViolations }

// merge records the violations of a nested validator, within the bound.
func (v *Validator) merge(sub *Validator) {
	n := min(len(sub.violations), max(MaxViolations-len(v.violations), 0))
	v.violations = append(v.violations, sub.violations[:n]...)
	v.omitted += sub.omitted + len(sub.violations) - n
}

// reset forgets every violation recorded or counted.
func (v *Validator) reset() {
	v.violations = v.violations[:0]
	v.omitted = 0
}

// Err returns a *ValidationError listing the violations recorded, sorted
// by pointer and without the ones another hides, or nil.
func (v *Validator) Err() error {
	if len(v.violations) == 0 && v.omitted == 0 {
		return nil
	}
	// Map members are visited in no particular order; sorting by pointer
	// makes the report deterministic.
	sort.SliceStable(v.violations, func(i, j int) bool { return v.violations[i].Pointer < v.violations[j].Pointer })
	// A value of the wrong JSON type is not decoded, and a missing member is
	// not there to break another rule: at one pointer, a type violation
	// hides the others, and a missing member the other rules; a type
	// violation hides every rule below its pointer too (a member that is
	// not an object has no members to miss).
	out := make([]Violation, 0, len(v.violations))
	for i, x := range v.violations {
		if n := len(out); n > 0 && x == out[n-1] {
			// Found twice: JSON-RPC params are read as the envelope's
			// member and again as the method's request; a missing object
			// is seen by the decoder and by Validate.
			continue
		}
		if hidden(v.violations, i) {
			continue
		}
		out = append(out, x)
	}
	return &ValidationError{Violations: out, Omitted: v.omitted}
}

// RuneCount counts characters as JSON Schema does (invalid UTF-8 bytes
// count one each, as they decode to U+FFFD).
func RuneCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}

// hidden reports whether violation i of list is hidden by another at the
// same pointer (list is sorted by pointer): type hides every other rule,
// required every rule but type; or by a type violation above it.
func hidden(list []Violation, i int) bool {
	x := list[i]
	for _, y := range list[:i] {
		if y.Rule == "type" && strings.HasPrefix(x.Pointer, y.Pointer+"/") {
			return true
		}
	}
	if x.Rule == "type" {
		return false
	}
	lo, hi := i, i
	for lo > 0 && list[lo-1].Pointer == x.Pointer {
		lo--
	}
	for hi < len(list)-1 && list[hi+1].Pointer == x.Pointer {
		hi++
	}
	for _, y := range list[lo : hi+1] {
		if y.Rule == "type" || (y.Rule == "required" && x.Rule != "required") {
			return true
		}
	}
	return false
}
