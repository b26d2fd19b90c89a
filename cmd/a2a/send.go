package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

const sendHelp = `
Credentials: the bearer token comes from --token-file FILE (its first
line) or $A2A_TOKEN; --token TOKEN works too, but every user of the
machine can read it in ps. Over MQTT the broker connection authenticates
with --username (or $A2A_USERNAME) and --password-file FILE (its first
line; or $A2A_PASSWORD), or with the broker URL's
mqtt://USER:PASSWORD@host:port (percent-encoded; a password there shows in
ps and the shell's history: a2a warns); a flag takes precedence over the
URL, the URL over the environment, and a user name or password in a flag
and in the URL that differ is a usage error.
A user name of the form ORG/UNIT/ID is the requester's Client ID: a broker
with a password file (a2a broker --password-file, mosquitto with
use_username_as_clientid) admits a user only under its own, so it gives
--org, --unit and --as (ID) unless they are set, and a different value is
a usage error. One user holds one connection at a time: a second client
logged in as the same user (another send, a watch) takes its session over.
For TLS give an mqtts:// broker URL (or an https:// --url), with --ca-file
for a private authority and --cert-file and --key-file for a client
certificate.

Push notifications: --webhook URL puts a push-notification config in the
message (configuration.taskPushNotificationConfig, A2A v1.0 §3.1.7), so
the agent POSTs the task's status and artifact updates to URL (a2a webhook
--listen ADDR receives and prints them). Each POST carries the notification
token in A2A-Notification-Token: --webhook-token T, or a random one. After
the answer the agent's delivery report on the webhook is printed, read from
the task's metadata (docs/protocol.md §8.8) with GetTask for up to 3 s:
"push URL: delivered", "failing (...)", "dead (HTTP 410 Gone)", "refused
(...)", or "no delivery report yet"; it does not change the exit status.
Over --url and --broker alike: an agent that does not serve push
notifications (a2a agent --push=false, or over MQTT alone without --push)
answers push_notification_not_supported, and nothing is sent. An agent
takes webhooks on public addresses over https, and on loopback ones only
when it allows them (a2a agent -h).

Retries (MQTT): an attempt that gets no reply within --reply-timeout
(default 15s) is sent again, up to --attempts in all (default 3), after
--retry-backoff (default 1s, doubled for each later retry, ±20 %): the
profile's retry and timeout profile (docs/protocol.md §4.4), whose values
are a deployment's to choose.

Pool failover (MQTT): a task sent to a pool is served by the member that
took it, and its follow-ups (--task, with --pool) go to that member alone.
When that member is gone, --pool-failover sends the follow-up, once its
retries have run out, to the pool again, where another member continues
the same task. Give it only when the pool's members share a task store (a2a
agent --pool P --store postgres://...): a member that does not hold the
task would start it afresh. It is a deployment choice outside the profile
(docs/protocol.md §4.6.1).

The message: the arguments, joined by spaces, are its text; "-" alone
reads the text from standard input instead (at most 4 MiB, the agents'
default request limit: past it a2a stops with exit status 1, sending
nothing), which also carries a text longer than the system lets one
argument be (128 KiB on Linux, MAX_ARG_STRLEN). --file PATH (repeatable)
adds a file part: the file's bytes (base64 on the wire), its name, and its
media type from its extension (application/octet-stream when unknown); at
most 3 MiB in all, so that the message stays within an agent's default
4 MiB. An agent or a broker with lower limits refuses a larger message.
Flags may come after the text (a2a send hello --to echo); "--" ends them
(a2a send --to echo -- -v).

Defaults: --broker is $A2A_BROKER, else mqtt://localhost:1883; --org and
--unit come from a user name ORG/UNIT/ID, else $A2A_ORG and $A2A_UNIT;
with neither --broker, --to nor --pool, $A2A_URL sends over HTTP instead.

Before a new task to --to, send reads the agent's retained card (at most
--card-wait, default 2s) and stops at once, exit status 3, when there is
none ("no agent ORG/UNIT/ID") or it says the agent is offline; a broker
that does not let the requester read cards skips the check. While it
waits for the broker and the agent, send shows on stderr, when stderr is
a terminal, what it waits for, for how long, and the attempt.

Follow-ups: after INPUT_REQUIRED (or AUTH_REQUIRED) send prints "follow up
--task T --context C"; --task T alone is enough: send reads the task's
context with GetTask first (over MQTT an unknown taskId would start a new
task; this way it is task_not_found). After COMPLETED it prints "next turn --context C": a new
task in the same conversation. A task that ended takes no follow-up.

Exit status (see below): 0 when the task completed or asks for input, 1
when it failed, was rejected or canceled, or the agent answered an error
(with --json: {"error":{"token":"invalid_params","code":1,"rpcCode":-32602,
"message":...}}), 2 when the command line is wrong, 3 when the broker or
the agent cannot be reached, 4 when --timeout passed, 5 when the agent is
asleep and queued the message: it prints "queued as task ID, retry after N
s" (with --json, an object with queued, taskId, contextId and
retryAfterSec). The agent runs the task when it wakes, in about N s;
sending the message again would queue it twice.
`

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("send", "([--broker URL] [--org O --unit U] (--to ID | --pool P [--pool-failover]) | --url URL) [--stream] [--context C] [--task T] [--timeout D] [--json] [--token-file F] [--webhook URL [--webhook-token T]] [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F] [--topic-root ROOT] [--reply-timeout D] [--attempts N] [--retry-backoff D] [--card-wait D] [--file PATH]... (TEXT | - | --get TASK)",
		"a2a send --org acme --unit lab --to echo hello\n  a2a send hello --to echo --broker mqtt://127.0.0.1:1883 --org acme --unit lab\n  echo hello | a2a send --to echo -\n  A2A_TOKEN=... a2a send --url http://127.0.0.1:8080 hello", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), sendHelp+"\n"+envHelp+"\n"+exitCodesHelp) }
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS) (default: $"+envBroker+", else "+defaultBroker+")")
	agentURL := fs.String("url", "", "send over HTTP to the agent at this URL: its base URL (the card at /.well-known/agent-card.json names the endpoint), its card's URL, or its JSON-RPC endpoint (default: $"+envURL+" when neither --broker, --to nor --pool is given)")
	org := fs.String("org", "", "org_id (MQTT; default: ORG of a user name ORG/UNIT/ID, else $"+envOrg+")")
	unit := fs.String("unit", "", "unit_id (MQTT; default: UNIT of a user name ORG/UNIT/ID, else $"+envUnit+")")
	to := fs.String("to", "", "agent_id to send to (MQTT)")
	pool := fs.String("pool", "", "pool_id to send to instead of an agent (MQTT)")
	poolFailover := fs.Bool("pool-failover", false, "with --pool: the pool's members share a task store, so a follow-up whose member does not answer goes to the pool again (see below)")
	defaults := mqttbind.DefaultRetryProfile()
	replyTimeout := fs.Duration("reply-timeout", defaults.ReplyFirstTimeout, "wait this long for an attempt's first reply before sending it again (MQTT)")
	attempts := fs.Int("attempts", defaults.MaxAttempts, "send a request at most this many times in all (MQTT)")
	backoff := fs.Duration("retry-backoff", defaults.RetryBackoff[0], "wait this long before the first retry, twice as long before each later one, ±20 % (MQTT)")
	cardWait := fs.Duration("card-wait", defaultCardWait, "before a new task to --to, wait this long at most for the agent's retained card, and stop at once (exit status 3) when there is none or it says offline; 0 sends without looking (MQTT)")
	stream := fs.Bool("stream", false, "SendStreamingMessage: print each stream item as it arrives")
	contextID := fs.String("context", "", "contextId of the conversation to continue (default: a new one; with --task, the task's own, read with GetTask)")
	taskID := fs.String("task", "", "taskId to resume after INPUT_REQUIRED or AUTH_REQUIRED (default: a new task)")
	get := fs.String("get", "", "send no message: read task ID with GetTask and print it (e.g. a task an asleep agent queued)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long (exit status 4)")
	asJSON := fs.Bool("json", false, "print one JSON object per line, errors included ({\"error\":{\"token\",\"code\",\"message\"}})")
	var files stringList
	fs.Var(&files, "file", fmt.Sprintf("send this file as a file part too (repeatable; at most %d bytes in all; its media type from its extension)", maxFileBytes))
	webhookURL := fs.String("webhook", "", "push the task's updates to this webhook URL (push notifications; see below)")
	webhookToken := fs.String("webhook-token", "", "the notification token the webhook gets with each push (default: a random one)")
	as := fs.String("as", "", "the requester's own agent_id (MQTT; default: ID of a user name ORG/UNIT/ID, else send-<random>)")
	tokens := addTokenFlags(fs)
	routesFile := fs.String("routes", "", "handover routing state file (MQTT; default: $XDG_STATE_HOME/a2a/routes.json)")
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
	logLevel := addLogLevel(fs, slog.LevelError)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *brokerURL != "" && *agentURL != "" {
		return fail(exitUsage, "give exactly one of --url and --broker")
	}
	if *agentURL == "" && !given(fs, "broker", "to", "pool") && os.Getenv(envURL) != "" {
		*agentURL = os.Getenv(envURL)
	}
	overMQTT := *agentURL == ""
	if overMQTT {
		*brokerURL, cf.brokerFrom = brokerOf(fs, *brokerURL)
	}
	text, err := messageText(fs.Args(), os.Stdin)
	if err != nil {
		return err
	}
	switch {
	case overMQTT && (*to == "") == (*pool == ""):
		return fail(exitUsage, "give exactly one of --to and --pool (or --url for HTTP)")
	case *get != "" && (text != "" || len(files) > 0 || *taskID != "" || *stream):
		return fail(exitUsage, "--get reads a task: it takes no TEXT, --file, --task or --stream")
	case text == "" && len(files) == 0 && *get == "":
		return fail(exitUsage, "the message TEXT is missing (give it as arguments, - to read it from standard input, or --file PATH)")
	case *get != "" && *webhookURL != "":
		return fail(exitUsage, "--get reads a task: it takes no --webhook")
	case *webhookToken != "" && *webhookURL == "":
		return fail(exitUsage, "--webhook-token goes with --webhook")
	case *poolFailover && overMQTT && *pool == "":
		return fail(exitUsage, "--pool-failover goes with --pool")
	case *replyTimeout <= 0:
		return fail(exitUsage, "--reply-timeout must be positive")
	case *attempts < 1:
		return fail(exitUsage, "--attempts must be at least 1")
	case *backoff < 0:
		return fail(exitUsage, "--retry-backoff must not be negative")
	case *cardWait < 0:
		return fail(exitUsage, "--card-wait must not be negative")
	case *timeout <= 0:
		return fail(exitUsage, "--timeout must be positive")
	}
	parts, err := messageParts(text, files)
	if err != nil {
		return err
	}
	var hook *a2a.TaskPushNotificationConfig
	if *webhookURL != "" {
		if hook, err = webhookConfig(*webhookURL, *webhookToken); err != nil {
			return err
		}
	}
	log, err := logger(stderr, *logLevel)
	if err != nil {
		return err
	}
	bearer, err := tokens.bearer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var c *requester.Client
	var opts []requester.CallOption
	endpoint := ""
	p := &printer{w: stdout, json: *asJSON}
	prog := startProgress(stderr, *attempts)
	defer prog.stop()
	var target requester.Target
	if !overMQTT {
		if err := onlyWith(fs, "--broker", append([]string{"org", "unit", "to", "pool", "pool-failover", "as", "routes", "topic-root",
			"reply-timeout", "attempts", "retry-backoff", "card-wait", "connect-timeout"}, credentialFlags...)...); err != nil {
			return err
		}
		if err := noUserinfo("url", *agentURL); err != nil {
			return err
		}
		hc, err := cf.httpClient(*agentURL)
		if err != nil {
			return err
		}
		if bearer != "" && plainRemote(*agentURL) {
			fmt.Fprintf(stderr, "a2a send: warning: the bearer token crosses the network in clear (use an https:// URL)\n")
		}
		prog.set("reading the card of " + *agentURL)
		if c, endpoint, err = httpRequester(ctx, *agentURL, hc, log); err != nil {
			return timedOut(ctx, err, *timeout)
		}
		prog.set("waiting for " + endpoint)
	} else {
		target = requester.Target{Agent: *to, Pool: *pool}
		if err := cf.senderOrgUnit(*brokerURL, org, unit, as); err != nil {
			return err
		}
		if err := checkMQTTSend(target, org, unit, as, *taskID, contextID); err != nil {
			return err
		}
		root, err := rootf.root(stderr)
		if err != nil {
			return err
		}
		p.root = root
		conn, err := cf.connection(*brokerURL, stderr)
		if err != nil {
			return err
		}
		if (bearer != "" || conn.Password != nil) && plainRemote(*brokerURL) {
			fmt.Fprintf(stderr, "a2a send: warning: credentials cross the network in clear (use an mqtts:// broker URL)\n")
		}
		rc := requester.Config{Logger: log, PoolFailover: *poolFailover, Jitter: prog.countRetry}
		if given(fs, "reply-timeout", "attempts", "retry-backoff") {
			rc.Retry = retryProfile(defaults, *replyTimeout, *attempts, *backoff)
		}
		name := *org + "/" + *unit + "/" + *to
		if *to != "" && *taskID == "" && *get == "" && *cardWait > 0 {
			prog.set("looking for " + name + " on " + conn.Broker)
			clientID := conn.Username
			if clientID == "" {
				clientID = *org + "/" + *unit + "/" + *as
			}
			if err := checkPresence(ctx, conn, root, *org, *unit, clientID, *to, *cardWait); err != nil {
				return timedOut(ctx, err, *timeout)
			}
		}
		prog.set("connecting to " + conn.Broker)
		if c, err = mqttRequester(ctx, conn, root, *org, *unit, *as, *routesFile, rc); err != nil {
			return timedOut(ctx, err, *timeout)
		}
		if *pool != "" {
			name = *org + "/" + *unit + "/pool " + *pool
		}
		prog.set("waiting for " + name)
		opts = append(opts, requester.To(target))
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		c.Close(cctx)
	}()
	if bearer != "" {
		opts = append(opts, requester.WithBearer(bearer))
	}
	p.progress = prog
	if *get != "" {
		return timedOut(ctx, getTask(ctx, c, *get, opts, p, endpoint), *timeout)
	}
	// Over HTTP a new task carries no taskId: the server makes it (A2A
	// v1.0, core); over MQTT the requester makes it (docs/protocol.md).
	// A follow-up without --context is looked up first: over MQTT an
	// unknown taskId would start a new task, not resume one; the context
	// is the task's (A2A v1.0 §3.4.3; docs/protocol.md §5.5).
	if *taskID != "" && *contextID == "" {
		t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: *taskID}, opts...)
		if err != nil {
			return timedOut(ctx, p.sendError(err, endpoint), *timeout)
		}
		*contextID = t.ContextID
	}
	req := requester.TextMessage(text, *taskID, *contextID)
	req.Message.Parts = parts
	if hook != nil {
		req.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: hook}
		p.report = pushReporter(c, opts, hook)
	}
	err = converse(ctx, c, req, opts, *stream, p, endpoint)
	var ee *exitError
	if errors.As(err, &ee) && bearer == "" && strings.HasPrefix(ee.msg, string(a2a.TokenUnauthenticated)+" ") {
		ee.msg += " (give a token: --token-file FILE or $" + envToken + ")"
	}
	if errors.As(err, &ee) && ee.code == exitUnreachable && strings.HasPrefix(ee.msg, requester.ErrUnreachable.Error()) && overMQTT {
		who := *org + "/" + *unit + "/" + *to
		if *pool != "" {
			who = "pool " + *org + "/" + *unit + "/" + *pool
		}
		ee.msg = who + " did not answer: " + ee.msg
		if *pool != "" && p.root.IsDefault() {
			ee.msg += "; on mosquitto 2.0 a pool under " + mqttbind.DefaultRoot + " never gets a request (it does not deliver topics beginning with $ " +
				"to shared subscriptions): run the pool and its senders with --topic-root " + plainRoot + " (docs/protocol.md §12)"
		}
	}
	return timedOut(ctx, err, *timeout)
}

