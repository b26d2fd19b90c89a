package refagent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// startPushAgent serves the reference agent over HTTP on a loopback port
// with c's push settings, and returns it with a client bound to it.
func startPushAgent(t *testing.T, c Config) (*Agent, *a2ahttp.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.ID, c.HTTP = "echo", ln
	ra, err := Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ra.Close(context.Background()) })
	cl, err := a2ahttp.NewClient(context.Background(), a2ahttp.ClientConfig{URL: strings.TrimSuffix(ra.HTTPURL(), HTTPPath)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close(context.Background()) })
	return ra, cl
}

// hook is a webhook receiver on a loopback port that keeps the pushes it
// takes.
type hook struct {
	url string
	mu  sync.Mutex
	got []*pushmon.Delivery
}

func startHook(t *testing.T, token string) *hook {
	t.Helper()
	h := &hook{}
	r := pushmon.NewReceiver(pushmon.SinkFunc(func(_ context.Context, d *pushmon.Delivery) error {
		if d.Token != token {
			return pushmon.ErrBadToken
		}
		h.mu.Lock()
		h.got = append(h.got, d)
		h.mu.Unlock()
		return nil
	}), pushmon.ReceiverConfig{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.url = "http://" + ln.Addr().String() + "/push"
	return h
}

func (h *hook) deliveries() []*pushmon.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*pushmon.Delivery(nil), h.got...)
}

func pushSend(text, url string) *a2a.SendMessageRequest {
	req := requester.TextMessage(text, "", "")
	req.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{ID: "hook", URL: url, Token: "tok"}}
	return req
}

// TestPushOverHTTP: with Push and AllowLoopbackWebhooks the card declares
// pushNotifications, a config sent with the message gets the task's
// updates at a loopback webhook, and GetTask shows the delivery report.
func TestPushOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, c := startPushAgent(t, Config{Push: true, AllowLoopbackWebhooks: true})
	if p := c.Card().Capabilities.PushNotifications; p == nil || !*p {
		t.Fatalf("the card does not declare pushNotifications: %+v", c.Card().Capabilities)
	}
	h := startHook(t, "tok")
	res, err := c.SendMessage(ctx, pushSend("hello", h.url))
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %s", res.Task.Status.State)
	}
	for {
		got := h.deliveries()
		if n := len(got); n > 0 {
			if u, ok := got[n-1].Item.Payload.(*a2a.TaskStatusUpdateEvent); ok && u.Status.State == a2a.TaskStateCompleted {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d pushes, none COMPLETED", len(got))
		case <-time.After(10 * time.Millisecond):
		}
	}
	for {
		task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := pushmon.DeliveryReports(task)["hook"]; ok {
			if r.State != pushmon.ReportDelivered {
				t.Fatalf("report %+v", r)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no delivery report")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestPushRules: without Push the card does not declare the capability and
// a config is refused push_notification_not_supported; with Push but not
// AllowLoopbackWebhooks an http webhook on loopback is invalid_params.
func TestPushRules(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, off := startPushAgent(t, Config{})
	if p := off.Card().Capabilities.PushNotifications; p != nil && *p {
		t.Fatal("an agent without Push declares pushNotifications")
	}
	if _, err := off.SendMessage(ctx, pushSend("hello", "https://hooks.example.com/x")); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		t.Fatalf("without Push: %v", err)
	}
	_, strict := startPushAgent(t, Config{Push: true})
	_, err := strict.SendMessage(ctx, pushSend("hello", "http://127.0.0.1:9/x"))
	var e *a2a.Error
	if !errors.As(err, &e) || e.Token != a2a.TokenInvalidParams {
		t.Fatalf("a loopback webhook without AllowLoopbackWebhooks: %v", err)
	}
}

// TestPushClose: Close and Kill close the push sender with the agent (it
// discards what it is handed afterwards).
func TestPushClose(t *testing.T) {
	for _, kill := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ra, err := Start(context.Background(), Config{ID: "echo", HTTP: ln, Push: true, AllowLoopbackWebhooks: true})
		if err != nil {
			t.Fatal(err)
		}
		if kill {
			ra.Kill()
		} else if err := ra.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		ra.sender.Notify(a2a.TaskPushNotificationConfig{ID: "c", TaskID: "t", URL: "http://127.0.0.1:9/x"},
			&a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "x", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}})
		if st := ra.sender.Stats(); st.Discarded != 1 || st.Attempts != 0 {
			t.Fatalf("kill %v: a notification after the agent stopped: %+v", kill, st)
		}
	}
}
