package pushmon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
)

// The push token headers (docs/protocol.md §11, "push token header"): the
// Receiver reads TokenHeader, and AltTokenHeader when the first is absent.
const (
	TokenHeader    = "A2A-Notification-Token"
	AltTokenHeader = "X-A2A-Notification-Token"
)

// DefaultMaxBodyBytes is the largest push body a Receiver reads when
// ReceiverConfig.MaxBodyBytes (or Config.MaxBodyBytes) is zero: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// The errors a Sink returns to choose the Receiver's answer.
var (
	// ErrBadToken: the push carried a token that is not the one registered
	// for its task. The Receiver answers 403.
	ErrBadToken = errors.New("pushmon: notification token does not match the task")
	// ErrUnknownTask: no task of the push is known here (never watched,
	// or forgotten). The Receiver answers 404, so the sender marks the
	// binding dead and stops pushing to it.
	ErrUnknownTask = errors.New("pushmon: unknown task")
	// ErrBusy: the Watch's queue of updates is full. The Receiver answers
	// 503 with Retry-After, so the sender retries later; nothing is
	// acknowledged and lost.
	ErrBusy = errors.New("pushmon: update queue full")
)

// Delivery is one push the Receiver accepted as far as it can tell: it
// carried a token and its body is a valid StreamResponse about TaskID.
type Delivery struct {
	// TaskID is the task the push is about (Task.id, or the taskId of the
	// update or message).
	TaskID string
	// Token is the notification token it carried.
	Token string
	// Item is the decoded, validated body.
	Item *a2a.StreamResponse
}

// Sink takes the deliveries of a Receiver: the Monitor is one, SinkFunc
// adapts a callback. Deliver must check d.Token against the token
// registered for d.TaskID, and return only once the delivery is handed
// over: the Receiver answers 2xx (an acknowledgement, A2A v1.0 §4.3.3)
// exactly when Deliver returns nil. ErrBadToken, ErrUnknownTask and ErrBusy
// choose 403, 404 and 503; any other error is a 500.
type Sink interface {
	Deliver(ctx context.Context, d *Delivery) error
}

// SinkFunc is a Sink made of a function.
type SinkFunc func(ctx context.Context, d *Delivery) error

// Deliver calls f.
func (f SinkFunc) Deliver(ctx context.Context, d *Delivery) error { return f(ctx, d) }

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// MaxBodyBytes bounds the body of a push; a larger one is answered 413.
	// Default DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Logger receives the pushes refused, at debug level (default:
	// discard).
	Logger *slog.Logger
}

/*
Receiver is the webhook of a push-notification config: an http.Handler
for the POSTs of A2A v1.0 §4.3.3, each carrying one StreamResponse. Serve it
at the URL the configs name (Config.ReceiverURL for a Monitor's).

It answers, in this order:

  - 405 to anything but POST;
  - 401 to a push without a token (TokenHeader or AltTokenHeader);
  - 413 to a body larger than MaxBodyBytes;
  - 400 to a body that is not a valid StreamResponse (decoded and checked
    with the generated code, reading a peer's known departures from A2A v1.0
    as the requester does: requester.DecodeLenient) or that names no task;
  - what the Sink says: 204 once it took the push, 403 for a token that is
    not the task's, 404 for a task it does not know, 503 when it is full.

A sender treats 404, 410 and any other 4xx as a dead binding and 5xx as a
failing one (docs/protocol.md §8.3).
*/
type Receiver struct {
	sink Sink
	max  int64
	log  *slog.Logger
}

// NewReceiver returns a Receiver that hands its pushes to sink.
func NewReceiver(sink Sink, cfg ReceiverConfig) *Receiver {
	r := &Receiver{sink: sink, max: cfg.MaxBodyBytes, log: cfg.Logger}
	if r.max <= 0 {
		r.max = DefaultMaxBodyBytes
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r
}

// ServeHTTP answers one push.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.refuse(w, http.StatusMethodNotAllowed, "push notifications are POSTed")
		return
	}
	token := req.Header.Get(TokenHeader)
	if token == "" {
		token = req.Header.Get(AltTokenHeader)
	}
	if token == "" {
		r.refuse(w, http.StatusUnauthorized, "no "+TokenHeader+" header")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.max))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			r.refuse(w, http.StatusRequestEntityTooLarge, "push body larger than "+strconv.FormatInt(r.max, 10)+" bytes")
			return
		}
		r.refuse(w, http.StatusBadRequest, "reading the push body: "+err.Error())
		return
	}
	item, departed, err := requester.DecodeLenient(body, a2a.ParseStreamResponseJSON)
	if err != nil {
		r.refuse(w, http.StatusBadRequest, "the push body is not a valid StreamResponse: "+err.Error())
		return
	}
	if len(departed) > 0 {
		r.log.Debug("pushmon: push read despite departures from A2A v1.0", "departures", departed)
	}
	taskID := TaskIDOf(item)
	if taskID == "" {
		r.refuse(w, http.StatusBadRequest, "the push names no task")
		return
	}
	err = r.sink.Deliver(req.Context(), &Delivery{TaskID: taskID, Token: token, Item: item})
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrBadToken):
		r.refuse(w, http.StatusForbidden, "the token is not this task's")
	case errors.Is(err, ErrUnknownTask):
		r.refuse(w, http.StatusNotFound, "unknown task "+taskID)
	case errors.Is(err, ErrBusy), errors.Is(err, ErrMonitorClosed):
		w.Header().Set("Retry-After", "1")
		r.refuse(w, http.StatusServiceUnavailable, err.Error())
	default:
		r.log.Warn("pushmon: a push could not be taken", "task", taskID, "err", err)
		r.refuse(w, http.StatusInternalServerError, "the push could not be taken")
	}
}

func (r *Receiver) refuse(w http.ResponseWriter, code int, why string) {
	r.log.Debug("pushmon: push refused", "status", code, "why", why)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	if len(why) > 512 {
		why = strings.ToValidUTF8(why[:512], "") + "..."
	}
	_, _ = io.WriteString(w, why+"\n")
}

// TaskIDOf returns the task a stream item is about: the task's id, or the
// taskId of a status update, an artifact update or a message ("" when it
// names none).
func TaskIDOf(item *a2a.StreamResponse) string {
	if item == nil {
		return ""
	}
	switch x := item.Payload.(type) {
	case *a2a.Task:
		return x.ID
	case *a2a.TaskStatusUpdateEvent:
		return x.TaskID
	case *a2a.TaskArtifactUpdateEvent:
		return x.TaskID
	case *a2a.Message:
		return x.TaskID
	}
	return ""
}