// timedOut is err, or, when err is not an answer of the agent (an A2A
// error, a task that ended) and the send's --timeout passed, the timeout
// error: exit status 4.
func timedOut(ctx context.Context, err error, timeout time.Duration) error {
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) && (ee.rpcCode != 0 || ee.code == exitQueued || strings.HasPrefix(ee.token, "task_") ||
		ee.code == exitUnreachable && !strings.Contains(ee.msg, context.DeadlineExceeded.Error())) {
		// An answer, or a failure that says more than the timeout.
		return err
	}
	return failToken(exitTimeout, "timeout", "no answer within %v (--timeout)", timeout)
}

// checkMQTTSend checks the identifiers of a send over MQTT and fills in
// the defaults: the requester's own agent_id, and, for a new task, a new
// contextId. Over MQTT task and context ids are UUIDs (docs/protocol.md).
// A follow-up (taskID) without contextId gets none: the agent takes the
// task's own (docs/protocol.md §5.5), where an invented one would differ
// from it and be refused.
func checkMQTTSend(target requester.Target, org, unit, as *string, taskID string, contextID *string) error {
	if *as == "" {
		*as = "send-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	}
	ids := []string{"org", *org, "unit", *unit, "as", *as}
	if target.Agent != "" {
		ids = append(ids, "to", target.Agent)
	}
	if target.Pool != "" {
		ids = append(ids, "pool", target.Pool)
	}
	if err := checkIDs(ids...); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"task", taskID}, {"context", *contextID}} {
		if f.v != "" && !mqttbind.ValidUUID(f.v) {
			return fail(exitUsage, "--%s: %q is not a UUID", f.name, f.v)
		}
	}
	if *contextID == "" && taskID == "" {
		*contextID = uuid.NewString()
	}
	return nil
}

