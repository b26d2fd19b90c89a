// Package jsonsize estimates, without encoding them, how many bytes the
// A2A types take in their wire form (their AppendJSON), so that an output
// buffer can be allocated once at about its final size: no growth by
// copying while the value is encoded, and no copy afterwards to trim it.
//
// An estimate reads the length of every string, and scans short strings
// whole and a few windows of a long one for the characters JSON escapes
// (a long string costs the same few hundred bytes of reading whatever its
// length). It is meant to be at or a little above the encoded size: for
// text whose escapes are spread as in prose, code or embedded JSON it is
// above by at most about 1/64 of the size plus a few bytes per member. A
// string whose escapes the windows miss (a dense run of them between two
// windows), free JSON values of types other than the decoded ones (maps,
// slices, strings, numbers, booleans), and invalid UTF-8 in a long string
// may be underestimated: the encoder then grows its buffer as it would
// have without an estimate.
package jsonsize

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Strings up to scanWhole bytes are scanned whole for escapes; longer ones
// are sampled in sampleWindows windows of sampleWindow bytes, spread
// evenly from the first byte to the last.
const (
	scanWhole     = 512
	sampleWindows = 16
	sampleWindow  = 64
)

// String returns the length of s encoded as a JSON string (quotes
// included), as runtime.AppendString encodes it: exact up to scanWhole
// bytes, estimated from samples beyond (the sampled share of escapes, plus
// 1/64 of the length and 16 bytes).
func String(s string) int {
	if len(s) <= scanWhole {
		return len(s) + 2 + escapeExtra(s)
	}
	extra, seen := 0, 0
	step := (len(s) - sampleWindow) / (sampleWindows - 1)
	for i := range sampleWindows {
		w := s[i*step : i*step+sampleWindow]
		extra += asciiEscapeExtra(w)
		seen += len(w)
	}
	return len(s) + 2 + extra*(len(s)/seen+1) + len(s)/64 + 16
}

// escapeExtra is what escaping adds to s, exactly. Runs of bytes that need
// no escape are skipped with the encoder's own scan (runtime.PlainUntil).
func escapeExtra(s string) int {
	n := 0
	for i := 0; i < len(s); {
		i = runtime.PlainUntil(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			n += asciiExtra(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += len(`\ufffd`) - 1
		case r == '\u2028' || r == '\u2029':
			n += len(`\u2028`) - size
		}
		i += size
	}
	return n
}

// asciiEscapeExtra is what escaping adds to the ASCII bytes of s. Runs of
// bytes that need no escape are skipped with the encoder's own scan.
func asciiEscapeExtra(s string) int {
	n := 0
	for i := 0; i < len(s); {
		i = runtime.PlainUntil(s, i)
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			n += asciiExtra(c)
		}
		i++
	}
	return n
}

// asciiExtra is what escaping adds to the ASCII byte c.
func asciiExtra(c byte) int {
	switch {
	case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
		return 1
	case c < 0x20:
		return len(`\u0000`) - 1
	}
	return 0
}

// commas is the number of commas between n elements.
func commas(n int) int { return max(n-1, 0) }

// Strings returns the length of a JSON array of strings.
func Strings(list []string) int {
	n := 2 + commas(len(list))
	for _, s := range list {
		n += String(s)
	}
	return n
}

// Any returns about the length of a free JSON value (a protobuf Struct or
// Value member) as runtime.AppendAny encodes it: exact in its structure
// for the types JSON decodes to, the strings as String estimates them,
// numbers at their longest; a value of another type counts 64 bytes.
func Any(v any) int {
	switch x := v.(type) {
	case nil:
		return len("null")
	case bool:
		return len("false")
	case string:
		return String(x)
	case float64, float32, int, int64, int32, uint, uint64, uint32:
		return 24
	case json.Number:
		return len(x)
	case json.RawMessage:
		return len(x)
	case map[string]any:
		n := 2 + commas(len(x))
		for k, e := range x {
			n += String(k) + len(":") + Any(e)
		}
		return n
	case []any:
		n := 2 + commas(len(x))
		for _, e := range x {
			n += Any(e)
		}
		return n
	case map[string]string:
		n := 2 + commas(len(x))
		for k, e := range x {
			n += String(k) + 1 + String(e)
		}
		return n
	case []string:
		return Strings(x)
	}
	return 64
}

