package agent

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
)

// DefaultMaxPushConfigsPerTask is how many push-notification configs a
// task may have when PushConfig.MaxConfigsPerTask is not set.
const DefaultMaxPushConfigsPerTask = 10

// PushDeliveryMetadataKey is the key of Task.metadata under which GetTask
// and ListTasks show what became of a task's push notifications
// (docs/protocol.md §8.8): an object keyed by config id, each entry
// {"state", "status", "reason", "dropped", "at"} as the Notifier last
// reported it (PushReport; "at" in RFC 3339). A task none of whose configs
// has been reported on has no such entry.
const PushDeliveryMetadataKey = "https://a2abind.dev/extensions/push-delivery/v1"

// PushConfig turns push notifications on (WithPush).
type PushConfig struct {
	// Notifier delivers the notifications (agent/webhook's sends them over
	// HTTP). Without one, push notifications stay off.
	Notifier Notifier
	// AllowLoopbackHTTP accepts webhook URLs with the http scheme whose
	// host is a loopback address (127.0.0.0/8, ::1, or the name
	// localhost), for tests and local development. Every other webhook
	// URL must be an absolute https URL.
	AllowLoopbackHTTP bool
	// MaxConfigsPerTask bounds the push-notification configs of one task
	// (default DefaultMaxPushConfigsPerTask, 10; zero or less keeps the
	// default). A config past it is answered invalid_params naming the
	// limit; replacing a config (the same id) does not count.
	MaxConfigsPerTask int
}

// WithPush serves push notifications (A2A v1.0 §4.3) through cfg.Notifier:
//
//   - the four push-notification config methods (A2A v1.0 §3.1.7–§3.1.10)
//     are served, and a SendMessage or SendStreamingMessage may carry a
//     config (SendMessageConfiguration.taskPushNotificationConfig), stored
//     with the task it creates in the same write;
//   - every status and artifact update of a task that has configs is handed
//     to cfg.Notifier.Notify for each of them, in the order of the task's
//     events; the Task a stream begins with is not (the requester has it
//     from its answer);
//   - a deleted config is handed to cfg.Notifier.Forget, and so are the
//     configs of a task the store drops on its own, when the store tells
//     (taskstore.DropWatcher).
//
// The card the transport serves must declare capabilities.pushNotifications
// (A2A v1.0 §3.3.4): a call whose card does not is answered
// push_notification_not_supported, as every push call is without WithPush.
// Give the Notifier the server as its PushReporter (see PushReporterFunc):
// the reports are shown to requesters on the task (PushDeliveryMetadataKey).
// A nil Notifier leaves push notifications off.
func WithPush(cfg PushConfig) Option {
	return func(s *Server) {
		if cfg.Notifier == nil {
			s.push = nil
			return
		}
		if cfg.MaxConfigsPerTask <= 0 {
			cfg.MaxConfigsPerTask = DefaultMaxPushConfigsPerTask
		}
		s.push = &cfg
	}
}

// PushEnabled reports whether the server serves push notifications
// (WithPush). Transports refuse a card that declares
// capabilities.pushNotifications for a server without them.
func (s *Server) PushEnabled() bool { return s.push != nil }

// pushRefusal is the answer to a push call the server does not serve:
// push_notification_not_supported without WithPush, or when the card of the
// call's transport does not declare capabilities.pushNotifications.
func (s *Server) pushRefusal(c Call) *a2a.Error {
	if s.push == nil {
		return a2a.NewError(a2a.TokenPushNotificationNotSupported, "this agent sends no push notifications")
	}
	if caps := c.Capabilities; caps != nil && (caps.PushNotifications == nil || !*caps.PushNotifications) {
		return a2a.NewError(a2a.TokenPushNotificationNotSupported,
			"this agent sends no push notifications: its card does not declare capabilities.pushNotifications (A2A v1.0 §3.3.4)")
	}
	return nil
}

// checkPushConfig checks a config against its schema and the webhook URL
// rules: an absolute https URL, or http to a loopback host when the server
// allows it.
func (s *Server) checkPushConfig(cfg *a2a.TaskPushNotificationConfig) *a2a.Error {
	bad := func(msg string) *a2a.Error {
		return a2a.NewError(a2a.TokenInvalidParams, "push-notification config: "+msg)
	}
	if err := cfg.Validate(); err != nil {
		return bad(err.Error())
	}
	rule := "url must be an absolute https URL"
	if s.push.AllowLoopbackHTTP {
		rule += ", or http to a loopback address"
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return bad(rule + ": " + err.Error())
	}
	if !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return bad(rule + ", not " + strconv.Quote(cfg.URL))
	}
	if u.User != nil {
		return bad("url must not carry credentials: give them in authentication")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if !s.push.AllowLoopbackHTTP {
			return bad(rule + ": http is not accepted")
		}
		if !loopbackHost(u.Hostname()) {
			return bad(rule + ": " + u.Hostname() + " is not a loopback address")
		}
		return nil
	}
	return bad(rule + ", not a " + u.Scheme + " URL")
}