// given reports whether any of the named flags was set.
func given(fs *flag.FlagSet, names ...string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || slices.Contains(names, f.Name) })
	return set
}

// retryProfile is the profile p with a send's --reply-timeout, --attempts
// and --retry-backoff: the backoff doubles for each later retry, as the
// profile's defaults do (docs/protocol.md §4.4).
func retryProfile(p mqttbind.RetryProfile, replyTimeout time.Duration, attempts int, backoff time.Duration) mqttbind.RetryProfile {
	p.ReplyFirstTimeout, p.MaxAttempts = replyTimeout, attempts
	p.RetryBackoff = nil
	for d := backoff; len(p.RetryBackoff) < max(attempts-1, 1); d *= 2 {
		p.RetryBackoff = append(p.RetryBackoff, d)
	}
	return p
}

// mqttRequester connects a requester configured by rc to the broker, under
// the topic root root, keeping its handover routes in routesFile (default:
// defaultRoutesPath).
func mqttRequester(ctx context.Context, conn a2amqtt.Connection, root mqttbind.Root, org, unit, as, routesFile string, rc requester.Config) (*requester.Client, error) {
	if routesFile == "" {
		p, err := defaultRoutesPath()
		if err != nil {
			return nil, fail(exitFailed, "%v", err)
		}
		routesFile = p
	}
	rc.Routes = fileRoutes{routesFile}
	c, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: conn, Root: root, Org: org, Unit: unit, ID: as, Requester: rc})
	if err != nil {
		return nil, withRootHint(brokerError(err, conn, org+"/"+unit+"/"+as), err, root)
	}
	return c.Client, nil
}

