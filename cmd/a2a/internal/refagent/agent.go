package refagent

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/governed"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/reach"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// HTTPPath is where the JSON-RPC endpoint is mounted on the HTTP listener
// (the card is at a2ahttp.WellKnownCardPath).
const HTTPPath = "/a2a"

// Config configures Start. At least one of Broker and HTTP is required.
type Config struct {
	// Broker serves the agent over MQTT (with its spawned instance
	// {ID}-c1, which takes handed-over tasks); Org, Unit and Pool place it
	// there.
	Broker, Org, Unit, ID, Pool string
	KeepAlive                   time.Duration
	// ConnectTimeout bounds each MQTT connection's first connect, and its
	// subscriptions after a reconnect (a2amqtt.Connection; default 10 s).
	ConnectTimeout time.Duration
	// Root is the topic root of both MQTT connections' topics (the zero
	// Root is the profile's $a2a/v1; another is a deployment choice
	// outside the profile, docs/protocol.md §1.5).
	Root mqttbind.Root
	// TLS, Username and Password are the MQTT connections' TLS
	// configuration and credentials (optional; see a2amqtt.Connection).
	// Both connections, the agent and {ID}-c1, use them, unless
	// SpawnedUsername is set.
	TLS      *tls.Config
	Username string
	Password []byte
	// SpawnedUsername and SpawnedPassword, when SpawnedUsername is set,
	// log {ID}-c1's connection in instead of Username and Password. A
	// broker that admits a user under one Client ID only, its user name
	// (the embedded broker with a password file, mosquitto with
	// use_username_as_clientid: docs/protocol.md §13.1), needs a user of
	// its own for each connection.
	SpawnedUsername string
	SpawnedPassword []byte
	// Verifier, when set, checks the bearer token of every call over both
	// transports (agent.WithVerifier), and the card states that a bearer
	// token is required; nil accepts every call.
	Verifier agent.Verifier
	// HTTP, when set, serves the agent over the A2A JSON-RPC binding on
	// this listener: the endpoint at HTTPPath, the card at
	// /.well-known/agent-card.json. Start takes the listener over: it is
	// closed by Close, or at once when Start fails.
	HTTP net.Listener
	// HTTPURL is the endpoint URL the card lists (default: EndpointURL of
	// the listener's address).
	HTTPURL string
	// DataDir keeps tasks in a bbolt database, DataDir/tasks.db (default:
	// in memory).
	DataDir string
	// Store, when set, keeps the tasks instead (DataDir must then be
	// empty): a bbolt file or a PostgreSQL database the caller opened.
	// Start takes it over: it is closed by Close, or at once when Start
	// fails.
	Store taskstore.Store
	// Reachability, when set, makes the agent one that is not always
	// reachable (docs/protocol.md §7), on every transport.
	Reachability *Reachability
	// Push serves push notifications (agent.WithPush, docs/protocol.md
	// §8.8) on the agent, over every transport, through an HTTP sender
	// (agent/webhook), and the card declares
	// capabilities.pushNotifications. The spawned instance {ID}-c1 sends
	// none. Webhooks must be https URLs to public addresses, unless
	// AllowLoopbackWebhooks: then http and https webhooks on loopback
	// addresses are taken and delivered too (tests, local development).
	// Private addresses are always refused.
	Push, AllowLoopbackWebhooks bool
	// Webhook tunes the push sender: retries and their waits, queues,
	// workers, timeout (zero fields: agent/webhook's defaults). Start sets
	// its Reporter, AllowLoopback and Logger.
	Webhook webhook.Config
	Log     *slog.Logger
	// Requests, when set, receives one line per request the agent and its
	// spawned instance answer, at info: the agent, the method, the task,
	// its state when the answer ended (or the error token) and how long it
	// took (agent.WithCallObserver). Tokens are never logged.
	Requests *slog.Logger
	// OnRequest, when set, is called once per request the agent (id ID)
	// and its spawned instance (ID-c1) answer, with what Requests logs
	// (a2a agent --json prints it); it is called instead of logging on
	// Requests. The record never holds the bearer token.
	OnRequest func(ctx context.Context, id string, r agent.CallRecord)
	// OnBroker, when set, is told when the agent's MQTT connection is lost
	// and when it is back (a2amqtt.Connection.OnConnectionChange).
	OnBroker func(up bool, err error)
}

