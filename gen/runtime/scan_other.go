//go:build !amd64 || purego

package runtime

// haveVectorScan says plainUntilVector is only plainUntilWords: no
// assembly for this architecture (or the purego tag was given).
const haveVectorScan = false

func plainUntilVector(b []byte, i int) int { return plainUntilWords(b, i) }
