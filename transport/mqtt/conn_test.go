package mqtt

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// recordLog is a slog.Handler that keeps the level, message and
// attributes of every record at min or above.
type recordLog struct {
	min  slog.Level
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (l *recordLog) Enabled(_ context.Context, level slog.Level) bool { return level >= l.min }

func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Any()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
	return nil
}

func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *recordLog) WithGroup(string) slog.Handler      { return l }

// matching returns the records whose message contains s.
func (l *recordLog) matching(s string) []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRecord
	for _, r := range l.recs {
		if strings.Contains(r.msg, s) {
			out = append(out, r)
		}
	}
	return out
}

// eventually polls cond until it holds, failing the test past the
// deadline.
func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReconnectsUntilConfirmed: after a reconnect, a connection whose
// subscriptions or announce fail while it stays up (a SUBACK that never
// comes, a refusal that may pass later) is dropped and made again, with a
// backoff, until they succeed; the failures are logged once for the burst,
// not each time.
func TestReconnectsUntilConfirmed(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		const topic = "test/confirm"
		logged := &recordLog{min: slog.LevelDebug}
		got := make(chan *paho.Publish, 10)
		var calls atomic.Int32
		cn, err := dial(testCtx(t), connConfig{broker: b.URL(), clientID: "acme/lab/flaky", connectTimeout: time.Second,
			log: slog.New(logged),
			onPublish: func(pr paho.PublishReceived) {
				select {
				case got <- pr.Packet:
				default:
				}
			},
			onUp: func(ctx context.Context, cm *autopaho.ConnectionManager, _ BrokerCapabilities) error {
				switch calls.Add(1) {
				case 2: // no SUBACK in time
					<-ctx.Done()
					return ctx.Err()
				case 3, 4: // refused for now (0x97 quota exceeded may pass later)
					return &SubscribeError{Filter: topic, ReasonCode: 0x97}
				}
				return subscribe(ctx, cm, topic)
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cn.close(context.Background()) })
		cn.mu.Lock()
		cn.netc.Close() // the connection drops; the next three fail to confirm
		cn.mu.Unlock()
		eventually(t, "confirmed again", 30*time.Second, func() bool {
			cn.mu.Lock()
			defer cn.mu.Unlock()
			return calls.Load() >= 5 && cn.up && !cn.readyAt.IsZero()
		})
		if n := calls.Load(); n != 5 {
			t.Errorf("onUp ran %d times, want 5 (one per connection)", n)
		}
		pub := dialRaw(t, b.URL(), "acme/lab/pub")
		if _, err := pub.cm.Publish(testCtx(t), &paho.Publish{Topic: topic, QoS: 1, Payload: []byte("hi")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-testCtx(t).Done():
			t.Fatal("the confirmed connection receives nothing")
		}
		if recs := logged.matching("failed after connect; reconnecting"); len(recs) != 1 || recs[0].level != slog.LevelError {
			t.Errorf("the failures were logged as %+v, want one error line for the burst", recs)
		}
	})
}