// loopbackHost reports whether a URL's host names the loopback interface.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// errUnchanged ends an Update that has nothing to change: nothing is
// written.
var errUnchanged = errors.New("agent: unchanged")

// pushStoreError answers a push-config call the store refused: an unknown
// or expired task is task_not_found, a protocol error is answered as is.
func pushStoreError(err error, taskID string) *a2a.Error {
	if errors.Is(err, taskstore.ErrNotFound) && !errors.Is(err, taskstore.ErrExpired) {
		return a2a.NewError(a2a.TokenTaskNotFound, "no task "+taskID)
	}
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	return storeError(err)
}

// putPushConfig adds cfg to a task's record, or replaces the config of the
// same id; it reports whether it replaced one. A config past the bound is
// refused with invalid_params.
func (s *Server) putPushConfig(rec *taskstore.Record, cfg a2a.TaskPushNotificationConfig) (bool, error) {
	if i := rec.PushConfig(cfg.ID); i >= 0 {
		rec.PushConfigs = slices.Clone(rec.PushConfigs)
		rec.PushConfigs[i] = cfg
		// The report was about the config replaced.
		rec.PushDeliveries = slices.DeleteFunc(rec.PushDeliveries, func(d taskstore.PushDelivery) bool { return d.ConfigID == cfg.ID })
		return true, nil
	}
	if max := s.push.MaxConfigsPerTask; len(rec.PushConfigs) >= max {
		return false, a2a.NewError(a2a.TokenInvalidParams, "task "+rec.Task.ID+" already has "+strconv.Itoa(len(rec.PushConfigs))+
			" push-notification configs, the limit of "+strconv.Itoa(max)+" per task: delete one first")
	}
	rec.PushConfigs = append(slices.Clip(rec.PushConfigs), cfg)
	return false, nil
}

// changePush applies fn to a task's record under the task's lock and, when
// a turn of the task is running, under its event order, so that every
// event is notified to the configs as they stood when it was emitted. then
// runs, if the change was stored, before any later event. A task caller
// may not see is not changed: taskstore.ErrNotFound.
func (s *Server) changePush(ctx context.Context, caller Caller, id string, fn func(*taskstore.Record) error, then func(taskstore.Record)) (taskstore.Record, error) {
	defer s.lockTask(id).unlock()
	r := s.activeRun(id)
	if r != nil {
		r.order.Lock()
		defer r.order.Unlock()
	}
	rec, err := s.store.Update(ctx, id, ownedBy(caller, fn))
	if err != nil {
		return rec, err
	}
	if r != nil {
		r.mu.Lock()
		r.push = rec.PushConfigs
		r.mu.Unlock()
	}
	if then != nil {
		then(rec)
	}
	return rec, nil
}

// createPushConfig serves CreateTaskPushNotificationConfig (A2A v1.0
// §3.1.7): the config is stored on its task, with an id the server makes
// when it has none, and answered as stored. A config with the id of one the
// task has replaces it.
func (s *Server) createPushConfig(ctx context.Context, caller Caller, p *a2a.TaskPushNotificationConfig, sink Sink) error {
	cfg := *p.Clone()
	if cfg.TaskID == "" {
		return fail(ctx, sink, a2a.NewError(a2a.TokenInvalidParams, "push-notification config: taskId is required"))
	}
	if e := s.checkPushConfig(&cfg); e != nil {
		return fail(ctx, sink, e)
	}
	if cfg.ID == "" {
		cfg.ID = s.newID()
	}
	replaced := false
	_, err := s.changePush(ctx, caller, cfg.TaskID, func(rec *taskstore.Record) error {
		var err error
		replaced, err = s.putPushConfig(rec, cfg)
		return err
	}, func(taskstore.Record) {
		if replaced {
			// Nothing queued for the old webhook goes out.
			s.push.Notifier.Forget(cfg.TaskID, cfg.ID)
		}
	})
	if err != nil {
		if errors.Is(err, taskstore.ErrNotFound) && !errors.Is(err, taskstore.ErrExpired) {
			if _, _, _, ok := s.queued(ctx, caller, cfg.TaskID); ok {
				return fail(ctx, sink, queuedPushRefusal(cfg.TaskID))
			}
		}
		return fail(ctx, sink, pushStoreError(err, cfg.TaskID))
	}
	return sink.Send(ctx, Reply{Result: &cfg, Final: true})
}