// observer is the call observer of the server of agent id: OnRequest,
// else the log on Requests, else none.
func (c Config) observer(id string) func(context.Context, agent.CallRecord) {
	switch {
	case c.OnRequest != nil:
		return func(ctx context.Context, r agent.CallRecord) { c.OnRequest(ctx, id, r) }
	case c.Requests != nil:
		return requestLog(c.Requests, id)
	}
	return nil
}

// requestLog is the observer that logs each request of agent id on l.
func requestLog(l *slog.Logger, id string) func(context.Context, agent.CallRecord) {
	return func(ctx context.Context, r agent.CallRecord) {
		attrs := []slog.Attr{slog.String("agent", id), slog.String("method", string(r.Method))}
		if r.TaskID != "" {
			attrs = append(attrs, slog.String("task", r.TaskID))
		}
		if r.State != "" {
			attrs = append(attrs, slog.String("state", string(r.State)))
		}
		if r.Error != "" {
			attrs = append(attrs, slog.String("error", string(r.Error)))
		}
		attrs = append(attrs, slog.Duration("duration", r.Duration.Round(time.Microsecond)))
		l.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
	}
}

// Reachability configures an agent that is not always reachable.
type Reachability struct {
	// Mode is the reachability mode; Window the accept windows (required
	// for hourly_wake, optional for sleep).
	Mode   offline.ReachabilityMode
	Window *reach.Schedule
	// QueueDir holds the offline queue (queue.db) of hourly_wake and sleep,
	// which store and forward; one of QueueDir and Queue is required for
	// them.
	QueueDir string
	// Queue, instead of QueueDir, is an offline queue the caller opened
	// (agent/inbox/pginbox's, which several agents may share). Start takes
	// it over: it is closed by Close, or at once when Start fails.
	Queue inbox.Store
	// QueueKeys seals the records of the QueueDir queue at rest
	// (inbox.BoltOptions.Keys); nil stores them in clear. A Queue the
	// caller opened carries its own.
	QueueKeys *sealed.Ring
	// Bounds are the queue bounds (zero fields: the defaults).
	Bounds offline.QueueBounds
	// Answer is how the HTTP binding answers (default the HTTP statuses).
	Answer offline.AsleepAnswer
	// Keys, when set, require every queued message to carry a governed
	// object signed by one of them (agent/governed), for one of Purposes
	// (any when empty).
	Keys     map[string]ed25519.PublicKey
	Purposes []string
}

// Agent is the reference agent. Over MQTT it is two connections with their
// own Client IDs, the agent and its spawned instance {id}-c1; over HTTP one
// endpoint. Both transports share one task store, one card and one
// agent.Server for the main agent, so a task started over one transport
// can be read or continued over the other.
type Agent struct {
	main, spawned       *a2amqtt.Agent // nil without a broker
	mainSrv, spawnedSrv *agent.Server  // spawnedSrv is nil without a broker
	http                *a2ahttp.Handler
	httpURL             string
	served              chan error // Serve's result
	store               taskstore.Store
	offline             *agent.Offline
	queue               inbox.Store
	recovery            inbox.Recovery
	sender              *webhook.Sender // nil without Config.Push
	log                 *slog.Logger
	stopOnce            sync.Once
	stopped             chan struct{}
}

// EndpointURL is the JSON-RPC endpoint URL for a listener address: http://
// host:port/a2a, with 127.0.0.1 for an unspecified host ("", 0.0.0.0, ::),
// which is reachable from this machine only; serve other machines with
// Config.HTTPURL.
func EndpointURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + HTTPPath
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + HTTPPath
}

