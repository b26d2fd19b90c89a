package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// The tests of the rate-limited log of refusals (denylog.go).

const summaryMsg = `msg="broker: refusals not logged one by one"`

// newTestDenialLog returns a denial log on logs with the fake clock, whose
// sweeps are not run by a timer but handed to the test (sweeps).
func newTestDenialLog(logs *logBuffer, clock *fakeClock) (*denialLog, *[]func()) {
	d := newDenialLog(newTestLogger(logs), clock.Now)
	var sweeps []func()
	d.after = func(_ time.Duration, f func()) *time.Timer {
		sweeps = append(sweeps, f)
		return time.NewTimer(time.Hour)
	}
	return d, &sweeps
}

// TestDenialLogBurstThenSummary: per kind and source, the first
// denialLogBurst refusals of an interval are logged, the others counted
// and summarised when the interval ends or the log is flushed; another
// source, or another kind, has a burst of its own.
func TestDenialLogBurstThenSummary(t *testing.T) {
	var logs logBuffer
	clock := newFakeClock()
	d, sweeps := newTestDenialLog(&logs, clock)
	for i := range 1000 {
		d.warn(d.log, denyPublish, "acme/lab/mallory", "broker: publish refused: not authorized", "n", i)
	}
	for i := range 3 {
		d.warn(d.log, denyPublish, "acme/lab/eve", "broker: publish refused: not authorized", "n", i)
		d.warn(d.log, denySubscribe, "acme/lab/mallory", "broker: subscription refused: not authorized", "n", i)
	}
	out := logs.String()
	if got := strings.Count(out, `publish refused`); got != denialLogBurst+3 {
		t.Fatalf("%d publish refusals logged, want %d:\n%s", got, denialLogBurst+3, out)
	}
	if got := strings.Count(out, `subscription refused`); got != 3 {
		t.Fatalf("%d subscription refusals logged, want 3:\n%s", got, out)
	}
	if !strings.Contains(out, " n=4 further=") || strings.Contains(out, " n=5 ") {
		t.Fatalf("the burst's last line does not say the rest are counted, or a sixth is logged:\n%s", out)
	}
	if strings.Contains(out, summaryMsg) || len(*sweeps) != 1 {
		t.Fatalf("a summary before the interval ended, or %d sweeps armed:\n%s", len(*sweeps), out)
	}

	// The interval ends: the sweep summarises mallory's publishes.
	clock.Advance(denialLogInterval)
	(*sweeps)[0]()
	out = logs.String()
	want := `kind=publish source=acme/lab/mallory refused=995 since=2026-01-01T00:00:00Z`
	if strings.Count(out, summaryMsg) != 1 || !strings.Contains(out, want) {
		t.Fatalf("the summary is not one line with %q:\n%s", want, out)
	}
	// A new interval: a new burst, and the rest flushed at close.
	for i := range 12 {
		d.warn(d.log, denyPublish, "acme/lab/mallory", "broker: publish refused: not authorized", "m", i)
	}
	d.flush()
	out = logs.String()
	if got := strings.Count(out, `publish refused`); got != 2*denialLogBurst+3 {
		t.Fatalf("%d publish refusals logged, want %d:\n%s", got, 2*denialLogBurst+3, out)
	}
	if !strings.Contains(out, `kind=publish source=acme/lab/mallory refused=7 since=2026-01-01T00:01:00Z`) || strings.Count(out, summaryMsg) != 2 {
		t.Fatalf("no summary of the 7 refusals at flush:\n%s", out)
	}
	// Once flushed (the broker closing), nothing more is written.
	d.warn(d.log, denyPublish, "acme/lab/new", "broker: publish refused: not authorized")
	d.flush()
	if logs.String() != out {
		t.Fatalf("written after flush:\n%s", strings.TrimPrefix(logs.String(), out))
	}
}

