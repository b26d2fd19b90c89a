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
// exits, when New is given zero: between one and two such periods.
const DefaultIdle = 10 * time.Second

// Pool runs functions on reusable goroutines. Its zero value is not usable;
// call New. It never limits how many functions run at once: a function that
// finds no parked goroutine gets a new one.
type Pool struct {
	work chan Task
	idle time.Duration
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// New returns a pool whose parked goroutines exit after between one and
// two periods of idle without work (DefaultIdle when idle is zero).
func New(idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{work: make(chan Task), idle: idle, quit: make(chan struct{})}
}

// Task is work for a pool: a value whose Run method the pool calls once. A
// pointer that is a Task is handed over without the allocation of a
// closure around it.
type Task interface {
	Run()
}

// funcTask is a function as a Task.
type funcTask func()

func (f funcTask) Run() { f() }

// Go runs fn on a parked goroutine, or on a new one when none is parked.
// It never blocks. After Close, fn still runs, on a goroutine that then
// exits.
func (p *Pool) Go(fn func()) { p.Run(funcTask(fn)) }

// Run is Go for a Task: it calls t.Run on a parked goroutine, or on a new
// one when none is parked.
func (p *Pool) Run(t Task) {
	select {
	case p.work <- t:
	default:
		p.wg.Add(1)
		go p.worker(t)
	}
}

// worker runs t, then the tasks handed to it, until it has been parked
// for a whole idle period (next).
//
// t is not live while it runs: every path from one Run to the next goes
// through an assignment of t (next returns the task to run), so a task
// that blocks does not keep itself, and what it holds (a request's
// bytes), alive through the worker.
func (p *Pool) worker(t Task) {
	defer p.wg.Done()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		t.Run()
		if t = p.next(idle); t == nil {
			return
		}
	}
}

// next waits for the next task of a worker whose idle timer is idle, and
// returns it; nil when the worker is to exit: the pool closed, or the
// timer fired twice with no task between. The timer is not reset for each
// task: when it fires, a worker that ran a task since the last time goes
// on.
func (p *Pool) next(idle *time.Timer) Task {
	worked := true
	for {
		select {
		case t := <-p.work:
			return t
		case <-idle.C:
			if !worked {
				return nil
			}
			worked = false
			idle.Reset(p.idle)
		case <-p.quit:
			return nil
		}
	}
}

// Close makes parked goroutines exit and waits until every function handed
// to Go has returned.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.quit) })
	p.wg.Wait()
}
