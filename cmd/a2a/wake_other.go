//go:build !unix

package main

import (
	"io"

	"github.com/a2abind/a2abind/agent"
)

// wakeOnSignals does nothing here: this system has no SIGUSR1 and SIGUSR2.
func wakeOnSignals(io.Writer, *agent.Offline) (stop func()) { return func() {} }