// TestDenialLogBounded: past maxDenialKeys sources, new ones share one
// entry per kind, until the intervals of the others end.
func TestDenialLogBounded(t *testing.T) {
	var logs logBuffer
	clock := newFakeClock()
	d, _ := newTestDenialLog(&logs, clock)
	for i := range maxDenialKeys {
		d.warn(d.log, denyAuthentication, fmt.Sprintf("10.0.%d.%d", i/256, i%256), "broker: connection refused")
	}
	for range 2 * denialLogBurst {
		d.warn(d.log, denyAuthentication, "192.0.2.1", "broker: connection refused")
		d.warn(d.log, denyAuthentication, "192.0.2.2", "broker: connection refused")
	}
	if len(d.windows) != maxDenialKeys+1 || d.windows[denialKey{denyAuthentication, overflowSource}] == nil {
		t.Fatalf("%d entries, want %d with %s", len(d.windows), maxDenialKeys+1, overflowSource)
	}
	if w := d.windows[denialKey{denyAuthentication, overflowSource}]; w.logged != denialLogBurst || w.suppressed != 3*denialLogBurst {
		t.Fatalf("the shared entry logged %d, counted %d", w.logged, w.suppressed)
	}
	clock.Advance(denialLogInterval)
	d.warn(d.log, denyAuthentication, "192.0.2.3", "broker: connection refused")
	if len(d.windows) != 1 || d.windows[denialKey{denyAuthentication, "192.0.2.3"}] == nil {
		t.Fatalf("%d entries after the interval, want 192.0.2.3's alone", len(d.windows))
	}
	if !strings.Contains(logs.String(), `kind=authentication source="(other sources)" refused=15`) {
		t.Fatalf("no summary of the shared entry:\n%s", logs.String())
	}
}

// TestDenialFloodLogBounded: a client flooding the broker with refused
// publishes, and an address with refused connections, leave a bounded log
// (the burst, then one summary line each at Close) while Broker.Denials
// counts every refusal.
func TestDenialFloodLogBounded(t *testing.T) {
	var logs logBuffer
	clock := newFakeClock() // never advanced: one interval
	b := startSecure(t, Config{Logger: newTestLogger(&logs), now: clock.Now})
	mallory := connectAs(t, b.Addr(), userMallory)
	const publishes, connects = 500, 60
	for i := range publishes {
		if got := mallory.publishCode(&paho.Publish{Topic: requestTopic(t, "other", "unit", "x"), Payload: []byte("x")}); got != rcNotAuthorized {
			t.Fatalf("publish %d: PUBACK %#x", i, got)
		}
	}
	for i := range connects {
		cp := loginAs(userEcho)
		cp.Password = []byte("wrong")
		if ca, _ := tryConnect(t, b.Addr(), cp); ca == nil || ca.ReasonCode != rcBadUserPassword {
			t.Fatalf("connection %d: CONNACK %+v", i, ca)
		}
	}
	if d := b.Denials(); d.Publish != publishes || d.Authentication != connects {
		t.Fatalf("Denials: %d publishes, %d authentications; want %d, %d", d.Publish, d.Authentication, publishes, connects)
	}
	out := logs.String()
	if got := strings.Count(out, `msg="broker: publish refused: not authorized"`); got != denialLogBurst {
		t.Fatalf("%d publish refusals logged, want %d", got, denialLogBurst)
	}
	if got := strings.Count(out, `msg="broker: connection refused: bad user name or password"`); got != denialLogBurst {
		t.Fatalf("%d connection refusals logged, want %d", got, denialLogBurst)
	}
	b.Close()
	out = logs.String()
	for _, want := range []string{
		fmt.Sprintf(`kind=publish source=acme/lab/mallory refused=%d`, publishes-denialLogBurst),
		fmt.Sprintf(`kind=authentication source=127.0.0.1 refused=%d`, connects-denialLogBurst),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no summary %q at Close:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "level=WARN"); got > 20 {
		t.Errorf("%d WARN lines for %d refusals:\n%s", got, publishes+connects, out)
	}
}
