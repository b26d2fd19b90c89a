package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
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

	// Root is the topic root of the A2A topics the broker knows: those its
	// broker-managed status (Status) marks, its validating registry checks
	// and its identity rules (PasswordFile) grant. The zero Root is the
	// profile's, $a2a/v1 (mqttbind.DefaultRoot); another, such as a2a/v1,
	// is a deployment choice outside the profile (docs/protocol.md §1.5).
	// It must match the root of the agents and clients using the broker:
	// topics under any other root, the profile's included, are ordinary
	// topics to this broker (no status, no registry, and granted by the ACL
	// file only).
	Root mqttbind.Root

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

	// PasswordFile turns on authentication and authorization: a client
	// logs in with a user name and password of this file (mosquitto 2.0's
	// password_file format: see PasswordFile, and a2a passwd), or with a
	// TLS client certificate (see TLS). Anonymous clients are refused, a
	// user connects with the Client ID equal to its user name, and what it
	// may publish and subscribe to follows from that A2A identity
	// {org_id}/{unit_id}/{agent_id} (docs/protocol.md §13). The validating
	// registry is on. Without authentication every client may do anything,
	// and Start logs a warning saying so.
	PasswordFile string

	// ACLFile adds rules to the identity rules (mosquitto's acl_file
	// syntax, the subset docs/protocol.md §13.3 lists). It needs
	// authentication.
	ACLFile string

	// TLS, when set, serves MQTT over TLS (Broker.URL says mqtts://). With
	// ClientAuth VerifyClientCertIfGiven or RequireAndVerifyClientCert a
	// verified client certificate authenticates its client, with the
	// certificate's Subject Common Name as the user name (the CONNECT's
	// user name and password are then ignored, as with mosquitto's
	// use_identity_as_username); that turns authentication on, with or
	// without PasswordFile. RequestClientCert and RequireAnyClientCert are
	// refused (they do not verify).
	TLS *tls.Config

	// ValidateCards turns on the validating registry without
	// authentication (with authentication, or with TrustedJKU, it is
	// always on): cards published on discovery topics, and Wills there,
	// must be valid Agent Cards on the publisher's own topic, within
	// MaxCardSize and CardUpdatesPerMinute (docs/protocol.md §13.5).
	ValidateCards bool

	// MaxCardSize bounds a card, in bytes; 0 means DefaultMaxCardSize.
	MaxCardSize int

	// CardUpdatesPerMinute bounds the card updates of one agent (its
	// discovery topic): that many at once, then one every 60/n s. 0 means
	// DefaultCardUpdatesPerMinute; negative, no limit. Unregistrations
	// (empty payloads) and Wills are not counted.
	CardUpdatesPerMinute int

	// TrustedJKU, when not empty, makes the registry require of every card
	// a signature (AgentCard.signatures) whose JWS protected header holds a
	// jku starting with one of these prefixes. The signature itself is not
	// verified (that needs the JWKS): see docs/protocol.md §13.5.
	TrustedJKU []string

	// MaxPacketSize bounds every packet a client sends, in bytes (cards
	// have their own, lower, bound); a larger packet ends the connection
	// with DISCONNECT 0x95 and is never read into memory. The broker
	// announces it in CONNACK. 0 means DefaultMaxPacketSize.
	MaxPacketSize uint32

	// ConnectionRate bounds how many new connections per second one
	// source IP address may open, on average; ConnectionBurst how many at
	// once. A connection over the limit is closed before anything is read.
	// 0 means DefaultConnectionRate and DefaultConnectionBurst; a negative
	// ConnectionRate turns the limit off.
	ConnectionRate  float64
	ConnectionBurst int

	// MaxPendingBytes bounds what the broker holds for one client that the
	// client has not read yet: the packets written to it past what its
	// TCP connection holds. The broker never waits for a client to read
	// (a client that is slow to read slows no one else, and the broker
	// keeps reading what it sends); a client that leaves more than this
	// unread is disconnected with DISCONNECT 0x97 (Quota exceeded), after
	// what it has not read yet, and its Will fires. Its QoS 1 and 2
	// deliveries stay in its session, if it has one, and are sent again
	// when it reconnects. 0 means DefaultMaxPendingBytes, or twice
	// MaxPacketSize when that is more; a value below MaxPacketSize is
	// refused. A client sending 64 requests of MaxPacketSize at once
	// needs a little over 64 of them (see DefaultMaxPendingBytes). It is
	// memory the broker may hold for each connected client: lower it
	// where many clients and no large messages are expected.
	MaxPendingBytes int

	// MaxConnectionsPerAddress bounds the open connections of one source
	// IP address; one more is closed before anything is read. (mochi
	// allocates a connection's write queue, MaxPendingWrites slots, as
	// soon as it is accepted.) 0 means DefaultMaxConnectionsPerAddress;
	// negative, no bound.
	MaxConnectionsPerAddress int

	// MaxSessionExpiry bounds the Session Expiry Interval a client may ask
	// for (the broker says so in CONNACK): how long a disconnected
	// client's session, its subscriptions and queued messages, are kept.
	// 0 means DefaultMaxSessionExpiry; negative, no bound.
	MaxSessionExpiry time.Duration

	// mochiProblemInfo leaves out the publishProperties hook, for the test
	// that pins mochi's behaviour.
	mochiProblemInfo bool

	// closeFlush replaces closeFlushTimeout (tests).
	closeFlush time.Duration

	// now is the registry's and the connection limiter's clock (tests).
	now func() time.Time
}

