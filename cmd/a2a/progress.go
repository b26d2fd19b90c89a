package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows on stderr, when stderr is a terminal, what a command
// waits for: a spinner, the time since it began, and the attempt. It draws
// nothing for the first progressDelay (a quick answer shows none) and
// nothing at all when stderr is not a terminal. Its methods are safe on a
// nil *progress.
type progress struct {
	w           io.Writer
	tty         bool
	maxAttempts int
	start       time.Time
	// retries counts the retries the requester scheduled (countRetry).
	retries atomic.Int64

	mu    sync.Mutex
	label string
	drawn bool
	done  chan struct{}
	wg    sync.WaitGroup
}

// progressDelay is how long a wait lasts before progress shows it.
const progressDelay = 300 * time.Millisecond

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startProgress starts showing progress on stderr when it is a terminal;
// maxAttempts is the attempts a request may take (--attempts).
func startProgress(stderr io.Writer, maxAttempts int) *progress {
	p := &progress{w: stderr, maxAttempts: maxAttempts, start: time.Now(), done: make(chan struct{})}
	if f, ok := stderr.(*os.File); ok && passwdTerminal(f) {
		p.tty = true
		p.wg.Add(1)
		go p.run()
	}
	return p
}

// countRetry is the requester's Jitter (requester.Config): the requester
// draws one jitter for each retry it schedules, after an attempt went
// unanswered, so the draws count the attempts.
func (p *progress) countRetry() float64 {
	p.retries.Add(1)
	return rand.Float64()
}

// set says what the command waits for now.
func (p *progress) set(label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

func (p *progress) run() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for frame := 0; ; frame++ {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		elapsed := time.Since(p.start)
		if elapsed < progressDelay {
			continue
		}
		attempt := fmt.Sprintf("attempt %d", p.retries.Load()+1)
		if n := int(p.retries.Load()) + 1; n <= p.maxAttempts {
			attempt += fmt.Sprintf("/%d", p.maxAttempts)
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "\r%s %s  %.1fs  %s\x1b[K", spinnerFrames[frame%len(spinnerFrames)], p.label, elapsed.Seconds(), attempt)
		p.drawn = true
		p.mu.Unlock()
	}
}

// clear erases the progress line, before a line of output; the next tick
// draws it again.
func (p *progress) clear() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// stop erases the progress line for good.
func (p *progress) stop() {
	if p == nil || !p.tty {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.wg.Wait()
	p.clear()
}
