//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/a2abind/a2abind/agent"
)

// wakeOnSignals wakes the agent on SIGUSR1 and puts it to sleep on SIGUSR2
// until stop is called, telling said each time.
func wakeOnSignals(o *agent.Offline, said func(awake bool)) (stop func()) {
	if o == nil {
		return func() {}
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				awake := sig == syscall.SIGUSR1
				o.SetAwake(awake)
				said(awake)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
