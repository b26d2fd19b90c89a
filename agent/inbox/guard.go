package inbox

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// errTimedOut reports that reading a file took longer than allowed.
var errTimedOut = errors.New("reading the file timed out")

// panicError is a panic (or a memory fault) caught while reading a file.
type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprintf("reading the file panicked: %v", p.v) }

// guarded runs fn in a goroutine of its own in which a memory fault is a
// panic rather than a crash (bbolt reads its file through a memory map,
// and a page of a damaged or truncated file can fault: see
// debug.SetPanicOnFault), and returns fn's error, a panic as a
// *panicError, or errTimedOut when fn has not returned within timeout.
// A goroutine that timed out is left to finish; cleanup, if not nil, runs
// when it does.
func guarded(timeout time.Duration, fn func() error, cleanup func()) error {
	var (
		mu                  sync.Mutex
		finished, abandoned bool
	)
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = &panicError{p}
			}
			mu.Lock()
			finished = true
			late := abandoned
			mu.Unlock()
			if late && cleanup != nil {
				cleanup()
			}
			done <- err
		}()
		err = fn()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	mu.Lock()
	defer mu.Unlock()
	if finished {
		return <-done
	}
	abandoned = true
	return errTimedOut
}

// try runs fn and reports whether it returned without panicking. Called in
// a guarded goroutine, it also catches memory faults.
func try(fn func()) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	fn()
	return true
}

// fileCatcher opens files for bbolt and keeps the last one, so that it
// can be closed (releasing its lock) when bbolt panics before returning
// its database.
type fileCatcher struct {
	mu sync.Mutex
	f  *os.File
}

func (c *fileCatcher) open(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err == nil {
		c.mu.Lock()
		c.f = f
		c.mu.Unlock()
	}
	return f, err
}

// close closes the file caught, if any.
func (c *fileCatcher) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}