// TestDialFirstConnection: a refusal on the first connection fails dial
// at once; any other failure of the first onUp is retried within the
// connect timeout.
func TestDialFirstConnection(t *testing.T) {
	b := startBroker(t, false)
	t.Run("refused", func(t *testing.T) {
		start := time.Now()
		_, err := dial(testCtx(t), connConfig{broker: b.URL(), clientID: "acme/lab/refused", connectTimeout: 20 * time.Second,
			onUp: func(context.Context, *autopaho.ConnectionManager, BrokerCapabilities) error {
				return &PublishError{Topic: "t", ReasonCode: 0x87}
			}})
		var pe *PublishError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want the *PublishError", err)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("dial waited %v for a refusal", time.Since(start))
		}
	})
	t.Run("lost", func(t *testing.T) {
		var calls atomic.Int32
		cn, err := dial(testCtx(t), connConfig{broker: b.URL(), clientID: "acme/lab/lost", connectTimeout: 20 * time.Second,
			onUp: func(ctx context.Context, cm *autopaho.ConnectionManager, _ BrokerCapabilities) error {
				if calls.Add(1) == 1 {
					return paho.ErrConnectionLost
				}
				return subscribe(ctx, cm, "t/lost")
			}})
		if err != nil {
			t.Fatal(err)
		}
		cn.close(context.Background())
		if n := calls.Load(); n != 2 {
			t.Errorf("onUp ran %d times, want 2", n)
		}
	})
	t.Run("never", func(t *testing.T) {
		_, err := dial(testCtx(t), connConfig{broker: b.URL(), clientID: "acme/lab/never", connectTimeout: time.Second,
			onUp: func(ctx context.Context, _ *autopaho.ConnectionManager, _ BrokerCapabilities) error {
				<-ctx.Done()
				return ctx.Err()
			}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
	})
}

// TestTakeoversLoggedOncePerBurst: a client taken over again and again
// logs the first takeover at once and the rest as one count once they
// stop, and keeps reconnecting. mosquitto 2.0.11 closes a session taken
// over without DISCONNECT 0x8E (the embedded broker sends it, MQTT v5
// §3.1.4): there the client sees connections lost, logged the same way.
func TestTakeoversLoggedOncePerBurst(t *testing.T) {
	t.Parallel()
	forEachBrokerParallel(t, func(t *testing.T, b mqtttest.Broker, _ *recordLog) {
		first, again := "session taken over: another connection", "session taken over again"
		if b.Name() == mqtttest.NameMosquitto {
			first, again = "connection lost; reconnecting", "connection lost again"
		}
		logged := &recordLog{min: slog.LevelDebug}
		cn, err := dial(testCtx(t), connConfig{broker: b.URL(), clientID: "acme/lab/taken", log: slog.New(logged),
			onUp: func(ctx context.Context, cm *autopaho.ConnectionManager, _ BrokerCapabilities) error {
				return subscribe(ctx, cm, "t/taken")
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cn.close(context.Background()) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		connected, closeBurst := takeoverBurst(ctx, b.Addr(), "acme/lab/taken", 10, 2*time.Second)
		defer closeBurst()
		if connected < 2 {
			t.Fatalf("%d takeovers connected", connected)
		}
		eventually(t, "the count after the burst", 2*eventQuiet, func() bool { return len(logged.matching(again)) == 1 })
		if recs := logged.matching(first); len(recs) != 1 || recs[0].level != slog.LevelWarn {
			t.Fatalf("takeovers logged as %+v, want one warning at first", recs)
		}
		if more, ok := logged.matching(again)[0].attrs["more"].(int64); !ok || more < 1 {
			t.Errorf("the count says %v more", logged.matching(again)[0].attrs["more"])
		}
		// Beside the capabilities of the first CONNACK, logged at connect
		// (a reconnect logs them only if they change).
		caps := logged.matching("broker capabilities (CONNACK)")
		if all := logged.matching(""); len(all) != 2+len(caps) || len(caps) != 1 {
			t.Errorf("%d lines logged for the burst, want 2 and the capabilities once: %+v", len(all), all)
		}
		eventually(t, "reconnected and confirmed", 10*time.Second, func() bool {
			cn.mu.Lock()
			defer cn.mu.Unlock()
			return cn.up && !cn.readyAt.IsZero()
		})
	})
}

// TestEventLog: the first event of a burst is logged at once, the rest
// are counted and logged once the burst has been quiet, or every period
// while it goes on.
func TestEventLog(t *testing.T) {
	logged := &recordLog{min: slog.LevelDebug}
	l := newEventLog(slog.New(logged), slog.LevelWarn, "first", "again", "client", "c")
	l.quiet, l.period = 50*time.Millisecond, time.Hour
	for range 5 {
		l.event("n", 1)
	}
	if got := len(logged.matching("first")); got != 1 {
		t.Fatalf("%d first lines", got)
	}
	eventually(t, "the count", time.Second, func() bool { return len(logged.matching("again")) == 1 })
	rec := logged.matching("again")[0]
	if rec.attrs["more"] != int64(4) || rec.attrs["client"] != "c" {
		t.Errorf("count line %+v, want 4 more for client c", rec.attrs)
	}
	l.event()
	if got := len(logged.matching("first")); got != 2 {
		t.Fatalf("a new burst: %d first lines, want 2", got)
	}
	// A burst that never pauses is counted every period.
	l.period = 20 * time.Millisecond
	for range 6 {
		time.Sleep(10 * time.Millisecond)
		l.event()
	}
	if got := len(logged.matching("again")); got < 2 {
		t.Errorf("%d count lines during a long burst, want a count every period", got)
	}
	l.close()
	l.event()
	if got := len(logged.matching("first")); got != 2 {
		t.Errorf("an event after close was logged")
	}
}

// TestReconnectDelay: no wait after a stable connection, then a growing,
// jittered wait bounded by reconnectBackoffMax.
func TestReconnectDelay(t *testing.T) {
	var c conn
	if d := c.reconnectDelay(); d != 0 {
		t.Fatalf("after a stable connection: %v", d)
	}
	prevMax := time.Duration(0)
	for n := 1; n <= 40; n++ {
		c.unstable = n
		want := min(reconnectBackoffMin<<min(n-1, 10), reconnectBackoffMax)
		for range 20 {
			d := c.reconnectDelay()
			if d < want/2 || d > want {
				t.Fatalf("%d unstable connections: %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
		if want < prevMax {
			t.Fatalf("the bound shrank at %d", n)
		}
		prevMax = want
	}
}
