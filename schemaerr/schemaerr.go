// Package schemaerr holds the errors that every generated decoder and
// validator returns: a *SyntaxError for bytes that are not JSON, a
// *ValidationError listing every Violation of a value that breaks its
// schema.
//
// Each generated package (generated/a2a, generated/offline, and those a2agen
// makes from your own schemas) names them too (a2a.ValidationError,
// offline.ValidationError, …), as aliases of these, so one errors.As
// recognises the errors of every generated package:
//
//	var verr *schemaerr.ValidationError
//	if errors.As(err, &verr) {
//		for _, v := range verr.Violations {
//			fmt.Println(v.Pointer, v.Rule, v.Message)
//		}
//	}
package schemaerr

import "strconv"

// SyntaxError reports bytes that are not JSON.
type SyntaxError struct {
	// Offset is the byte offset at which the problem was found.
	Offset int
	// Msg says what was expected.
	Msg string
}

// Error reports the offset and the problem.
func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Violation is one rule that a value breaks.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value ("" for the
	// document itself).
	Pointer string
	// Rule is the JSON Schema keyword that failed: required, type, enum,
	// const, not, minLength, maxLength, minItems, maxItems, minimum, maximum,
	// pattern, format, contentEncoding, oneOf or minProperties.
	Rule string
	// Message says what is wrong, for people.
	Message string
}

// String renders the violation as "pointer: rule: message".
func (v Violation) String() string {
	p := v.Pointer
	if p == "" {
		p = "(document)"
	}
	return p + ": " + v.Rule + ": " + v.Message
}

// ValidationError lists the violations found in a value, sorted by pointer.
// A generated validator records at most 100 of them and counts the rest in
// Omitted, so that a value with very many mistakes gets a report of
// bounded size.
type ValidationError struct {
	Violations []Violation
	// Omitted counts the violations found beyond those listed.
	Omitted int
}

// Total returns how many violations were found, listed or not.
func (e *ValidationError) Total() int { return len(e.Violations) + e.Omitted }

// Error reports the first violation and how many more there are.
func (e *ValidationError) Error() string {
	if len(e.Violations) == 0 {
		return "invalid value"
	}
	msg := "invalid value: " + e.Violations[0].String()
	if n := e.Total() - 1; n > 0 {
		msg += " (and " + strconv.Itoa(n) + " more)"
	}
	return msg
}