// Start serves the reference agent: over MQTT when c.Broker is set, over
// HTTP when c.HTTP is, or both.
func Start(ctx context.Context, c Config) (*Agent, error) {
	if c.Broker == "" && c.HTTP == nil {
		if c.Store != nil {
			c.Store.Close()
		}
		if c.Reachability != nil && c.Reachability.Queue != nil {
			c.Reachability.Queue.Close()
		}
		return nil, errors.New("refagent: a broker or an HTTP listener is required")
	}
	ra := &Agent{log: c.Log}
	if c.Reachability != nil {
		ra.queue = c.Reachability.Queue // closed by abort on failure
	}
	if ra.log == nil {
		ra.log = slog.New(slog.DiscardHandler)
	}
	started := false
	defer func() {
		if !started {
			ra.abort(ctx, c.HTTP)
		}
	}()
	switch {
	case c.Store != nil:
		ra.store = c.Store
		if c.DataDir != "" {
			return nil, errors.New("refagent: give a Store or a DataDir, not both")
		}
	case c.DataDir != "":
		b, err := taskstore.OpenBolt(c.DataDir+"/tasks.db", nil, 0)
		if err != nil {
			return nil, err
		}
		ra.store = b
	default:
		ra.store = taskstore.NewMemory(nil, taskstore.KeepFinishedFor(agent.DefaultFinishedRetention))
	}
	var interfaces []a2a.AgentInterface
	if c.Broker != "" {
		interfaces = append(interfaces, MQTTInterface(c.Broker))
	}
	if c.HTTP != nil {
		ra.httpURL = c.HTTPURL
		if ra.httpURL == "" {
			ra.httpURL = EndpointURL(c.HTTP.Addr())
		}
		interfaces = append(interfaces, a2ahttp.JSONRPCInterface(ra.httpURL))
	}
	spawnedID := ""
	if c.Broker != "" {
		spawnedID = c.ID + "-c1"
	}
	card := Card(c.ID, spawnedID != "", interfaces...)
	opts := []agent.Option{agent.WithStore(ra.store), agent.WithLogger(c.Log)}
	if c.Verifier != nil {
		RequireBearer(card)
		opts = append(opts, agent.WithVerifier(c.Verifier))
	}
	mainOpts := opts
	if observe := c.observer(c.ID); observe != nil {
		mainOpts = append(slices.Clone(opts), agent.WithCallObserver(observe))
	}
	if r := c.Reachability; r != nil {
		o, err := ra.openOffline(r, c.Verifier != nil, c.Log)
		if err != nil {
			return nil, err
		}
		o.Publish(card)
		mainOpts = append(slices.Clone(mainOpts), agent.WithOffline(o))
	}
	// The push sender reports to the main server, made after it (reports
	// come only once the server notifies).
	var reportTo atomic.Pointer[agent.Server]
	if c.Push {
		wc := c.Webhook
		wc.AllowLoopback = c.AllowLoopbackWebhooks
		wc.Logger = c.Log
		wc.Reporter = agent.PushReporterFunc(func(r agent.PushReport) {
			if s := reportTo.Load(); s != nil {
				s.PushReport(r)
			}
		})
		s, err := webhook.New(wc)
		if err != nil {
			return nil, err
		}
		ra.sender = s
		mainOpts = append(slices.Clone(mainOpts), agent.WithPush(agent.PushConfig{Notifier: s, AllowLoopbackHTTP: c.AllowLoopbackWebhooks}))
		yes := true
		card.Capabilities.PushNotifications = &yes
	}
	ra.mainSrv = agent.NewServer(Handler(c.ID, spawnedID), mainOpts...)
	reportTo.Store(ra.mainSrv)
	// The card says what the agent bounds and when contexts and waiting
	// tasks expire (docs/protocol.md §14): the store's defaults are the
	// server's.
	ra.mainSrv.PublishLimits(card)
	if c.HTTP != nil {
		// Made before any connection, so that a card the binding refuses
		// fails the start at once.
		h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: ra.mainSrv, Card: card, Logger: c.Log})
		if err != nil {
			return nil, err
		}
		ra.http = h
	}
	if c.Broker != "" {
		spawnedOpts := opts
		if observe := c.observer(spawnedID); observe != nil {
			spawnedOpts = append(slices.Clone(opts), agent.WithCallObserver(observe))
		}
		ra.spawnedSrv = agent.NewServer(Handler(spawnedID, ""), spawnedOpts...)
		conn := a2amqtt.Connection{Broker: c.Broker, KeepAlive: c.KeepAlive, ConnectTimeout: c.ConnectTimeout, TLS: c.TLS, Username: c.Username, Password: c.Password}
		spawnedConn := conn
		// The agent's own connection tells of the broker's loss and
		// return; the spawned instance's would say the same again.
		conn.OnConnectionChange = c.OnBroker
		if c.SpawnedUsername != "" {
			spawnedConn.Username, spawnedConn.Password = c.SpawnedUsername, c.SpawnedPassword
		}
		var err error
		ra.spawned, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{
			Connection: spawnedConn,
			Root:       c.Root,
			Org:        c.Org,
			Unit:       c.Unit,
			ID:         spawnedID,
			Server:     ra.spawnedSrv,
			Logger:     c.Log,
		})
		if err != nil {
			return nil, err
		}
		ra.main, err = a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{
			Connection: conn,
			Root:       c.Root,
			Org:        c.Org,
			Unit:       c.Unit,
			ID:         c.ID,
			Pool:       c.Pool,
			Card:       card,
			Server:     ra.mainSrv,
			Logger:     c.Log,
		})
		if err != nil {
			return nil, err
		}
	}
	if ra.http != nil {
		ra.served = make(chan error, 1)
		go func() { ra.served <- ra.http.Serve(c.HTTP, HTTPPath) }()
	}
	started = true
	return ra, nil
}

