//go:build !purego

package runtime

// haveVectorScan says plainUntilVector is the assembly of scan_amd64.s:
// SSE2, which every amd64 processor has.
const haveVectorScan = true

// plainUntilVector returns the index of the first byte of b at or after i
// that needs escaping or a UTF-8 check, reading sixteen bytes at a time,
// or the index reached when fewer than sixteen are left. i must be within
// b.
//
//go:noescape
func plainUntilVector(b []byte, i int) int