// object returns the length of a Struct member (metadata): 0 when it is
// absent (nil).
func object(key string, m map[string]any) int {
	if m == nil {
		return 0
	}
	return len(key) + Any(m)
}

// optional returns the length of an optional string member: 0 when it is
// absent ("").
func optional(key, s string) int {
	if s == "" {
		return 0
	}
	return len(key) + String(s)
}

// stringList returns the length of an optional array of strings: 0 when it
// is absent (nil).
func stringList(key string, list []string) int {
	if list == nil {
		return 0
	}
	return len(key) + Strings(list)
}

// Part returns about the length of p encoded.
func Part(p *a2a.Part) int {
	n := 2 + object(`,"metadata":`, p.Metadata) + optional(`,"filename":`, p.Filename) + optional(`,"mediaType":`, p.MediaType)
	switch c := p.Content.(type) {
	case a2a.PartText:
		n += len(`,"text":`) + String(string(c))
	case a2a.PartRaw:
		n += len(`,"raw":`) + 2 + base64.StdEncoding.EncodedLen(len(c))
	case a2a.PartURL:
		n += len(`,"url":`) + String(string(c))
	case a2a.PartData:
		n += len(`,"data":`) + Any(c.Value)
	}
	return n
}

// Parts returns about the length of a JSON array of parts.
func Parts(ps []a2a.Part) int {
	n := 2 + commas(len(ps))
	for i := range ps {
		n += Part(&ps[i])
	}
	return n
}

// Message returns about the length of m encoded.
func Message(m *a2a.Message) int {
	return 2 + len(`"messageId":`) + String(m.MessageID) + optional(`,"contextId":`, m.ContextID) +
		optional(`,"taskId":`, m.TaskID) + len(`,"role":`) + String(string(m.Role)) +
		len(`,"parts":`) + Parts(m.Parts) + object(`,"metadata":`, m.Metadata) +
		stringList(`,"extensions":`, m.Extensions) + stringList(`,"referenceTaskIds":`, m.ReferenceTaskIDs)
}

// Messages returns about the length of the messages of ms encoded, each
// followed by a comma (a JSON array of them is Messages(ms)+1 bytes).
func Messages(ms []a2a.Message) int {
	n := 0
	for i := range ms {
		n += Message(&ms[i]) + 1
	}
	return n
}

// Artifact returns about the length of a encoded.
func Artifact(a *a2a.Artifact) int {
	return 2 + len(`"artifactId":`) + String(a.ArtifactID) + optional(`,"name":`, a.Name) +
		optional(`,"description":`, a.Description) + len(`,"parts":`) + Parts(a.Parts) +
		object(`,"metadata":`, a.Metadata) + stringList(`,"extensions":`, a.Extensions)
}

// Status returns about the length of s encoded ("null" for nil).
func Status(s *a2a.TaskStatus) int {
	if s == nil {
		return len("null")
	}
	n := 2 + len(`"state":`) + String(string(s.State)) + optional(`,"timestamp":`, s.Timestamp)
	if s.Message != nil {
		n += len(`,"message":`) + Message(s.Message)
	}
	return n
}

// TaskHead returns about the length of t encoded without its history and
// metadata, the members that come last.
func TaskHead(t *a2a.Task) int {
	n := 2 + len(`"id":`) + String(t.ID) + optional(`,"contextId":`, t.ContextID) + len(`,"status":`) + Status(t.Status)
	if t.Artifacts != nil {
		n += len(`,"artifacts":`) + 2 + commas(len(t.Artifacts))
		for i := range t.Artifacts {
			n += Artifact(&t.Artifacts[i])
		}
	}
	return n
}

// Task returns about the length of t encoded (its AppendJSON).
func Task(t *a2a.Task) int {
	n := TaskHead(t) + object(`,"metadata":`, t.Metadata)
	if t.History != nil {
		n += len(`,"history":`) + 2 + Messages(t.History)
	}
	return n
}
