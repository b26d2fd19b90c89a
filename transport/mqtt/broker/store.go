package broker

import (
	"log/slog"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"github.com/mochi-mqtt/server/v2/packets"
)

// store is mochi's bbolt storage hook behind a lock. mochi calls some
// storage events from its housekeeping goroutine (expired clients,
// retained messages and in-flight messages), which Server.Close does not
// wait for, and the bolt hook's Stop sets its database to nil unguarded: a
// late event would race with Stop or dereference nil. Here every event
// holds a read lock and is skipped once Stop (which holds the write lock)
// has run. $SYS statistics are not stored.
type store struct {
	mqtt.HookBase

	mu      sync.RWMutex
	inner   *bolt.Hook
	stopped bool
	stopErr error
}

func newStore() *store {
	return &store{inner: new(bolt.Hook)}
}

// storeEvents are the events of the bolt hook this package keeps.
var storeEvents = [...]byte{
	mqtt.OnSessionEstablished,
	mqtt.OnDisconnect,
	mqtt.OnSubscribed,
	mqtt.OnUnsubscribed,
	mqtt.OnRetainMessage,
	mqtt.OnWillSent,
	mqtt.OnQosPublish,
	mqtt.OnQosComplete,
	mqtt.OnQosDropped,
	mqtt.OnClientExpired,
	mqtt.OnRetainedExpired,
	mqtt.StoredClients,
	mqtt.StoredInflightMessages,
	mqtt.StoredRetainedMessages,
	mqtt.StoredSubscriptions,
}

// ID names the hook in mochi's log.
func (s *store) ID() string { return "a2a-bolt-store" }

// Provides reports the events the hook handles.
func (s *store) Provides(b byte) bool {
	for _, e := range storeEvents {
		if e == b {
			return true
		}
	}
	return false
}

// SetOpts passes the server's logger to the bolt hook, which logs its
// write errors through it.
func (s *store) SetOpts(l *slog.Logger, o *mqtt.HookOptions) {
	s.HookBase.SetOpts(l, o)
	s.inner.SetOpts(l, o)
}

// Init opens the database; config is a *bolt.Options.
func (s *store) Init(config any) error {
	return s.inner.Init(config)
}

// Stop closes the database; later events are ignored.
func (s *store) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	s.stopErr = s.inner.Stop()
	return s.stopErr
}

// stopError returns the result of Stop.
func (s *store) stopError() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stopErr
}

// do runs f unless the store is stopped.
func (s *store) do(f func()) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.stopped {
		f()
	}
}

// OnSessionEstablished stores the client.
func (s *store) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	s.do(func() { s.inner.OnSessionEstablished(cl, pk) })
}

// OnDisconnect forgets a client whose session ended.
func (s *store) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	s.do(func() { s.inner.OnDisconnect(cl, err, expire) })
}

// OnSubscribed stores the subscriptions the broker granted. mochi v2.7.9
// hands the bolt hook every filter of the SUBSCRIBE, refused ones included
// (with their failure reason code as QoS), and reads them all back at the
// next start as subscriptions: a filter refused as not authorized would be
// granted after a restart. Only filters with a reason code below 0x80 are
// stored.
func (s *store) OnSubscribed(cl *mqtt.Client, pk packets.Packet, reasonCodes []byte) {
	granted := pk
	granted.Filters = nil
	var codes []byte
	for i, sub := range pk.Filters {
		if i < len(reasonCodes) && reasonCodes[i] < packets.ErrUnspecifiedError.Code {
			granted.Filters = append(granted.Filters, sub)
			codes = append(codes, reasonCodes[i])
		}
	}
	if len(codes) == 0 {
		return
	}
	s.do(func() { s.inner.OnSubscribed(cl, granted, codes) })
}

// OnUnsubscribed forgets subscriptions.
func (s *store) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	s.do(func() { s.inner.OnUnsubscribed(cl, pk) })
}

// OnRetainMessage stores or clears a retained message.
func (s *store) OnRetainMessage(cl *mqtt.Client, pk packets.Packet, r int64) {
	s.do(func() { s.inner.OnRetainMessage(cl, pk, r) })
}

// OnWillSent stores the client without its will.
func (s *store) OnWillSent(cl *mqtt.Client, pk packets.Packet) {
	s.do(func() { s.inner.OnWillSent(cl, pk) })
}

// OnQosPublish stores an in-flight message.
func (s *store) OnQosPublish(cl *mqtt.Client, pk packets.Packet, sent int64, resends int) {
	s.do(func() { s.inner.OnQosPublish(cl, pk, sent, resends) })
}

// OnQosComplete forgets an acknowledged message.
func (s *store) OnQosComplete(cl *mqtt.Client, pk packets.Packet) {
	s.do(func() { s.inner.OnQosComplete(cl, pk) })
}

// OnQosDropped forgets a dropped message.
func (s *store) OnQosDropped(cl *mqtt.Client, pk packets.Packet) {
	s.do(func() { s.inner.OnQosDropped(cl, pk) })
}

// OnClientExpired forgets an expired session.
func (s *store) OnClientExpired(cl *mqtt.Client) {
	s.do(func() { s.inner.OnClientExpired(cl) })
}

// OnRetainedExpired forgets an expired retained message.
func (s *store) OnRetainedExpired(filter string) {
	s.do(func() { s.inner.OnRetainedExpired(filter) })
}

// StoredClients loads the stored sessions.
func (s *store) StoredClients() (v []storage.Client, err error) {
	s.do(func() { v, err = s.inner.StoredClients() })
	return v, err
}

// StoredSubscriptions loads the stored subscriptions.
func (s *store) StoredSubscriptions() (v []storage.Subscription, err error) {
	s.do(func() { v, err = s.inner.StoredSubscriptions() })
	return v, err
}

// StoredInflightMessages loads the stored in-flight messages.
func (s *store) StoredInflightMessages() (v []storage.Message, err error) {
	s.do(func() { v, err = s.inner.StoredInflightMessages() })
	return v, err
}

// StoredRetainedMessages loads the stored retained messages.
func (s *store) StoredRetainedMessages() (v []storage.Message, err error) {
	s.do(func() { v, err = s.inner.StoredRetainedMessages() })
	return v, err
}
