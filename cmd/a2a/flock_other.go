//go:build !unix

package main

import "os"

// lockFile is a no-op where flock(2) does not exist: concurrent runs of
// a2a send may then lose a route update.
func lockFile(*os.File, bool) error { return nil }
