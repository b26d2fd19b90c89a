package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"github.com/mochi-mqtt/server/v2/packets"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Defaults of [Config].
const (
	// DefaultAddr is the address the broker listens on when Config.Addr is
	// empty: loopback, a free port.
	DefaultAddr = "127.0.0.1:0"
	// DefaultMaxInflight is the default of Config.MaxInflight, the most
	// MQTT allows (packet identifiers are 16 bits).
	DefaultMaxInflight = 65535
	// DefaultMaxPendingWrites is the default of Config.MaxPendingWrites.
	DefaultMaxPendingWrites = 32768
	// DefaultReceiveMaximum is the default of Config.ReceiveMaximum
	// (mochi's own default).
	DefaultReceiveMaximum = 1024
)

const (
	// storeFile is the database file under Config.DataDir.
	storeFile = "broker.bolt"
	// storeLockTimeout bounds the wait for the database file lock, which
	// another process using the same DataDir holds.
	storeLockTimeout = time.Second
	// sysTopicInterval is the period of $SYS updates, in seconds.
	sysTopicInterval = 10
	// connectTimeout bounds the wait for a new connection's CONNECT packet.
	connectTimeout = 30 * time.Second
	// listenerID names the TCP listener inside mochi.
	listenerID = "tcp"
)

// ErrLocked reports a Config.DataDir whose database another broker (or
// another process) holds open.
var ErrLocked = errors.New("broker: data directory is in use")

// Config configures [Start]. The zero value is a loopback broker on a free
// port, without broker-managed status or persistence, with limits that
// deliver 10,000 retained cards to one subscription.
type Config struct {
	// Addr is the TCP address to listen on, host:port; empty means
	// DefaultAddr. Port 0 picks a free port: see Broker.Addr.
	Addr string

	// Status turns on broker-managed status: the a2a-status and
	// a2a-status-source=broker user properties on every discovery message
	// the broker sends, and a new send of an agent's retained card whenever
	// the agent's client connects or disconnects (see the package
	// documentation).
	Status bool

	// DataDir, when set, keeps sessions (subscriptions, in-flight QoS 1 and
	// 2 messages, wills) and retained messages in a bbolt database in this
	// directory (created if needed), so that they survive Close and Start.
	// Every change is written and synced before the broker goes on, which
	// costs a disk sync per retained message and per QoS 1 delivery. A
	// directory serves one broker at a time: Start fails with ErrLocked
	// when another holds it.
	DataDir string

	// Logger receives the broker's log (mochi's, and the status hook's in
	// the one case it cannot return an error). Nil discards it.
	Logger *slog.Logger

	// MaxInflight is the most QoS 1 and 2 messages the broker keeps
	// unacknowledged per client, queued for offline sessions included;
	// messages past it are dropped. It also bounds how many retained
	// messages one subscription receives (all are in flight at once).
	// 0 means DefaultMaxInflight.
	MaxInflight uint16

	// MaxPendingWrites is the size of each client's write queue; a message
	// that finds it full is dropped. It costs 8 bytes a slot per connected
	// client, allocated at connect. A new subscription receives all its
	// retained messages when they are no more than this and MaxInflight.
	// 0 means DefaultMaxPendingWrites.
	MaxPendingWrites int32

	// ReceiveMaximum is the Receive Maximum the broker announces in
	// CONNACK: how many QoS 1 and 2 publishes a client may have
	// unacknowledged towards the broker. 0 means DefaultReceiveMaximum.
	ReceiveMaximum uint16

	// mochiProblemInfo leaves out the publishProperties hook, for the test
	// that pins mochi's behaviour.
	mochiProblemInfo bool
}

// Broker is a running embedded broker. Its methods are safe for concurrent
// use.
type Broker struct {
	srv   *mqtt.Server
	ln    *listener
	store *store // nil without DataDir
	// takeover orders session takeovers (compat.go).
	takeover *orderedTakeover

	closeOnce sync.Once
	closeErr  error
}

// Start starts a broker. ctx bounds the start only (binding the address,
// opening the data directory); the broker runs until Close.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	return start(ctx, cfg, nil)
}