// httpRequester resolves the agent at rawURL (through its card, or as the
// JSON-RPC endpoint itself) and returns a requester bound to it and the
// endpoint it posts to.
func httpRequester(ctx context.Context, rawURL string, hc *http.Client, log *slog.Logger) (*requester.Client, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fail(exitUsage, "--url: %q is not an http:// or https:// URL", rawURL)
	}
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: rawURL, HTTPClient: hc, Requester: requester.Config{Logger: log}})
	var oe *net.OpError
	switch {
	case errors.As(err, &oe):
		return nil, "", fail(exitUnreachable, "agent %s unreachable: %v", rawURL, oe)
	case err != nil:
		return nil, "", fail(exitFailed, "no A2A agent at %s: %v", rawURL, err)
	}
	return c.Client, c.Endpoint(), nil
}

// converse sends one message through c, over either transport, and prints
// the replies: exit status 0 when the task ends COMPLETED, INPUT_REQUIRED
// or AUTH_REQUIRED (or the agent answers with a message), exitQueued when
// an asleep agent queued the message, 1 when it ended otherwise; sendError
// says which for a send that got no task. endpoint is the HTTP
// endpoint posted to ("" over MQTT), for messages.
func converse(ctx context.Context, c *requester.Client, req *a2a.SendMessageRequest, opts []requester.CallOption, stream bool, p *printer, endpoint string) error {
	var final *a2a.Task
	if stream {
		for it, err := range c.SendStreamingMessage(ctx, req, opts...) {
			if err != nil {
				return p.failed(err, endpoint)
			}
			p.item(it)
			final = p.apply(final, it)
		}
	} else {
		res, err := c.SendMessage(ctx, req, opts...)
		if err != nil {
			return p.failed(err, endpoint)
		}
		if res.Message != nil {
			p.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: res.Message}, Responder: res.Responder})
			return nil
		}
		p.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: res.Task}, Responder: res.Responder})
		final = res.Task
	}
	if final == nil || final.Status == nil {
		return fail(exitFailed, "no task state received")
	}
	if p.report != nil {
		p.report(ctx, p, final)
	}
	p.summary(final)
	if doneState(final.Status.State) {
		return nil
	}
	return taskEnded(final, "ended")
}

