// Package runtime holds the support code that a2agen copies, unchanged but for
// its package clause, into every generated package that has type schemas: the
// JSON decoder and encoder primitives, the validation collector and the
// format checks. It is a real package so that it compiles and is tested on its
// own; generated code never imports it.
//
// Identifiers here are unexported and prefixed so that they cannot clash
// with generated type names, except SyntaxError, Violation and
// ValidationError: aliases of the types in package schemaerr, so that every
// generated package returns the same error types.
package runtime
