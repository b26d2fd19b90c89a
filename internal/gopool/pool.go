// Package gopool runs functions on goroutines that are kept for reuse.
//
// A goroutine that serves a request grows its stack while it decodes,
// validates and publishes; a fresh goroutine per request pays for that
// growth (a stack copy or two) every time. A Pool keeps finished goroutines
// parked for a while, their stacks grown, and hands the next function to one
// of them.
package gopool

import (
	"sync"
	"time"
)

// DefaultIdle is how long a parked goroutine waits for work before it
// exits, when New is given zero.
const DefaultIdle = 10 * time.Second

// Pool runs functions on reusable goroutines. Its zero value is not usable;
// call New. It never limits how many functions run at once: a function that
// finds no parked goroutine gets a new one.
type Pool struct {
	work chan func()
	idle time.Duration
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// New returns a pool whose parked goroutines exit after idle without work
// (DefaultIdle when idle is zero).
func New(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{work: make(chan func()), idle: idle, quit: make(chan struct{})}
}

// Go runs fn on a parked goroutine, or on a new one when none is parked.
// It never blocks. After Close, fn still runs, on a goroutine that then
// exits.
func (p *Pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.wg.Add(1)
		go p.worker(fn)
	}
}

func (p *Pool) worker(fn func()) {
	defer p.wg.Done()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(p.idle)
		select {
		case fn = <-p.work:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// Close makes parked goroutines exit and waits until every function handed
// to Go has returned.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.quit) })
	p.wg.Wait()
}