// doneState reports whether a send that leaves its task in state s
// succeeded: COMPLETED, or waiting for the requester (INPUT_REQUIRED,
// AUTH_REQUIRED).
func doneState(s a2a.TaskState) bool {
	switch s {
	case a2a.TaskStateCompleted, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		return true
	}
	return false
}

// taskEnded is the exit error of a task that ended in another state than
// doneState's: exit status 1, token task_failed, task_rejected, ...
func taskEnded(t *a2a.Task, verb string) error {
	state := string(t.Status.State)
	token := "task_" + strings.ToLower(strings.TrimPrefix(state, "TASK_STATE_"))
	return failToken(exitFailed, token, "task %s %s %s", t.ID, verb, state)
}

// getTask prints a task read with GetTask and exits as a send that got it
// would: 0 when it is COMPLETED, INPUT_REQUIRED or AUTH_REQUIRED,
// exitQueued while it is still SUBMITTED (queued), 1 otherwise.
func getTask(ctx context.Context, c *requester.Client, id string, opts []requester.CallOption, p *printer, endpoint string) error {
	t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id}, opts...)
	if err != nil {
		return p.sendError(err, endpoint)
	}
	p.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: t}})
	p.summary(t)
	switch {
	case doneState(t.Status.State):
		return nil
	case t.Status.State == a2a.TaskStateSubmitted:
		return &exitError{code: exitQueued}
	}
	return taskEnded(t, "is")
}

