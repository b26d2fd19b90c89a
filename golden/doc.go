// Package golden holds the golden and differential tests of a2agen and of the
// code it generates. Its data lives beside the tests:
//
//   - cases/<name>/schema: a schema set, and cases/<name>/want: what a2agen
//     generates from it (compiled as a Go package and exercised by tests);
//   - payloads/: valid and invalid payloads checked against both the
//     generated validators and a JSON Schema engine.
//
// Refresh the goldens after an intended change with
//
//	go test ./golden -update
package golden
