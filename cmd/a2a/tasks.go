package main

// The rest of the protocol from the shell: a2a get, cancel, list and
// resubscribe, over MQTT (--to ID) or HTTP (--url), and what they share
// with a2a chat: how they reach one agent.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
)

// targetHelp documents how the task commands reach their agent.
const targetHelp = `
The agent: over MQTT --to ID on --broker (default $A2A_BROKER, else
mqtt://localhost:1883) under --org and --unit (default: from a user name
ORG/UNIT/ID, else $A2A_ORG and $A2A_UNIT); over HTTP --url URL (its base
URL, its card's URL or its JSON-RPC endpoint; $A2A_URL when neither
--broker nor --to is given). Credentials and TLS as for a2a send (a2a send
-h): --token-file FILE or $A2A_TOKEN for the bearer token, --username and
--password-file for the broker, --ca-file, --cert-file, --key-file.
Over MQTT a task handed over to another agent (a2a send "handover") is
followed there, as a2a send follows it (--routes).
`

// targetFlags are the flags of the commands that talk to one agent: a2a
// get, cancel, list, resubscribe and chat.
type targetFlags struct {
	fs                                         *flag.FlagSet
	broker, url, org, unit, to, as, routesFile *string
	tokens                                     *tokenFlags
	cf                                         *connFlags
	rootf                                      *rootFlag
	timeout                                    *time.Duration
	asJSON                                     *bool
	logLevel                                   *string
}

func addTargetFlags(fs *flag.FlagSet, timeoutHelp string) *targetFlags {
	t := &targetFlags{fs: fs,
		broker:     fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS) (default: $"+envBroker+", else "+defaultBroker+")"),
		url:        fs.String("url", "", "talk to the agent over HTTP at this URL: its base URL, its card's URL or its JSON-RPC endpoint (default: $"+envURL+" when neither --broker nor --to is given)"),
		org:        fs.String("org", "", "org_id (MQTT; default: ORG of a user name ORG/UNIT/ID, else $"+envOrg+")"),
		unit:       fs.String("unit", "", "unit_id (MQTT; default: UNIT of a user name ORG/UNIT/ID, else $"+envUnit+")"),
		to:         fs.String("to", "", "agent_id of the agent (MQTT)"),
		as:         fs.String("as", "", "the requester's own agent_id (MQTT; default: ID of a user name ORG/UNIT/ID, else "+fs.Name()[len("a2a "):]+"-<random>)"),
		routesFile: fs.String("routes", "", "handover routing state file (MQTT; default: $XDG_STATE_HOME/a2a/routes.json)"),
		timeout:    fs.Duration("timeout", 60*time.Second, timeoutHelp),
		asJSON:     fs.Bool("json", false, "print one JSON object per line, errors included ({\"error\":{\"token\",\"code\",\"message\"}})"),
	}
	t.tokens = addTokenFlags(fs)
	t.cf = addConnFlags(fs)
	t.rootf = addRootFlag(fs)
	t.logLevel = addLogLevel(fs, slog.LevelError)
	return t
}

// peer is a requester bound to one agent.
type peer struct {
	c    *requester.Client
	opts []requester.CallOption
	// endpoint is the HTTP endpoint posted to ("" over MQTT); name names
	// the agent in messages (ORG/UNIT/ID or the URL).
	endpoint, name string
	// overMQTT says which transport; root is the MQTT topic root.
	overMQTT bool
	root     mqttbind.Root
}

// close disconnects the requester.
func (p *peer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.c.Close(ctx)
}

// sendError is the exit error of a failed call.
func (p *peer) sendError(err error) error {
	e := withRootHint(sendError(err, p.endpoint), err, p.root)
	if ee, ok := e.(*exitError); ok && ee.code == exitUnreachable && p.overMQTT && strings.HasPrefix(ee.msg, requester.ErrUnreachable.Error()) {
		ee.msg = p.name + " did not answer: " + ee.msg
	}
	return e
}

