//go:build !unix

package main

import (
	"github.com/a2abind/a2abind/agent"
)

// wakeOnSignals does nothing here: this system has no SIGUSR1 and SIGUSR2.
func wakeOnSignals(*agent.Offline, func(awake bool)) (stop func()) { return func() {} }