// Broker is a running embedded broker. Its methods are safe for concurrent
// use.
type Broker struct {
	srv   *mqtt.Server
	ln    *listener
	store *store // nil without DataDir
	tls   bool
	// counts are the refusals of the security hooks and limits; deny
	// logs them, rate-limited.
	counts *denials
	deny   *denialLog
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
	if err := cfg.checkPendingBytes(); err != nil {
		return nil, err
	}
	opts := serverOptions(cfg)
	if tweak != nil {
		tweak(opts)
	}
	srv := mqtt.New(opts)
	b := &Broker{srv: srv, tls: cfg.TLS != nil, counts: new(denials), deny: newDenialLog(opts.Logger, cfg.now)}
	security, err := newSecurityHook(&cfg, srv, b.counts, b.deny)
	if err != nil {
		return nil, err
	}

	// The hooks that work around mochi's defects (compat.go); the ordered
	// takeover goes before the status hook, which marks a new connection
	// online once the one it took over is gone.
	takeover := newOrderedTakeover(srv)
	b.takeover = takeover
	enc := &packetEncoder{limits: &limitsHook{maxPacketSize: opts.Capabilities.MaximumPacketSize}}
	hooks := []mqtt.Hook{new(noSendQuota), newRetainGuard(), takeover, enc.limits}
	// The security hook goes first: it refuses a CONNECT before any other
	// hook sees it, and a publish before the retain guard locks for it.
	switch {
	case security == nil:
		hooks = append([]mqtt.Hook{new(allowAll)}, hooks...)
	case security.auth == nil:
		hooks = append([]mqtt.Hook{security, new(allowAll)}, hooks...)
	default:
		hooks = append([]mqtt.Hook{security}, hooks...)
	}
	if !cfg.mochiProblemInfo {
		enc.props = new(publishProperties)
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
		enc.status = newStatusHook(srv, cfg.Root)
		if err := srv.AddHook(enc.status, nil); err != nil {
			return nil, errors.Join(fmt.Errorf("broker: %w", err), b.stopStore())
		}
	}
	if err := srv.AddHook(enc, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), b.stopStore())
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
	b.ln.admit, b.ln.release, b.ln.wrap = connGate(&cfg, opts, srv, b.counts, b.deny)
	if !cfg.authenticates() {
		opts.Logger.Warn("broker: no authentication: any client may connect with any Client ID, replace or delete any agent's card, "+
			"and read every request (bearer tokens included); set a password file or TLS client certificates (docs/protocol.md §13)",
			"addr", nl.Addr().String())
	}
	if !cfg.Root.IsDefault() {
		opts.Logger.Info("broker: topic root "+cfg.Root.String()+", not the profile's "+mqttbind.DefaultRoot+
			": agents and clients must use it too, and peers that follow the profile strictly do not see them (docs/protocol.md §1.5)",
			"addr", nl.Addr().String())
	}
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

	caps.MaximumPacketSize = orDefault(cfg.MaxPacketSize, DefaultMaxPacketSize)
	// mochi announces no Topic Alias Maximum in CONNACK, so clients may not
	// send topic aliases (MQTT v5 §3.2.2.3.8); at mochi's 65535 it would
	// keep that many topics per client.
	caps.TopicAliasMaximum = 0
	switch expiry := orDefault(cfg.MaxSessionExpiry, DefaultMaxSessionExpiry); {
	case expiry < 0:
	case expiry >= time.Duration(math.MaxUint32)*time.Second:
	default:
		caps.MaximumSessionExpiryInterval = uint32(expiry / time.Second)
	}
	if cfg.registryOn() {
		caps.MinimumProtocolVersion = 5 // the profile is MQTT v5 only (docs/protocol.md §1.1)
	}
	return &mqtt.Options{
		Capabilities:           caps,
		Logger:                 newRedactedLogger(cfg.Logger),
		SysTopicResendInterval: sysTopicInterval,
	}
}

// maxPendingBytes is MaxPendingBytes with its default, for a broker whose
// maximum packet size is maxPacket.
func (cfg *Config) maxPendingBytes(maxPacket uint32) int {
	if cfg.MaxPendingBytes != 0 {
		return cfg.MaxPendingBytes
	}
	return max(DefaultMaxPendingBytes, 2*int(maxPacket))
}

// checkPendingBytes refuses a MaxPendingBytes below MaxPacketSize: every
// delivery of a message that large would disconnect its subscriber.
func (cfg *Config) checkPendingBytes() error {
	maxPacket := orDefault(cfg.MaxPacketSize, DefaultMaxPacketSize)
	if cfg.MaxPendingBytes != 0 && cfg.MaxPendingBytes < int(maxPacket) {
		return fmt.Errorf("broker: MaxPendingBytes %d is below MaxPacketSize %d", cfg.MaxPendingBytes, maxPacket)
	}
	return nil
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
// "mqtt://host:port", or "mqtts://host:port" with Config.TLS.
func (b *Broker) URL() string {
	if b.tls {
		return "mqtts://" + b.Addr()
	}
	return "mqtt://" + b.Addr()
}

// Denials returns the counts of what the broker refused since Start.
func (b *Broker) Denials() Denials {
	return b.counts.snapshot()
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
		// The refusals counted but not yet summarised in the log.
		b.deny.flush()
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