// start is Start with a last look at mochi's options, for tests that show
// what mochi does without this package's settings.
func start(ctx context.Context, cfg Config, tweak func(*mqtt.Options)) (*Broker, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := serverOptions(cfg)
	if tweak != nil {
		tweak(opts)
	}
	srv := mqtt.New(opts)
	b := &Broker{srv: srv}

	// The hooks that work around mochi's defects (compat.go); the ordered
	// takeover goes before the status hook, which marks a new connection
	// online once the one it took over is gone.
	takeover := newOrderedTakeover(srv)
	b.takeover = takeover
	hooks := []mqtt.Hook{new(allowAll), new(noSendQuota), newRetainGuard(), takeover}
	if !cfg.mochiProblemInfo {
		hooks = append(hooks, new(publishProperties))
	}
	for _, h := range hooks {
		if err := srv.AddHook(h, nil); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("broker: data directory: %w", err)
		}
		b.store = newStore()
		err := srv.AddHook(b.store, &bolt.Options{
			Path:    filepath.Join(cfg.DataDir, storeFile),
			Options: &bbolt.Options{Timeout: storeLockTimeout},
		})
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, cfg.DataDir)
		}
		if err != nil {
			return nil, fmt.Errorf("broker: data directory %s: %w", cfg.DataDir, err)
		}
	}
	if cfg.Status {
		if err := srv.AddHook(newStatusHook(srv), nil); err != nil {
			return nil, errors.Join(fmt.Errorf("broker: %w", err), b.stopStore())
		}
	}

	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	var lc net.ListenConfig
	nl, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), b.stopStore())
	}
	b.ln = newListener(listenerID, nl, b.disconnectClients)
	takeover.connDone, b.ln.onServed = b.ln.connDone, takeover.served
	if err := srv.AddListener(b.ln); err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), nl.Close(), b.stopStore())
	}
	if err := srv.Serve(); err != nil {
		// Serve fails while reading the store, before it accepts anyone.
		return nil, errors.Join(fmt.Errorf("broker: %w", err), srv.Close(), b.storeErr())
	}
	return b, nil
}

// allowAll accepts every client and every topic. (mochi's own auth.AllowHook
// does the same, but its package brings a YAML dependency for its ledger.)
type allowAll struct {
	mqtt.HookBase
}

// ID names the hook in mochi's log.
func (*allowAll) ID() string { return "allow-all" }

// Provides reports the events the hook handles.
func (*allowAll) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}

// OnConnectAuthenticate accepts the client.
func (*allowAll) OnConnectAuthenticate(*mqtt.Client, packets.Packet) bool { return true }

// OnACLCheck allows the topic.
func (*allowAll) OnACLCheck(*mqtt.Client, string, bool) bool { return true }

// serverOptions translates cfg into mochi's options (see the package
// documentation for why each setting).
func serverOptions(cfg Config) *mqtt.Options {
	caps := mqtt.NewDefaultServerCapabilities()
	caps.Compatibilities.NoInheritedPropertiesOnAck = true
	caps.MaximumMessageExpiryInterval = 0
	caps.MaximumInflight = orDefault(cfg.MaxInflight, DefaultMaxInflight)
	caps.MaximumClientWritesPending = orDefault(cfg.MaxPendingWrites, DefaultMaxPendingWrites)
	caps.ReceiveMaximum = orDefault(cfg.ReceiveMaximum, DefaultReceiveMaximum)
	caps.SharedSubAvailable = 1
	caps.RetainAvailable = 1
	caps.WildcardSubAvailable = 1

	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &mqtt.Options{
		Capabilities:           caps,
		Logger:                 logger,
		SysTopicResendInterval: sysTopicInterval,
	}
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Addr returns the host:port the broker listens on (with the port actually
// bound when Config.Addr asked for port 0).
func (b *Broker) Addr() string {
	return b.ln.Address()
}

// URL returns the broker's address as a URL for MQTT clients,
// "mqtt://host:port".
func (b *Broker) URL() string {
	return "mqtt://" + b.Addr()
}

// Close disconnects every client (their wills fire, as for any connection
// the server ends), stops listening, waits for every connection's goroutine
// and closes the data directory. It returns the error of closing the
// database, if any. Calling it again returns the same result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		// mochi closes the listener (which closes every connection and
		// waits for it), waits for its clients, then stops the hooks.
		err := b.srv.Close()
		b.ln.wait()
		b.closeErr = errors.Join(err, b.storeErr())
	})
	return b.closeErr
}

// disconnectClients sends every connected client DISCONNECT (server
// shutting down) and closes its connection. It stands in for mochi's own
// (Clients.GetByListener), which takes the clients table's read lock twice
// and so deadlocks Close when a client is being removed at the same
// moment (seen here).
func (b *Broker) disconnectClients() {
	for _, cl := range b.srv.Clients.GetAll() {
		if cl.Net.Listener == listenerID && !cl.Closed() {
			// The error is the one the client is disconnected with.
			_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
		}
	}
}

// stopStore closes the data directory of a broker that never served.
func (b *Broker) stopStore() error {
	if b.store == nil {
		return nil
	}
	return b.store.Stop()
}

// storeErr returns the error of closing the data directory.
func (b *Broker) storeErr() error {
	if b.store == nil {
		return nil
	}
	return b.store.stopError()
}