// sendError is the one-line message of a failed send; endpoint is the HTTP
// endpoint posted to ("" over MQTT). An error the agent answered exits 1
// with its token; no reply after every attempt (requester.ErrUnreachable),
// or no connection, exits 3, unless the broker refused (exit 1).
func sendError(err error, endpoint string) error {
	var e *a2a.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &e):
		return a2aFailure(e)
	case a2amqtt.IsRefusal(err):
		return fail(exitFailed, "%v", err)
	case errors.Is(err, requester.ErrUnreachable):
		return fail(exitUnreachable, "%v", err)
	case errors.Is(err, a2amqtt.ErrBrokerUnreachable), endpoint != "" && errors.As(err, &oe):
		return fail(exitUnreachable, "%v", err)
	}
	var se *a2ahttp.StatusError
	if errors.As(err, &se) {
		return fail(exitFailed, "%s answered %s, not A2A JSON-RPC (give the agent's base URL or its JSON-RPC endpoint): %v", endpoint, se.Status, err)
	}
	return fail(exitFailed, "%v", err)
}

// sendError is the package's sendError, with a hint when err is the
// broker's refusal of topics under a root beginning with $ (over MQTT).
func (p *printer) sendError(err error, endpoint string) error {
	return withRootHint(sendError(err, endpoint), err, p.root)
}

// failed reports a send that got no task: a message the agent queued is
// printed, with exit status exitQueued; anything else is sendError's.
func (p *printer) failed(err error, endpoint string) error {
	var q *requester.Queued
	if !errors.As(err, &q) {
		return p.sendError(err, endpoint)
	}
	p.progress.clear()
	if p.json {
		line := struct {
			Queued        bool   `json:"queued"`
			TaskID        string `json:"taskId,omitempty"`
			ContextID     string `json:"contextId,omitempty"`
			RetryAfterSec *int64 `json:"retryAfterSec,omitempty"`
		}{Queued: true, TaskID: q.TaskID, ContextID: q.ContextID}
		if q.HasRetryAfter {
			s := int64(q.RetryAfter / time.Second)
			line.RetryAfterSec = &s
		}
		b, _ := json.Marshal(line)
		fmt.Fprintln(p.w, string(b))
	} else {
		msg := "queued"
		if q.TaskID != "" {
			msg += " as task " + q.TaskID
		}
		if q.HasRetryAfter {
			msg += fmt.Sprintf(", retry after %d s", int64(q.RetryAfter/time.Second))
		}
		fmt.Fprintln(p.w, msg)
	}
	return &exitError{code: exitQueued}
}