// pushConfigsOf returns the record of a task for its push-notification
// configs: the stored one, or, for a task whose message still waits in
// the offline queue, one holding the config the message carries (docs/
// protocol.md §8.8). A task caller may not see is taskstore.ErrNotFound.
func (s *Server) pushConfigsOf(ctx context.Context, caller Caller, taskID string) (taskstore.Record, error) {
	rec, err := s.taskFor(ctx, caller, taskID)
	if errors.Is(err, taskstore.ErrNotFound) && !errors.Is(err, taskstore.ErrExpired) {
		if qrec, _, cfg, ok := s.queued(ctx, caller, taskID); ok {
			rec = taskstore.Record{Task: a2a.Task{ID: qrec.TaskID, ContextID: qrec.ContextID}}
			if cfg != nil {
				rec.PushConfigs = []a2a.TaskPushNotificationConfig{*cfg}
			}
			return rec, nil
		}
		// Delivered between the two looks: the store has it now.
		return s.taskFor(ctx, caller, taskID)
	}
	return rec, err
}

// queuedPushRefusal answers a change of the configs of a task whose
// message still waits in the offline queue, which has no record to change
// yet: unsupported_operation saying so.
func queuedPushRefusal(taskID string) *a2a.Error {
	return a2a.NewError(a2a.TokenUnsupportedOperation, "task "+taskID+" waits in the offline queue: its push-notification config is the one "+
		"its message carries (GetTaskPushNotificationConfig shows it); configs can be created or deleted once the message is delivered")
}

// getPushConfig serves GetTaskPushNotificationConfig (A2A v1.0 §3.1.8):
// an unknown task, and an unknown config of a known task, are
// task_not_found.
func (s *Server) getPushConfig(ctx context.Context, caller Caller, p *a2a.GetTaskPushNotificationConfigRequest, sink Sink) error {
	rec, err := s.pushConfigsOf(ctx, caller, p.TaskID)
	if err != nil {
		return fail(ctx, sink, pushStoreError(err, p.TaskID))
	}
	i := rec.PushConfig(p.ID)
	if i < 0 {
		return fail(ctx, sink, a2a.NewError(a2a.TokenTaskNotFound, "task "+p.TaskID+" has no push-notification config "+strconv.Quote(p.ID)))
	}
	return sink.Send(ctx, Reply{Result: &rec.PushConfigs[i], Final: true})
}

// listPushConfigs serves ListTaskPushNotificationConfigs (A2A v1.0
// §3.1.9): the task's configs, oldest first, pageSize at a time when it is
// set; the page token is the offset of the next page.
func (s *Server) listPushConfigs(ctx context.Context, caller Caller, p *a2a.ListTaskPushNotificationConfigsRequest, sink Sink) error {
	rec, err := s.pushConfigsOf(ctx, caller, p.TaskID)
	if err != nil {
		return fail(ctx, sink, pushStoreError(err, p.TaskID))
	}
	from := 0
	if p.PageToken != "" {
		n, err := strconv.Atoi(p.PageToken)
		if err != nil || n < 0 || n > len(rec.PushConfigs) {
			return fail(ctx, sink, a2a.NewError(a2a.TokenInvalidParams, "invalid page token"))
		}
		from = n
	}
	to := len(rec.PushConfigs)
	if p.PageSize > 0 && int(p.PageSize) < to-from {
		to = from + int(p.PageSize)
	}
	resp := &a2a.ListTaskPushNotificationConfigsResponse{Configs: append([]a2a.TaskPushNotificationConfig{}, rec.PushConfigs[from:to]...)}
	if to < len(rec.PushConfigs) {
		resp.NextPageToken = strconv.Itoa(to)
	}
	return sink.Send(ctx, Reply{Result: resp, Final: true})
}

// deletePushConfig serves DeleteTaskPushNotificationConfig (A2A v1.0
// §3.1.10): idempotent, a config the task does not have is deleted
// already; the Notifier forgets a config deleted, before any later event.
func (s *Server) deletePushConfig(ctx context.Context, caller Caller, p *a2a.DeleteTaskPushNotificationConfigRequest, sink Sink) error {
	_, err := s.changePush(ctx, caller, p.TaskID, func(rec *taskstore.Record) error {
		i := rec.PushConfig(p.ID)
		if i < 0 {
			return errUnchanged
		}
		rec.PushConfigs = slices.Delete(slices.Clone(rec.PushConfigs), i, i+1)
		rec.PushDeliveries = slices.DeleteFunc(slices.Clone(rec.PushDeliveries), func(d taskstore.PushDelivery) bool { return d.ConfigID == p.ID })
		return nil
	}, func(taskstore.Record) { s.push.Notifier.Forget(p.TaskID, p.ID) })
	if err != nil && !errors.Is(err, errUnchanged) {
		if errors.Is(err, taskstore.ErrNotFound) && !errors.Is(err, taskstore.ErrExpired) {
			if _, _, cfg, ok := s.queued(ctx, caller, p.TaskID); ok {
				if cfg != nil && cfg.ID == p.ID {
					return fail(ctx, sink, queuedPushRefusal(p.TaskID))
				}
				// Not a config of the queued task: deleted already.
				return sink.Send(ctx, Reply{Result: &a2a.Empty{}, Final: true})
			}
		}
		return fail(ctx, sink, pushStoreError(err, p.TaskID))
	}
	return sink.Send(ctx, Reply{Result: &a2a.Empty{}, Final: true})
}

