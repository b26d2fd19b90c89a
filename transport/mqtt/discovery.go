package mqtt

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/presence"
)

// WatchConfig configures Watch.
type WatchConfig struct {
	// Connection is the broker connection.
	Connection
	// Org and Unit scope the watch: it subscribes
	// {Root}/discovery/Org/Unit/+ and nothing wider.
	Org, Unit string
	// Root is the topic root of the agents watched. The zero Root is the
	// profile's $a2a/v1; another is a deployment choice that agents and the
	// broker must share (docs/protocol.md §1.5).
	Root mqttbind.Root
	// ClientID of the watcher's connection (default: Org/Unit/watch-<uuid>).
	ClientID string
	// Logger receives discovery messages that are not cards.
	Logger *slog.Logger
	// Tracker options, such as presence.WithCardDecoder.
	TrackerOptions []presence.Option
}

// Watcher follows the presence of the agents of one org/unit. Create it
// with Watch.
type Watcher struct {
	conn    *conn
	log     *slog.Logger
	mu      sync.Mutex
	tracker *presence.Tracker
	queue   []presence.Change
	wake    chan struct{}
	changes chan presence.Change
	done    chan struct{}
	stopped chan struct{}
}

// Watch subscribes the discovery topics of an org/unit and feeds every
// message to a presence tracker (statemachines/presence): retained cards
// arrive first, then changes as they happen. After every reconnect it
// subscribes again, and reconnects until the subscription is granted,
// unless the broker refuses it for good: then the watch stops (see
// Watcher.Done and the package documentation, "Reconnects"). Status is
// advisory: never a reason to skip the retry profile.
func Watch(ctx context.Context, cfg WatchConfig) (*Watcher, error) {
	filter, err := cfg.Root.DiscoveryFilterTopic(cfg.Org, cfg.Unit)
	if err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		cfg.ClientID = cfg.Org + "/" + cfg.Unit + "/watch-" + uuid.NewString()
	}
	w := &Watcher{log: cfg.Logger, tracker: presence.NewTracker(append([]presence.Option{presence.WithRoot(cfg.Root)}, cfg.TrackerOptions...)...), wake: make(chan struct{}, 1),
		changes: make(chan presence.Change), done: make(chan struct{}), stopped: make(chan struct{})}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.conn, err = dial(ctx, cfg.Connection.dialConfig(cfg.ClientID, w.log, w.onPublish,
		func(ctx context.Context, cm *autopaho.ConnectionManager, caps BrokerCapabilities) error {
			if err := caps.needWildcard(); err != nil {
				return err
			}
			return subscribe(ctx, cm, filter)
		}))
	if err != nil {
		return nil, err
	}
	go w.deliver()
	return w, nil
}

// onPublish ingests a discovery message; it never blocks the client.
func (w *Watcher) onPublish(pr paho.PublishReceived) {
	p := pr.Packet
	var props presence.Properties
	if p.Properties != nil {
		for _, u := range p.Properties.User {
			props = append(props, presence.Property{Key: u.Key, Value: u.Value})
		}
	}
	w.mu.Lock()
	ch, err := w.tracker.Ingest(p.Topic, p.Payload, props, time.Now())
	if err == nil {
		w.queue = append(w.queue, ch)
	}
	w.mu.Unlock()
	if err != nil {
		w.log.Warn("mqtt: discovery message ignored", "topic", p.Topic, "err", err)
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// deliver moves queued changes to the Changes channel, in order, so a slow
// reader never blocks the MQTT client.
func (w *Watcher) deliver() {
	defer close(w.stopped)
	defer close(w.changes)
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, ch := range batch {
			select {
			case w.changes <- ch:
			case <-w.done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
	}
}

// Changes delivers every change the tracker applied, in order; it is
// closed by Close (not when Done is closed: select on both).
func (w *Watcher) Changes() <-chan presence.Change { return w.changes }

// Lookup returns the current entry of an agent of the watched org/unit.
func (w *Watcher) Lookup(agentID string) (presence.Entry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.tracker.Entries() {
		if e.Key.Agent == agentID {
			return e, true
		}
	}
	return presence.Entry{}, false
}

// Entries returns the current table.
func (w *Watcher) Entries() []presence.Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tracker.Entries()
}

// Len returns the number of agents in the table.
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tracker.Len()
}

// Done returns a channel that is closed when the watch's connection has
// stopped for good on its own: after a reconnect, the broker refused the
// subscription of the discovery filter in a way that retrying cannot
// change (not authorized, an invalid filter: see the package
// documentation, "Reconnects"), typically because the broker's ACL
// changed. The watch then reconnects no more and receives nothing: its
// table keeps what it knew, and goes stale. The refusal is logged once, at
// ERROR, on WatchConfig.Logger, and Err returns it. Close does not close
// the channel.
func (w *Watcher) Done() <-chan struct{} { return w.conn.done }

// Err returns why the watch stopped once Done is closed: the
// *SubscribeError or *ConnectError the broker refused with (errors.As
// reads its reason code), or the *CapabilityError its CONNACK now causes. It returns nil before Done is closed, and for a watch that Close
// stopped.
func (w *Watcher) Err() error { return w.conn.err() }

// BrokerCapabilities returns what the broker's CONNACK offered the
// watch's latest connection (MQTT v5 §3.2.2.3).
func (w *Watcher) BrokerCapabilities() BrokerCapabilities { return w.conn.capabilities() }

// Close stops watching and disconnects; after Done is closed it has
// nothing to disconnect and returns nil at once.
func (w *Watcher) Close(ctx context.Context) error {
	select {
	case <-w.done:
		return nil
	default:
	}
	close(w.done)
	<-w.stopped
	return w.conn.close(ctx)
}
