package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester/pushmon"
)

const webhookHelp = `
The webhook receives push notifications (A2A v1.0 §4.3): each POST carries
one update of a task (a StreamResponse: a status update, an artifact
update, or the task), which is printed as it comes, "task ID  KIND
STATE: TEXT". It serves every path of ADDR; the URL printed at start is
the one to give a2a send --webhook. It runs until interrupted.

--json prints one JSON object per line instead of the text lines:
  {"event":"listening","address":ADDR,"url":URL}
  {"event":"push","taskId":T,"kind":K[,"state":S][,"text":TEXT],"tokenChecked":BOOL,"item":STREAMRESPONSE}
  {"event":"refused","taskId":T,"status":403}   (the line on stderr too)
  {"event":"stopped"}
kind is task, status, artifact, artifact+ (appended) or message;
tokenChecked says the push carried the --token (false without --token:
any token is taken). The push's config id is not in the push itself, so
it is not printed.

Answers (docs/protocol.md §8.3): 204 to a push it printed; 401 to one
without a notification token (A2A-Notification-Token); with --token T, 403
to one carrying another token, which the agent then reports dead; 400 to a
body that is not a StreamResponse naming a task; 413 to one over 1 MiB;
405 to anything but POST. Without --token every token is taken. A push
refused for its token is named on stderr; --log-level debug says why any
push was refused.

An agent delivers to a webhook on a loopback address only when it allows it
(a2a agent -h): the webhook on 127.0.0.1 is for an agent on this machine.
`

func runWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("webhook", "--listen ADDR [--token T] [--log-level L] [--json]",
		"a2a webhook --listen 127.0.0.1:9090\n  a2a send --url http://127.0.0.1:8080 --webhook http://127.0.0.1:9090/ --webhook-token T hello", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), webhookHelp+jsonHelp) }
	listen := fs.String("listen", "", "receive pushes on this TCP address (host:port; port 0 picks a free one)")
	token := fs.String("token", "", "take only pushes carrying this notification token (default: any token)")
	asJSON := fs.Bool("json", false, "print one JSON object per line on stdout: each push, the start and the stop (see below); errors as {\"error\":{...}}")
	logLevel := addLogLevel(fs, slog.LevelWarn)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if *listen == "" {
		return fail(exitUsage, "--listen is required")
	}
	log, err := logger(stderr, *logLevel)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(exitFailed, "--listen: %v", err)
	}
	out := &lineOut{w: stdout, json: *asJSON}
	pp := &pushPrinter{out: out, errw: stderr, token: []byte(*token)}
	srv := &http.Server{
		Handler:           pushmon.NewReceiver(pp, pushmon.ReceiverConfig{Logger: log}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	out.emit(fmt.Sprintf("webhook listening on %s: give a2a send --webhook %s", ln.Addr(), hookURL(ln.Addr())),
		webhookEvent{Event: "listening", Address: ln.Addr().String(), URL: hookURL(ln.Addr())})
	select {
	case <-ctx.Done():
	case err := <-served:
		return fail(exitFailed, "serving: %v", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	out.emit("webhook stopped", webhookEvent{Event: "stopped"})
	return nil
}

// webhookEvent is a line of a2a webhook --json but a push (pushEvent).
type webhookEvent struct {
	Event   string `json:"event"`
	Address string `json:"address,omitempty"`
	URL     string `json:"url,omitempty"`
	TaskID  string `json:"taskId,omitempty"`
	Status  int    `json:"status,omitempty"`
}

// pushEvent is the a2a webhook --json line of a push.
type pushEvent struct {
	Event        string          `json:"event"`
	TaskID       string          `json:"taskId"`
	Kind         string          `json:"kind"`
	State        string          `json:"state,omitempty"`
	Text         string          `json:"text,omitempty"`
	TokenChecked bool            `json:"tokenChecked"`
	Item         json.RawMessage `json:"item"`
}

// hookURL is the URL of a webhook listening on addr, with 127.0.0.1 for an
// unspecified host (reachable from this machine only).
func hookURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// pushPrinter is the Sink of a2a webhook: it checks the token and prints
// each push.
type pushPrinter struct {
	out   *lineOut
	errw  io.Writer
	token []byte // nil: any
}

// Deliver implements pushmon.Sink.
func (pp *pushPrinter) Deliver(_ context.Context, d *pushmon.Delivery) error {
	if len(pp.token) > 0 && subtle.ConstantTimeCompare([]byte(d.Token), pp.token) != 1 {
		fmt.Fprintf(pp.errw, "a2a webhook: refused a push for task %s: not the --token (answered 403)\n", d.TaskID)
		if pp.out.json {
			pp.out.emit("", webhookEvent{Event: "refused", TaskID: d.TaskID, Status: http.StatusForbidden})
		}
		return pushmon.ErrBadToken
	}
	kind, state, text := describePush(d.Item)
	if pp.out.json {
		raw, _ := d.Item.MarshalJSON()
		pp.out.emit("", pushEvent{Event: "push", TaskID: d.TaskID, Kind: kind, State: state, Text: text, TokenChecked: len(pp.token) > 0, Item: raw})
		return nil
	}
	line := "task " + d.TaskID + "  " + fmt.Sprintf("%-9s", kind)
	if state != "" {
		line += " " + state
	}
	if text != "" {
		if state != "" {
			line += ":"
		}
		line += " " + text
	}
	pp.out.emit(line, nil)
	return nil
}

// describePush names a push's kind (task, status, artifact or message),
// the task state it carries ("" for none) and its text.
func describePush(item *a2a.StreamResponse) (kind, state, text string) {
	switch x := item.Payload.(type) {
	case *a2a.Task:
		if x.Status != nil && x.Status.Message != nil {
			text = agent.TextOf(x.Status.Message)
		}
		return "task", demo.StateOf(x.Status), text
	case *a2a.TaskStatusUpdateEvent:
		if x.Status != nil && x.Status.Message != nil {
			text = agent.TextOf(x.Status.Message)
		}
		return "status", demo.StateOf(x.Status), text
	case *a2a.TaskArtifactUpdateEvent:
		if x.Artifact != nil {
			text = x.Artifact.ArtifactID + ": " + demo.PartsText(x.Artifact.Parts)
		}
		if x.Append {
			return "artifact+", "", text
		}
		return "artifact", "", text
	case *a2a.Message:
		return "message", "", agent.TextOf(x)
	}
	return "unknown", "", ""
}
