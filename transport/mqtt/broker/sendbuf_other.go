//go:build !unix

package broker

import "syscall"

// canWriteNow: there is no write without waiting here; everything goes
// through the writer.
const canWriteNow = false

func writeNow(syscall.RawConn, []byte) (int, error) { return 0, nil }
