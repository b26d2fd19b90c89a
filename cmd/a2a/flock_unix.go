//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockFile takes an advisory lock on f (shared or exclusive), waiting for
// it; the lock ends when f is closed.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
