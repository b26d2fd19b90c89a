package mqtttest

import (
	"context"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// Embedded is the embedded broker (transport/mqtt/broker) started for a
// test.
type Embedded struct {
	t   testing.TB
	cfg broker.Config

	mu   sync.Mutex
	b    *broker.Broker // nil when stopped
	addr string
}

var _ Broker = (*Embedded)(nil)

// StartEmbedded starts the embedded broker on a free loopback port with its
// default limits; it is closed when the test ends.
func StartEmbedded(t testing.TB, opts ...Option) *Embedded {
	t.Helper()
	o := collect(opts)
	e := &Embedded{t: t, cfg: broker.Config{Status: o.status, Logger: o.logger,
		PasswordFile: o.passwordFile, ACLFile: o.aclFile, Root: o.root}}
	if o.persistence {
		e.cfg.DataDir = t.TempDir()
	}
	e.start()
	t.Cleanup(e.Stop)
	return e
}

func (e *Embedded) start() {
	e.t.Helper()
	b, err := broker.Start(context.Background(), e.cfg)
	if err != nil {
		e.t.Fatalf("mqtttest: start the embedded broker: %v", err)
	}
	e.mu.Lock()
	e.b, e.addr = b, b.Addr()
	e.mu.Unlock()
	// Restart binds the same port.
	e.cfg.Addr = b.Addr()
}

// Name returns NameEmbedded.
func (e *Embedded) Name() string { return NameEmbedded }

// Addr returns "127.0.0.1:PORT".
func (e *Embedded) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.addr
}

// URL returns "mqtt://127.0.0.1:PORT".
func (e *Embedded) URL() string { return "mqtt://" + e.Addr() }

// Restart closes the broker and starts it again on the same port and data
// directory.
func (e *Embedded) Restart() {
	e.t.Helper()
	e.Stop()
	e.start()
}

// Stop closes the broker.
func (e *Embedded) Stop() {
	e.t.Helper()
	e.mu.Lock()
	b := e.b
	e.b = nil
	e.mu.Unlock()
	if b == nil {
		return
	}
	if err := b.Close(); err != nil {
		e.t.Errorf("mqtttest: close the embedded broker: %v", err)
	}
}
