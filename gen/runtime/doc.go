// Package runtime is the support code of the Go packages that a2agen
// generates: the JSON decoder and encoder primitives, the validation
// collector, the format checks and the helpers each generated field calls.
//
// It is for generated code only, the way google.golang.org/protobuf's
// protoimpl is: its API follows what the generator emits and may change
// between versions of this module without notice. Call the generated
// packages instead (Validate, ParseXJSON, ValidateXJSON, UnmarshalJSON,
// MarshalJSON); their error types are the ones of package schemaerr.
//
// Generated code checks at compile time that it was generated for a version
// of this package that the package supports (see [EnforceVersion]), so a
// generated package and a runtime that do not fit fail to build instead of
// misbehaving.
//
// Strings are read and written in runs: the scan for the next byte that
// needs an escape or a UTF-8 check reads sixteen bytes at a time with SSE2
// on amd64 (scan_amd64.s) and eight at a time in Go elsewhere; the build
// tag purego keeps the Go scan on amd64 too. Both give the same answers
// (TestPlainUntilFindsTheFirstByteThatNeedsAttention).
package runtime

// The versions of generated code this package supports. GenVersion is the
// version a2agen emits today; generated code of any version from MinVersion
// to MaxVersion builds against this package. Version 3 checks as it reads
// (Decoder.Check, Checking, Verdict); version 2 code must be regenerated.
const (
	GenVersion = 3
	MinVersion = 3
	MaxVersion = GenVersion
)

// EnforceVersion is used by generated code to check, at compile time, that
// its version lies between MinVersion and MaxVersion: the generated package
// declares
//
//	const (
//		_ = runtime.EnforceVersion(GenVersion - runtime.MinVersion)
//		_ = runtime.EnforceVersion(runtime.MaxVersion - GenVersion)
//	)
//
// with its own GenVersion written as a number, and a negative constant does
// not convert to an unsigned type.
type EnforceVersion uint
