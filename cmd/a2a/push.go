package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
)

// pushFlag says whether a2a agent serves push notifications: as --push
// says when it was given, else with --http only. --allow-loopback-webhooks
// needs them on.
func pushFlag(fs *flag.FlagSet, push, allowLoopback bool, httpAddr string) (bool, error) {
	if !given(fs, "push") {
		push = httpAddr != ""
	}
	if allowLoopback && !push {
		return false, fail(exitUsage, "--allow-loopback-webhooks goes with push notifications (--push; on by default with --http)")
	}
	return push, nil
}

// onLoopback reports whether a listener's address is a loopback one
// (127.0.0.0/8, ::1): an agent that only this machine reaches.
func onLoopback(addr net.Addr) bool {
	a, ok := addr.(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// reportWait bounds how long a2a send --webhook waits for the agent's
// delivery report once the task has answered.
const reportWait = 3 * time.Second

// webhookConfig is the push-notification config a2a send --webhook puts in
// its message: the URL, the token given or a random one, and an id of its
// own to find the agent's delivery report by.
func webhookConfig(rawURL, token string) (*a2a.TaskPushNotificationConfig, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fail(exitUsage, "--webhook: %q is not an http:// or https:// URL", rawURL)
	}
	if u.User != nil {
		return nil, fail(exitUsage, "--webhook: the URL holds credentials (user@ or user:password@): the agent refuses them; the notification token (--webhook-token) authenticates the agent to the webhook")
	}
	if token == "" {
		var b [32]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	return &a2a.TaskPushNotificationConfig{ID: uuid.NewString(), URL: rawURL, Token: token}, nil
}

// shownURL is a webhook URL as a2a send prints it: without its query and
// fragment, which may hold secrets of the receiver's.
func shownURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the webhook"
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}

// pushReporter returns the printer's report step for a send carrying cfg:
// it prints the agent's delivery report on cfg, read from the task's
// metadata (docs/protocol.md §8.8), from the answer or with GetTask for up
// to reportWait.
func pushReporter(c *requester.Client, opts []requester.CallOption, cfg *a2a.TaskPushNotificationConfig) func(ctx context.Context, p *printer, task *a2a.Task) {
	return func(ctx context.Context, p *printer, task *a2a.Task) {
		r, ok := pushmon.DeliveryReports(task)[cfg.ID]
		if !ok && task.ID != "" {
			wctx, cancel := context.WithTimeout(ctx, reportWait)
			defer cancel()
		poll:
			for !ok {
				if t, err := c.GetTask(wctx, &a2a.GetTaskRequest{ID: task.ID}, opts...); err == nil {
					if r, ok = pushmon.DeliveryReports(t)[cfg.ID]; ok {
						break
					}
				}
				select {
				case <-wctx.Done():
					break poll
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		p.pushReport(shownURL(cfg.URL), cfg.ID, r, ok)
	}
}

// pushReport prints a delivery report: "push  URL: delivered", "dead (HTTP
// 410 Gone)", or that the agent has none yet.
func (p *printer) pushReport(url, configID string, r pushmon.DeliveryReport, ok bool) {
	if p.json {
		line := struct {
			URL      string `json:"url"`
			ConfigID string `json:"configId"`
			State    string `json:"state"`
			Status   int    `json:"status,omitempty"`
			Reason   string `json:"reason,omitempty"`
			Dropped  int    `json:"dropped,omitempty"`
		}{URL: url, ConfigID: configID, State: r.State, Status: r.Status, Reason: r.Reason, Dropped: r.Dropped}
		if !ok {
			line.State = "none"
		}
		b, _ := json.Marshal(map[string]any{"push": line})
		fmt.Fprintln(p.w, string(b))
		return
	}
	if !ok {
		fmt.Fprintf(p.w, "push        %s: no delivery report yet\n", url)
		return
	}
	fmt.Fprintf(p.w, "push        %s: %s\n", url, describeReport(r))
}

// describeReport is a report in a few words: its state, and why.
func describeReport(r pushmon.DeliveryReport) string {
	detail := r.Reason
	if r.State == pushmon.ReportDelivered {
		detail = "" // a 2xx, no reason
	} else if r.Status != 0 {
		code := strconv.Itoa(r.Status)
		if !strings.HasPrefix(detail, code) {
			detail = strings.TrimSpace(code + " " + detail)
		}
		detail = "HTTP " + detail
	}
	if r.State == pushmon.ReportOverflow || r.Dropped > 0 {
		detail = strings.TrimPrefix(detail+", ", ", ") + strconv.Itoa(r.Dropped) + " dropped"
	}
	if detail == "" {
		return r.State
	}
	return r.State + " (" + detail + ")"
}