// printer writes replies for people or as JSON lines.
type printer struct {
	w    io.Writer
	json bool
	// report, when set, prints what became of the send's push
	// notifications before the summary (pushReporter).
	report func(ctx context.Context, p *printer, task *a2a.Task)
	// root is the topic root of a send over MQTT (the zero Root over
	// HTTP), for the hint of a refusal (withRootHint).
	root mqttbind.Root
	// progress, when set, is cleared off the terminal before each line.
	progress *progress
}

func (p *printer) item(it requester.Item) {
	p.progress.clear()
	if p.json {
		raw, _ := it.StreamResponse.MarshalJSON()
		b, _ := json.Marshal(struct {
			Responder string          `json:"responder,omitempty"`
			Item      json.RawMessage `json:"item"`
		}{it.Responder, raw})
		fmt.Fprintln(p.w, string(b))
		return
	}
	if it.Responder != "" {
		fmt.Fprintf(p.w, "responder   %s\n", it.Responder)
	}
	switch x := it.Payload.(type) {
	case *a2a.Task:
		fmt.Fprintf(p.w, "task        %s  context %s  %s\n", x.ID, x.ContextID, demo.StateOf(x.Status))
		for _, a := range x.Artifacts {
			fmt.Fprintf(p.w, "artifact    %s: %s\n", a.ArtifactID, demo.PartsText(a.Parts))
		}
		if x.Status != nil && x.Status.Message != nil {
			fmt.Fprintf(p.w, "message     %s\n", agent.TextOf(x.Status.Message))
		}
	case *a2a.TaskStatusUpdateEvent:
		line := demo.StateOf(x.Status)
		if x.Status != nil && x.Status.Message != nil {
			line += ": " + agent.TextOf(x.Status.Message)
		}
		fmt.Fprintf(p.w, "status      %s\n", line)
	case *a2a.TaskArtifactUpdateEvent:
		verb := "artifact"
		if x.Append {
			verb = "artifact+"
		}
		fmt.Fprintf(p.w, "%-11s %s: %s\n", verb, x.Artifact.ArtifactID, demo.PartsText(x.Artifact.Parts))
	case *a2a.Message:
		fmt.Fprintf(p.w, "message     %s\n", agent.TextOf(x))
	}
}

// apply follows the task's state through a stream.
func (p *printer) apply(t *a2a.Task, it requester.Item) *a2a.Task {
	switch x := it.Payload.(type) {
	case *a2a.Task:
		return x
	case *a2a.TaskStatusUpdateEvent:
		if t == nil {
			t = &a2a.Task{ID: x.TaskID, ContextID: x.ContextID}
		}
		t.Status = x.Status
	}
	return t
}

// summary prints the task's last state, and how to go on: a task waiting
// for the requester (INPUT_REQUIRED, AUTH_REQUIRED) is resumed with its
// --task and --context; after a COMPLETED one, a next turn in the same
// conversation gives --context alone (a new task). A task that ended
// otherwise takes no follow-up (the agent would answer -32004).
func (p *printer) summary(t *a2a.Task) {
	p.progress.clear()
	if p.json {
		b, _ := json.Marshal(map[string]string{"taskId": t.ID, "contextId": t.ContextID, "state": string(t.Status.State)})
		fmt.Fprintln(p.w, string(b))
		return
	}
	fmt.Fprintf(p.w, "ended       %s\n", t.Status.State)
	switch t.Status.State {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		fmt.Fprintf(p.w, "follow up   --task %s --context %s\n", t.ID, t.ContextID)
	case a2a.TaskStateCompleted:
		if t.ContextID != "" {
			fmt.Fprintf(p.w, "next turn   --context %s\n", t.ContextID)
		}
	}
}
