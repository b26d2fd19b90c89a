package gopool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryFunctionRunsOnce(t *testing.T) {
	p := New(0)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.Go(func() { n.Add(1); wg.Done() })
	}
	wg.Wait()
	p.Close()
	if n.Load() != 1000 {
		t.Fatalf("%d of 1000 ran", n.Load())
	}
}

func TestFunctionsRunConcurrentlyWithoutLimit(t *testing.T) {
	p := New(0)
	defer p.Close()
	const k = 50
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(k)
	for range k {
		p.Go(func() { started.Done(); <-release })
	}
	// All k block at once: none waits for another to finish.
	started.Wait()
	close(release)
}

func TestAParkedGoroutineIsReused(t *testing.T) {
	p := New(time.Minute)
	defer p.Close()
	ids := make(chan uint64, 2)
	done := make(chan struct{})
	p.Go(func() { ids <- goid(); done <- struct{}{} })
	<-done
	// The first goroutine parks after sending on done; wait until it is
	// receiving again, then hand it the second function.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case p.work <- funcTask(func() { ids <- goid() }):
			if a, b := <-ids, <-ids; a != b {
				t.Fatalf("second function ran on goroutine %d, not on the parked %d", b, a)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the first goroutine never parked")
		}
		runtime.Gosched()
	}
}

func TestIdleGoroutinesExit(t *testing.T) {
	p := New(20 * time.Millisecond)
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	exited := make(chan struct{})
	go func() { p.wg.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a parked goroutine outlived its idle time")
	}
}

func TestGoAfterCloseStillRuns(t *testing.T) {
	p := New(0)
	p.Close()
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	p.Close()
}

// goid reads the running goroutine's id from its stack header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	// "goroutine 123 [running]:..."
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// blocking is a task that blocks until released, holding nothing of
// itself while it waits.
type blocking struct {
	entered, release chan struct{}
	_                [1 << 16]byte
}

func (b *blocking) Run() {
	entered, release := b.entered, b.release
	close(entered)
	<-release
}

// TestARunningTaskIsNotKeptAliveByItsWorker checks that a worker does not
// keep the task it runs reachable: a task that no longer needs itself
// while it blocks (a request's turn waiting for its handler) is collected
// meanwhile, on a new goroutine and on a reused one.
func TestARunningTaskIsNotKeptAliveByItsWorker(t *testing.T) {
	for _, reused := range []bool{false, true} {
		p := New(time.Minute)
		if reused {
			// A first task, so that the second may run on the parked
			// goroutine.
			done := make(chan struct{})
			p.Go(func() { close(done) })
			<-done
		}
		entered, release, collected := make(chan struct{}), make(chan struct{}), make(chan struct{})
		func() {
			b := &blocking{entered: entered, release: release}
			runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, collected)
			p.Run(b)
		}()
		<-entered
		deadline := time.After(10 * time.Second)
		for done := false; !done; {
			runtime.GC()
			select {
			case <-collected:
				done = true
			case <-deadline:
				close(release)
				p.Close()
				t.Fatalf("reused %v: the running task is still reachable", reused)
			case <-time.After(10 * time.Millisecond):
			}
		}
		close(release)
		p.Close()
	}
}