// dial checks the flags (after parse) and connects to the agent; the
// caller closes the peer.
func (t *targetFlags) dial(ctx context.Context, stderr io.Writer) (*peer, error) {
	fs := t.fs
	if *t.broker != "" && *t.url != "" {
		return nil, fail(exitUsage, "give exactly one of --url and --broker")
	}
	if *t.url == "" && !given(fs, "broker", "to") && os.Getenv(envURL) != "" {
		*t.url = os.Getenv(envURL)
	}
	if *t.timeout <= 0 {
		return nil, fail(exitUsage, "--timeout must be positive")
	}
	log, err := logger(stderr, *t.logLevel)
	if err != nil {
		return nil, err
	}
	bearer, err := t.tokens.bearer()
	if err != nil {
		return nil, err
	}
	p := &peer{}
	if bearer != "" {
		p.opts = append(p.opts, requester.WithBearer(bearer))
	}
	if *t.url != "" {
		if err := onlyWith(fs, "--broker", append([]string{"org", "unit", "to", "as", "routes", "topic-root", "connect-timeout"}, credentialFlags...)...); err != nil {
			return nil, err
		}
		if err := noUserinfo("url", *t.url); err != nil {
			return nil, err
		}
		hc, err := t.cf.httpClient(*t.url)
		if err != nil {
			return nil, err
		}
		if bearer != "" && plainRemote(*t.url) {
			fmt.Fprintf(stderr, "%s: warning: the bearer token crosses the network in clear (use an https:// URL)\n", fs.Name())
		}
		if p.c, p.endpoint, err = httpRequester(ctx, *t.url, hc, log); err != nil {
			return nil, err
		}
		p.name = *t.url
		return p, nil
	}
	if *t.to == "" {
		return nil, fail(exitUsage, "give --to ID (MQTT) or --url URL (HTTP)")
	}
	p.overMQTT = true
	*t.broker, t.cf.brokerFrom = brokerOf(fs, *t.broker)
	if err := t.cf.senderOrgUnit(*t.broker, t.org, t.unit, t.as); err != nil {
		return nil, err
	}
	if *t.as == "" {
		*t.as = fs.Name()[len("a2a "):] + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	}
	if err := checkIDs("org", *t.org, "unit", *t.unit, "to", *t.to, "as", *t.as); err != nil {
		return nil, err
	}
	if p.root, err = t.rootf.root(stderr); err != nil {
		return nil, err
	}
	conn, err := t.cf.connection(*t.broker, stderr)
	if err != nil {
		return nil, err
	}
	if (bearer != "" || conn.Password != nil) && plainRemote(*t.broker) {
		fmt.Fprintf(stderr, "%s: warning: credentials cross the network in clear (use an mqtts:// broker URL)\n", fs.Name())
	}
	p.c, err = mqttRequester(ctx, conn, p.root, *t.org, *t.unit, *t.as, *t.routesFile, requester.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	p.name = *t.org + "/" + *t.unit + "/" + *t.to
	p.opts = append(p.opts, requester.To(requester.Target{Agent: *t.to}))
	return p, nil
}

// overHTTP says whether the command talks HTTP: --url, or $A2A_URL
// when neither --broker nor --to is given.
func (t *targetFlags) overHTTP() bool {
	return *t.url != "" || (!given(t.fs, "broker", "to") && os.Getenv(envURL) != "")
}

// taskArg is the one TASK argument of get, cancel and resubscribe; over
// MQTT task ids are UUIDs (docs/protocol.md).
func (t *targetFlags) taskArg() (string, error) {
	switch t.fs.NArg() {
	case 0:
		return "", fail(exitUsage, "the TASK id is missing")
	case 1:
	default:
		return "", fail(exitUsage, "unexpected argument %q", t.fs.Arg(1))
	}
	id := t.fs.Arg(0)
	if !t.overHTTP() && !mqttbind.ValidUUID(id) {
		return "", fail(exitUsage, "TASK: %q is not a UUID (over MQTT task ids are UUIDs)", id)
	}
	return id, nil
}

// taskCommand is the frame of get, cancel and resubscribe: flags, the
// TASK argument, the connection, --timeout; run does the call.
func taskCommand(ctx context.Context, name, summary, example string, args []string, stdout, stderr io.Writer,
	extra func(fs *flag.FlagSet), run func(ctx context.Context, p *peer, task string, out *printer) error) error {
	fs := newFlags(name, "TASK ((--to ID [--broker URL] [--org O --unit U]) | --url URL) [--json] [--timeout D] [--token-file F] [flags of a2a send's connection]", example, stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		io.WriteString(fs.Output(), summary+"\n"+targetHelp+"\n"+envHelp+"\n"+exitCodesHelp)
	}
	t := addTargetFlags(fs, "give up after this long (exit status 4)")
	if extra != nil {
		extra(fs)
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	task, err := t.taskArg()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *t.timeout)
	defer cancel()
	p, err := t.dial(ctx, stderr)
	if err != nil {
		return timedOut(ctx, err, *t.timeout)
	}
	defer p.close()
	return timedOut(ctx, run(ctx, p, task, &printer{w: stdout, json: *t.asJSON, root: p.root}), *t.timeout)
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var history *int
	return taskCommand(ctx, "get", `
Reads task TASK with GetTask and prints it: its state, artifacts and
status message (--json: the task, then {"taskId","contextId","state"}).
Exit status 0 when the task was read, whatever its state; 1 when the agent
answered an error (task_not_found: an unknown task, one of another caller,
or one it dropped after its retention).`,
		"a2a get 3b0c5c46-3f0e-4d6a-9d57-6a3d2b0f6c11 --to echo\n  a2a get TASK --url http://127.0.0.1:8080 --json", args, stdout, stderr,
		func(fs *flag.FlagSet) {
			history = fs.Int("history", -1, "at most this many messages of the task's history (default: the agent's choice)")
		},
		func(ctx context.Context, p *peer, task string, out *printer) error {
			req := &a2a.GetTaskRequest{ID: task}
			if *history >= 0 {
				n := int32(*history)
				req.HistoryLength = &n
			}
			t, err := p.c.GetTask(ctx, req, p.opts...)
			if err != nil {
				return p.sendError(err)
			}
			out.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: t}})
			out.state(t)
			return nil
		})
}

