package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/a2abind/a2abind/generated/a2a"
)

// Bounds on what a request may cost its responder and on the size of the
// errors it is answered with (docs/protocol.md §14).
const (
	// DefaultMaxRequestBytes is Limits.MaxRequestBytes by default: 4 MiB,
	// the HTTP binding's body limit too.
	DefaultMaxRequestBytes = 4 << 20
	// DefaultMaxParts is Limits.MaxParts by default: parts of one message.
	DefaultMaxParts = 1000
	// MaxReportedViolations is how many schema violations an
	// invalid_params error lists in error.data; the others are counted
	// ("omitted"). The message names as many as fit in about 1.5 KiB.
	MaxReportedViolations = 20
	// MaxErrorMessageBytes bounds error.message on the wire: a longer one
	// is cut, on a character boundary, and ends with "…".
	MaxErrorMessageBytes = 2048
	// maxViolationText bounds the pointer and the message of each
	// violation reported (a pointer holds member names of the request).
	maxViolationText = 160
	// violationsInMessage is the room the violations take in the message
	// of an invalid_params error.
	violationsInMessage = 1536
)

// Limits bounds the requests a responder decodes. The zero value bounds
// nothing; DefaultLimits returns the defaults.
type Limits struct {
	// MaxRequestBytes is the largest request payload, in bytes (0: no
	// bound). A larger one is answered invalid_request (-32600), naming the
	// limit, before any of it is decoded.
	MaxRequestBytes int
	// MaxParts is the most parts a message may have (0: no bound). A
	// SendMessage or SendStreamingMessage whose message has more is
	// answered invalid_params (-32602), naming the limit and the number
	// of parts, before its params are checked against their schema; no
	// part past the limit is decoded (the parts are counted as they are
	// read, and past the limit counted without decoding them).
	MaxParts int
}

// DefaultLimits returns the default limits: DefaultMaxRequestBytes and
// DefaultMaxParts.
func DefaultLimits() Limits {
	return Limits{MaxRequestBytes: DefaultMaxRequestBytes, MaxParts: DefaultMaxParts}
}

// DecodeRequest is the package's DecodeRequest within the limits: an
// oversized payload is refused before it is parsed, and a message with too
// many parts before more than MaxParts of them are decoded.
func (l Limits) DecodeRequest(data []byte) (*Request, json.RawMessage, *a2a.Error) {
	if l.MaxRequestBytes > 0 && len(data) > l.MaxRequestBytes {
		return nil, nil, TooLarge(len(data), l.MaxRequestBytes)
	}
	return decodeRequest(data, l)
}

// TooLarge is the invalid_request error for a request of size bytes over
// a limit of max bytes; error.data holds both ("size", "limit").
func TooLarge(size, max int) *a2a.Error {
	e := a2a.NewError(a2a.TokenInvalidRequest, fmt.Sprintf(
		"the request is %d bytes, over this agent's limit of %d bytes: send less (large content by reference, as a file URL)", size, max))
	e.Data = map[string]any{"size": size, "limit": max}
	return e
}

// TooManyParts is the invalid_params error for a message of n parts over
// a limit of max; error.data holds both ("parts", "limit").
func TooManyParts(n, max int) *a2a.Error {
	e := a2a.NewError(a2a.TokenInvalidParams, fmt.Sprintf(
		"message.parts has %d parts, over this agent's limit of %d parts per message", n, max))
	e.Data = map[string]any{"parts": n, "limit": max}
	return e
}

// checkParts applies MaxParts to the raw params of a method.
func (l Limits) checkParts(m a2a.Method, params json.RawMessage) *a2a.Error {
	if l.MaxParts <= 0 || (m != a2a.MethodSendMessage && m != a2a.MethodSendStreamingMessage) {
		return nil
	}
	// A scan that fails leaves the fault to the decoder, which reports it.
	if n, ok := partsIn(params); ok && n > l.MaxParts {
		return TooManyParts(n, l.MaxParts)
	}
	return nil
}

// invalidParams reports a validation failure: the first
// MaxReportedViolations violations in error.data (each cut to a bounded
// length) with the count of the others, and as many as fit in the
// message, with the count of the rest. Its size does not grow with the
// number of violations.
func invalidParams(verr *a2a.ValidationError) *a2a.Error {
	total := verr.Total()
	shown := verr.Violations[:min(len(verr.Violations), MaxReportedViolations)]
	list := make([]any, 0, len(shown))
	var msg strings.Builder
	msg.WriteString("invalid params: ")
	inMessage := 0
	for _, v := range shown {
		v.Pointer = cut(v.Pointer, maxViolationText)
		v.Message = cut(v.Message, maxViolationText)
		list = append(list, map[string]any{"pointer": v.Pointer, "rule": v.Rule, "message": v.Message})
		if s := v.String(); inMessage == 0 || msg.Len()+len(s) <= violationsInMessage {
			if inMessage > 0 {
				msg.WriteString("; ")
			}
			msg.WriteString(s)
			inMessage++
		}
	}
	if inMessage == 0 {
		msg.WriteString("the params break the method's schema")
	}
	if rest := total - inMessage; rest > 0 {
		fmt.Fprintf(&msg, " (and %d more", rest)
		if total > len(shown) {
			fmt.Fprintf(&msg, "; error.data lists the first %d", len(shown))
		}
		msg.WriteByte(')')
	}
	e := a2a.NewError(a2a.TokenInvalidParams, msg.String())
	data := map[string]any{"violations": list}
	if omitted := total - len(shown); omitted > 0 {
		data["omitted"] = omitted
	}
	e.Data = data
	return e
}

// cut shortens s to at most n bytes, on a character boundary, ending it
// with "…" when anything was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + "…"
}

// partsIn returns how many elements params.message.parts has (the most,
// when a member is repeated), reading the raw params without decoding
// them: it allocates nothing and takes one pass. ok is false when it
// cannot read them as JSON.
func partsIn(params []byte) (n int, ok bool) {
	s := scanner{b: params}
	ok = s.object(func(key []byte) bool {
		if !keyIs(key, "message") {
			return s.skip()
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return s.skip()
		}
		return s.object(func(key []byte) bool {
			if !keyIs(key, "parts") {
				return s.skip()
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '[' {
				return s.skip()
			}
			k, ok := s.count()
			n = max(n, k)
			return ok
		})
	})
	return n, ok
}

// keyIs reports whether the raw (still escaped) member name is name.
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return false
	}
	return s == name
}

// scanner walks JSON text without decoding it: enough to find a member
// and count an array's elements. It checks the structure only as far as
// it needs to; the decoder checks the rest.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string at s.i and returns its raw content.
func (s *scanner) str() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	// The closing quote is the first one after an even number of
	// backslashes; IndexByte finds the quotes a word at a time.
	for j := start; j < len(s.b); j++ {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			break
		}
		j += k
		n := 0
		for p := j - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = j + 1
			return s.b[start:j], true
		}
	}
	return nil, false
}

// object reads an object at s.i, calling member at each member's value,
// which it must read.
func (s *scanner) object(member func(key []byte) bool) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// count reads an array at s.i and returns how many elements it has.
func (s *scanner) count() (int, bool) {
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return 0, true
	}
	n := 0
	for {
		if !s.skip() {
			return n, false
		}
		n++
		s.ws()
		if s.i >= len(s.b) {
			return n, false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return n, true
		default:
			return n, false
		}
	}
}

// skip reads one value at s.i.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}
