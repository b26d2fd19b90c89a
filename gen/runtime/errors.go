package runtime

import "github.com/a2abind/a2abind/schemaerr"

// SyntaxError reports bytes that are not JSON. It is schemaerr.SyntaxError,
// the same type in every generated package.
type SyntaxError = schemaerr.SyntaxError

// Violation is one rule that a value breaks. It is schemaerr.Violation.
type Violation = schemaerr.Violation

// ValidationError lists every violation found in a value, sorted by
// pointer. It is schemaerr.ValidationError, the same type in every
// generated package, so one errors.As recognises them all.
type ValidationError = schemaerr.ValidationError