func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return taskCommand(ctx, "cancel", `
Asks the agent to cancel task TASK (CancelTask) and prints the task as it
answers. Exit status 0 when the task is CANCELED; 1 when the agent
answered an error (task_not_cancelable: the task has already ended;
task_not_found) or left it in another state.`,
		"a2a cancel 3b0c5c46-3f0e-4d6a-9d57-6a3d2b0f6c11 --to echo", args, stdout, stderr, nil,
		func(ctx context.Context, p *peer, task string, out *printer) error {
			t, err := p.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task}, p.opts...)
			if err != nil {
				return p.sendError(err)
			}
			out.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: t}})
			out.state(t)
			if t.Status == nil || t.Status.State != a2a.TaskStateCanceled {
				return taskEnded(t, "is")
			}
			return nil
		})
}

func runResubscribe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return taskCommand(ctx, "resubscribe", `
Subscribes to task TASK (SubscribeToTask) and prints its events as they
come, from the task as it is now until it ends or waits for input
(--json: each event, then {"taskId","contextId","state"}). A task that
has already ended has no events to follow: the agent answers
unsupported_operation. Exit status as a2a send's: 0 when the task
completed or asks for input, 1 when it failed, was rejected or canceled,
or the agent answered an error.`,
		"a2a resubscribe 3b0c5c46-3f0e-4d6a-9d57-6a3d2b0f6c11 --to echo", args, stdout, stderr, nil,
		func(ctx context.Context, p *peer, task string, out *printer) error {
			var final *a2a.Task
			for it, err := range p.c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task}, p.opts...) {
				if err != nil {
					return p.sendError(err)
				}
				out.item(it)
				final = out.apply(final, it)
			}
			if final == nil || final.Status == nil {
				return fail(exitFailed, "no task state received")
			}
			out.state(final)
			if doneState(final.Status.State) {
				return nil
			}
			return taskEnded(final, "ended")
		})
}