// openOffline opens the queue, if the mode stores and forwards, and makes
// the agent's offline state.
func (ra *Agent) openOffline(r *Reachability, authenticated bool, log *slog.Logger) (*agent.Offline, error) {
	cfg := agent.OfflineConfig{Mode: r.Mode, Schedule: r.Window, Bounds: r.Bounds, Answer: r.Answer,
		RequireCaller: authenticated}
	queues := agent.StoresAndForwards(r.Mode)
	switch {
	case r.Queue != nil && r.QueueDir != "":
		return nil, errors.New("refagent: give a Queue or a QueueDir, not both")
	case r.Queue != nil && !queues:
		return nil, fmt.Errorf("refagent: reachability %s never queues: it takes no Queue", r.Mode)
	case r.Queue != nil:
		cfg.StoreForward, cfg.Queue = true, r.Queue
	case queues:
		if r.QueueDir == "" {
			return nil, fmt.Errorf("refagent: reachability %s stores and forwards: a queue directory is required", r.Mode)
		}
		if err := os.MkdirAll(r.QueueDir, 0o700); err != nil {
			return nil, err
		}
		q, rec, err := inbox.OpenBolt(filepath.Join(r.QueueDir, "queue.db"), inbox.BoltOptions{Logger: log, Keys: r.QueueKeys})
		if err != nil {
			return nil, err
		}
		ra.queue, ra.recovery = q, rec
		cfg.StoreForward, cfg.Queue = true, q
	}
	if len(r.Keys) > 0 {
		cfg.Validator = governed.Validator{Keys: r.Keys, Purposes: r.Purposes}
	}
	o, err := agent.NewOffline(cfg)
	if err != nil {
		return nil, err
	}
	ra.offline = o
	return o, nil
}

// Stopped returns a channel closed when one of the agent's MQTT
// connections (the agent's, or its spawned instance's) stopped for good on
// its own: the broker refused it permanently after a reconnect (see
// a2amqtt.Agent.Done); nil (never closed) without a broker.
func (ra *Agent) Stopped() <-chan struct{} {
	if ra.main == nil {
		return nil
	}
	ra.stopOnce.Do(func() {
		ra.stopped = make(chan struct{})
		go func() {
			select {
			case <-ra.main.Done():
			case <-ra.spawned.Done():
			}
			close(ra.stopped)
		}()
	})
	return ra.stopped
}