// pushForMessage checks the config a SendMessage carries and returns it
// ready to store on the message's task: its id made when absent. Its taskId
// is filled in once the task's id is known; one naming another task than
// the message's is refused.
func (s *Server) pushForMessage(c Call, p *a2a.SendMessageRequest) (*a2a.TaskPushNotificationConfig, *a2a.Error) {
	if p.Configuration == nil || p.Configuration.TaskPushNotificationConfig == nil {
		return nil, nil
	}
	if e := s.pushRefusal(c); e != nil {
		return nil, e
	}
	cfg := p.Configuration.TaskPushNotificationConfig.Clone()
	if cfg.TaskID != "" && cfg.TaskID != p.Message.TaskID {
		return nil, a2a.NewError(a2a.TokenInvalidParams,
			"configuration.taskPushNotificationConfig.taskId names another task than the message: leave it empty")
	}
	if e := s.checkPushConfig(cfg); e != nil {
		return nil, e
	}
	if cfg.ID == "" {
		cfg.ID = s.newID()
	}
	return cfg, nil
}

// notify hands an event of a task to the Notifier, once per config, in the
// configs' order. The caller holds the task's event order. Neither the
// configs (never changed in place: run.push, the record's) nor the event
// is copied: the Notifier only reads them (Notifier).
func (s *Server) notify(cfgs []a2a.TaskPushNotificationConfig, item *a2a.StreamResponse) {
	if s.push == nil || item == nil {
		return
	}
	for i := range cfgs {
		s.push.Notifier.Notify(cfgs[i], item)
	}
}

// PushReport records a Notifier's report on the config's task, where
// GetTask and ListTasks show it (PushDeliveryMetadataKey): the latest one
// per config, so the task holds at most one per config. A report that
// changes nothing but its time is not written ("at" says since when the
// delivery has been so); one for a config or task that is gone is dropped.
// A report is not a change of the task: with the stores of
// agent/taskstore it leaves the task's last-change time (its idle expiry,
// ListTasks's statusTimestampAfter) as it is (taskstore.SetPushDelivery).
// It implements PushReporter.
func (s *Server) PushReport(r PushReport) {
	if r.TaskID == "" || r.ConfigID == "" {
		return
	}
	at := r.At
	if at.IsZero() {
		at = s.now()
	}
	d := taskstore.PushDelivery{ConfigID: r.ConfigID, State: string(r.State), Status: r.Status, Reason: r.Reason, Dropped: r.Dropped, At: at.UTC()}
	ctx, cancel := context.WithTimeout(context.Background(), pushReportTimeout)
	defer cancel()
	// The report alone is written (taskstore.DeliverySetter): not the
	// task, whose Updated time stays that of its last change.
	_, err := taskstore.SetPushDelivery(ctx, s.store, r.TaskID, d)
	if err != nil && !errors.Is(err, taskstore.ErrNotFound) {
		s.log.Warn("agent: push report not recorded", "task", r.TaskID, "config", r.ConfigID, "state", string(r.State), "err", err)
	}
}

// forgetDropped has the Notifier forget the configs of a task the store
// dropped on its own (evicted, expired, past its retention: a
// taskstore.DropWatcher tells), so that nothing more is delivered for a
// task GetTask no longer knows.
func (s *Server) forgetDropped(d taskstore.Dropped) {
	for _, id := range d.PushConfigIDs {
		s.push.Notifier.Forget(d.TaskID, id)
	}
}

// pushReportTimeout bounds the store write of one PushReport.
const pushReportTimeout = 10 * time.Second

// shown is a stored task as requesters see it: with its push delivery
// reports in its metadata (PushDeliveryMetadataKey). The record's own
// metadata is left as it is.
func shown(rec taskstore.Record) a2a.Task {
	t := rec.Task
	if len(rec.PushDeliveries) == 0 {
		return t
	}
	byConfig := make(map[string]any, len(rec.PushDeliveries))
	for _, d := range rec.PushDeliveries {
		byConfig[d.ConfigID] = map[string]any{"state": d.State, "status": d.Status, "reason": d.Reason, "dropped": d.Dropped,
			"at": d.At.UTC().Format(time.RFC3339)}
	}
	t.Metadata = maps.Clone(t.Metadata)
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	t.Metadata[PushDeliveryMetadataKey] = byConfig
	return t
}

var _ PushReporter = (*Server)(nil)