// state prints a task's last state: "ended STATE" (--json: the object
// {"taskId","contextId","state"}).
func (p *printer) state(t *a2a.Task) {
	state := a2a.TaskState("")
	if t.Status != nil {
		state = t.Status.State
	}
	if p.json {
		b, _ := json.Marshal(map[string]string{"taskId": t.ID, "contextId": t.ContextID, "state": string(state)})
		fmt.Fprintln(p.w, string(b))
		return
	}
	fmt.Fprintf(p.w, "state       %s\n", state)
}

func runList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list", "((--to ID [--broker URL] [--org O --unit U]) | --url URL) [--context C] [--state S] [--page-size N] [--page-token T] [--json]",
		"a2a list --to echo\n  a2a list --url http://127.0.0.1:8080 --state input-required --json", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		io.WriteString(fs.Output(), `
Lists the agent's tasks (ListTasks), the most recently updated first, one
line each: its id, context, state and when its status last changed; with
more than a page, the last line gives the --page-token of the next
(--json: the agent's ListTasksResponse on one line). An agent that
requires a bearer token lists only the caller's tasks.
`+targetHelp+"\n"+envHelp+"\n"+exitCodesHelp)
	}
	t := addTargetFlags(fs, "give up after this long (exit status 4)")
	contextID := fs.String("context", "", "only the tasks of this contextId")
	state := fs.String("state", "", "only the tasks in this state: submitted, working, input-required, auth-required, completed, failed, canceled or rejected (or TASK_STATE_...)")
	pageSize := fs.Int("page-size", 0, "at most this many tasks (1-100; default: the agent's, 50)")
	pageToken := fs.String("page-token", "", "the page after the one that gave this token")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	req := &a2a.ListTasksRequest{ContextID: *contextID, PageToken: *pageToken}
	if *state != "" {
		s, ok := parseState(*state)
		if !ok {
			return fail(exitUsage, "--state: %q is not a task state (submitted, working, input-required, auth-required, completed, failed, canceled, rejected)", *state)
		}
		req.Status = s
	}
	if given(fs, "page-size") {
		if *pageSize < 1 || *pageSize > 100 {
			return fail(exitUsage, "--page-size must be between 1 and 100")
		}
		n := int32(*pageSize)
		req.PageSize = &n
	}
	ctx, cancel := context.WithTimeout(ctx, *t.timeout)
	defer cancel()
	p, err := t.dial(ctx, stderr)
	if err != nil {
		return timedOut(ctx, err, *t.timeout)
	}
	defer p.close()
	res, err := p.c.ListTasks(ctx, req, p.opts...)
	if err != nil {
		return timedOut(ctx, p.sendError(err), *t.timeout)
	}
	if *t.asJSON {
		b, err := res.MarshalJSON()
		if err != nil {
			return fail(exitFailed, "%v", err)
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tCONTEXT\tSTATE\tUPDATED")
	for _, task := range res.Tasks {
		st, at := "-", "-"
		if task.Status != nil {
			st = strings.TrimPrefix(string(task.Status.State), "TASK_STATE_")
			if task.Status.Timestamp != "" {
				at = task.Status.Timestamp
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", task.ID, task.ContextID, st, at)
	}
	tw.Flush()
	if res.NextPageToken != "" {
		fmt.Fprintf(stdout, "next page   --page-token %s\n", res.NextPageToken)
	}
	return nil
}

// parseState reads a task state as people write it (input-required,
// INPUT_REQUIRED) or as the wire does (TASK_STATE_INPUT_REQUIRED).
func parseState(s string) (a2a.TaskState, bool) {
	want := "TASK_STATE_" + strings.TrimPrefix(strings.ToUpper(strings.ReplaceAll(s, "-", "_")), "TASK_STATE_")
	for _, v := range a2a.TaskStateValues() {
		if string(v) == want && v != "TASK_STATE_UNSPECIFIED" {
			return v, true
		}
	}
	return "", false
}