// StopErr says why Stopped was closed: the refusal of the connection that
// stopped.
func (ra *Agent) StopErr() error {
	if ra.main == nil {
		return nil
	}
	if err := ra.main.Err(); err != nil {
		return err
	}
	return ra.spawned.Err()
}

// Offline returns the agent's offline state (nil unless Config.Reachability
// was set): SetAwake wakes a sleeping agent.
func (ra *Agent) Offline() *agent.Offline { return ra.offline }

// Recovery says what opening the offline queue found: a damaged file
// moved aside and what could be salvaged from it.
func (ra *Agent) Recovery() inbox.Recovery { return ra.recovery }

// abort undoes a failed Start.
func (ra *Agent) abort(ctx context.Context, ln net.Listener) {
	if ra.http != nil {
		ra.http.Close(ctx)
	}
	if ln != nil {
		ln.Close()
	}
	if ra.main != nil {
		ra.main.Close(ctx)
	}
	if ra.spawned != nil {
		ra.spawned.Close(ctx)
	}
	ra.closeServers(ctx)
	ra.abandonPushes()
	if ra.store != nil {
		ra.store.Close()
	}
	if ra.queue != nil {
		ra.queue.Close()
	}
}

// HTTPURL returns the JSON-RPC endpoint's URL as the card lists it, ""
// when the agent is not served over HTTP.
func (ra *Agent) HTTPURL() string { return ra.httpURL }

// Close stops gracefully: the HTTP endpoint first (open event streams end
// cleanly, requests in progress finish), then over MQTT the card goes
// offline and the connections DISCONNECT; then the runtimes, the push
// sender (what it holds is delivered for up to PushDrain, within ctx, then
// abandoned) and the store.
func (ra *Agent) Close(ctx context.Context) error {
	var err error
	if ra.http != nil {
		err = ra.http.Close(ctx)
		if e := <-ra.served; err == nil && !errors.Is(e, http.ErrServerClosed) {
			err = fmt.Errorf("serving HTTP: %w", e)
		}
	}
	if ra.main != nil {
		if e := ra.main.Close(ctx); err == nil {
			err = e
		}
		if e := ra.spawned.Close(ctx); err == nil {
			err = e
		}
	}
	ra.closeServers(ctx)
	ra.drainPushes(ctx)
	if e := ra.store.Close(); err == nil {
		err = e
	}
	if ra.queue != nil {
		if e := ra.queue.Close(); err == nil {
			err = e
		}
	}
	return err
}

// PushDrain bounds how long Close lets the push sender deliver what it
// still holds.
const PushDrain = 2 * time.Second

// abandonPushes stops the push sender at once: what it holds is dropped.
func (ra *Agent) abandonPushes() {
	if ra.sender == nil {
		return
	}
	now, cancel := context.WithCancel(context.Background())
	cancel()
	ra.sender.Close(now)
}

// drainPushes stops the push sender once it delivered what it holds, for
// up to PushDrain within ctx; what is left then is dropped.
func (ra *Agent) drainPushes(ctx context.Context) {
	if ra.sender == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, PushDrain)
	defer cancel()
	if err := ra.sender.Close(ctx); err != nil {
		ra.log.Warn("refagent: push notifications still queued were abandoned at shutdown", "discarded", ra.sender.Stats().Discarded)
	}
}

func (ra *Agent) closeServers(ctx context.Context) {
	if ra.mainSrv != nil {
		ra.mainSrv.Close(ctx)
	}
	if ra.spawnedSrv != nil {
		ra.spawnedSrv.Close(ctx)
	}
}

// Kill drops the MQTT connections as a crash would (and stops the HTTP
// endpoint at once).
func (ra *Agent) Kill() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ra.http != nil {
		ra.http.Close(ctx)
		<-ra.served
	}
	if ra.main != nil {
		ra.main.Kill()
		ra.spawned.Kill()
	}
	ra.closeServers(context.Background())
	ra.abandonPushes()
	ra.store.Close()
	if ra.queue != nil {
		ra.queue.Close()
	}
}
