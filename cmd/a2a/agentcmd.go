package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/mqttbind"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

const agentHelp = `
Transports: --broker serves the agent over MQTT, --http over HTTP (the A2A
JSON-RPC binding: the endpoint at /a2a, the card at
/.well-known/agent-card.json), both flags both at once. Served over both,
the agent has one task store, one card and one runtime: a task started over
one transport can be continued over the other. The card lists the MQTT
interface first (it carries presence, pools and handover), then the HTTP
one.

The endpoint URL in the card is http://ADDR/a2a, with 127.0.0.1 when ADDR's
host is empty, 0.0.0.0 or :: (reachable from this machine only); set
--http-url for the URL other machines use. --http 127.0.0.1:0 picks a free
port; the URL printed at start names it.

Handover: over MQTT "handover" hands the task to the spawned instance
ID-c1, and follow-ups go there. HTTP has no handover (no reply can name a
new responder), so a "handover" sent over HTTP is kept: the agent asks the
same question itself, and the follow-up to the same URL completes it.

Push notifications (A2A v1.0 §4.3; docs/protocol.md §8.8): with --http
the agent serves them and its card declares capabilities.pushNotifications;
--push=false turns them off. Over MQTT alone they are off unless --push is
given (the webhooks are HTTP all the same). A requester registers a webhook
with its message (a2a send --webhook URL) or with the push-notification
config methods; the agent POSTs each status and artifact update of the task
to it, retries 5xx answers and failed connections, and shows what became of
the webhook in the task's metadata (GetTask): delivered, failing, dead or
refused. Webhooks must be https URLs on public addresses. Webhooks on
loopback addresses (http or https) are taken only when the agent's HTTP
listener is itself on a loopback address (--http 127.0.0.1:PORT), or with
--allow-loopback-webhooks; private addresses are always refused (A2A v1.0
§13.2). a2a webhook --listen ADDR receives and prints pushes.

Task store: --store memory (the default, unless $A2A_STORE names another;
--store and --data take precedence over it) keeps tasks in this process:
they are lost when it stops. --store bolt:///ABSOLUTE/PATH or
bolt://RELATIVE/PATH keeps them in that bbolt file, which one agent at a
time may open (--data DIR is bolt://DIR/tasks.db; --store and --data
together are a usage error). --store postgres://USER@HOST/DB (or
postgresql://; ?search_path=SCHEMA for a schema of its own) keeps them in
PostgreSQL, which several agents may share. The database's task store
schema must be the version this a2a knows: an older one (a new database) is
refused, exit 1, unless --migrate applies the migrations at start (or a2a
db migrate before it); a newer one is always refused. Leave the password
out of the URL (it shows in ps and stays in the shell's history: a2a
warns): $PGPASSWORD, or the password file ~/.pgpass ($PGPASSFILE), as libpq
reads them. A connection attempt gives up after 10 s unless the URL sets
connect_timeout. Every store has the same bounds (10,000 tasks, 64 MiB:
docs/protocol.md §14). The store is printed at start, a password in it as
xxxxx.

Bearer tokens: without --tokens the agent accepts every call. With
--tokens FILE it accepts only the tokens the file lists, over both
transports, and its card requires a bearer token. The file has one token
per line, "TOKEN [SUBJECT]" or "sha256:HEX [SUBJECT]" (HEX: the SHA-256 of
the token, printf %s "$TOKEN" | sha256sum, so the file need not hold it in
clear); SUBJECT names the caller; blank lines and lines starting with #
are skipped. It is read once, at start.

Broker credentials: --username (or $A2A_USERNAME) and --password-file FILE
(its first line; or $A2A_PASSWORD), or in the broker URL,
mqtt://USER:PASSWORD@host:port (percent-encoded; a password there shows in
ps and the shell's history: a2a warns), a flag taking precedence over the
URL, the URL over the environment (a user name or password in a flag and
in the URL that differ is a usage error); the card lists the broker URL
without them. For TLS an mqtts:// broker URL, with --ca-file for a
private authority and --cert-file and --key-file for a client
certificate. Both connections, ID and ID-c1, use them, unless
--spawned-password-file is given.

The agent is two MQTT clients, ORG/UNIT/ID and ORG/UNIT/ID-c1. A broker
with a password file (a2a broker --password-file, mosquitto with
use_username_as_clientid) admits a user only under its own Client ID, its
user name: log the agent in as ORG/UNIT/ID and give ID-c1 a user of its
own, ORG/UNIT/ID-c1, with --spawned-password-file FILE (and
--spawned-username if its name differs). On the embedded broker an ACL file
line "clientid ORG/UNIT/ID-c1" under the agent's user lets ID-c1 share the
agent's credentials instead (docs/protocol.md §13.3; mosquitto has no such
line: it would replace ID-c1's Client ID by the user name, and the two
connections would take each other's session over).

Logs: one line per request on stderr, at info: the agent (ID or ID-c1),
the method, the task, the state the answer left it in (or the error
token) and how long it took; never a token. Warnings and errors follow;
--log-level sets one level for everything. When the broker connection is
lost the agent prints "broker lost: BROKER: why; reconnecting" on stdout,
and "broker back: BROKER" once it is connected and announced again.

--json: stdout holds one JSON object per line instead of the text lines,
each with "event" and "agent" (as the text line names it), and the
request log moves there from stderr (warnings stay on stderr):
  {"event":"store","store":URL}       {"event":"tokens","tokens":N,"file":F}
  {"event":"listening","address":A,"endpoint":URL,"card":URL}
  {"event":"push","loopback":true}    {"event":"migrated","component":C,"from":N,"to":M}
  {"event":"online","broker":B,"spawned":"ORG/UNIT/ID-c1"}
  {"event":"queue","mode":M,"queue":Q,"maxMessages":N,"maxBytes":N,"maxPerCaller":N,"keptSeconds":S[,"recovery":TEXT]}
  {"event":"awake"} {"event":"asleep"}
  {"event":"broker","broker":B,"connection":"lost","reason":WHY}  {"event":"broker","broker":B,"connection":"back"}
  {"event":"request","agent":"ID"|"ID-c1","method":M,"task":T,"state":S|"error":TOKEN,"durationMs":F}
  {"event":"offline"}
(members without a value are left out). Never a token.
`

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent", "(--broker URL --org O --unit U | --http ADDR) --id ID [--pool P] [--keepalive SECONDS] [--http-url URL] [--store URL [--migrate] | --data DIR] [--secrets-key-file F] [--tokens FILE] [--push=false | --push [--allow-loopback-webhooks]] [--reachability MODE [--window P:O:L] [--queue-dir DIR | --queue URL]] [--username U --password-file F [--spawned-password-file F]] [--ca-file F] [--cert-file F --key-file F] [--topic-root ROOT] [--log-level L] [--json]",
		"a2a agent --broker mqtt://127.0.0.1:1883 --org acme --unit lab --id echo\n  a2a agent --http 127.0.0.1:8080 --id echo\n  a2a agent --http 127.0.0.1:8080 --id echo --store postgres://agent@db.example:5432/a2a --migrate", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		io.WriteString(fs.Output(), agentHelp+reachabilityHelp+jsonHelp+"\n"+envHelp+"\n"+exitCodesHelp)
	}
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS) (default, without --http: $"+envBroker+", else "+defaultBroker+")")
	httpAddr := fs.String("http", "", "serve over HTTP on this TCP address (host:port)")
	httpURL := fs.String("http-url", "", "the JSON-RPC endpoint URL the card lists (default http://ADDR/a2a)")
	org := fs.String("org", "", "org_id (MQTT; default $"+envOrg+")")
	unit := fs.String("unit", "", "unit_id (MQTT; default $"+envUnit+")")
	id := fs.String("id", "", "agent_id, and the card's name")
	pool := fs.String("pool", "", "also serve this shared pool (MQTT)")
	keepalive := fs.Int("keepalive", 30, "MQTT keep-alive in seconds; a crashed agent's Will fires about 1.5 x this later")
	data := fs.String("data", "", "keep tasks in a bbolt database in this directory, DIR/tasks.db, as --store bolt://DIR/tasks.db does (default: in memory); the offline queue's directory too unless --queue-dir")
	sf := addStoreFlags(fs)
	tokensFile := fs.String("tokens", "", "accept only the bearer tokens listed in this file (default: accept every call)")
	push := fs.Bool("push", false, "serve push notifications to webhooks (default: on with --http, off over MQTT alone)")
	allowLoopback := fs.Bool("allow-loopback-webhooks", false, "deliver push notifications to webhooks on loopback addresses (default: only when the --http address is a loopback one)")
	rf := addReachFlags(fs)
	cf := addConnFlags(fs)
	// An agent gives its broker the library's default time.
	ct := fs.Lookup("connect-timeout")
	ct.Value.Set("10s")
	ct.DefValue = "10s"
	rootf := addRootFlag(fs)
	spawnedUser := fs.String("spawned-username", "", "MQTT user name of the spawned instance ID-c1 (with --spawned-password-file; default ORG/UNIT/ID-c1)")
	spawnedPasswordFile := fs.String("spawned-password-file", "", "log the spawned instance ID-c1 in as a user of its own, with the password on this file's first line (default: the agent's credentials)")
	logLevel := fs.String("log-level", "", "log on stderr at this level and above: debug, info, warn or error (default: one info line per request, and warnings; secrets are never logged)")
	asJSON := fs.Bool("json", false, "print one JSON object per line on stdout: each event (online, offline, broker lost and back, ...) and each request, instead of the text lines and the request log (see below); errors as {\"error\":{...}}")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if *httpAddr == "" {
		*brokerURL, cf.brokerFrom = brokerOf(fs, *brokerURL)
	}
	if *id == "" {
		return fail(exitUsage, "--id is required")
	}
	ids := []string{"id", *id}
	if *brokerURL != "" {
		orgUnitFromEnv(org, unit)
		if err := needOrgUnit(*org, *unit); err != nil {
			return err
		}
		ids = append(ids, "org", *org, "unit", *unit)
	} else if err := onlyWith(fs, "--broker", append(append([]string{"org", "unit", "pool", "keepalive", "spawned-username", "spawned-password-file", "topic-root"}, credentialFlags...), tlsFlags...)...); err != nil {
		return err
	}
	if *spawnedUser != "" && *spawnedPasswordFile == "" {
		return fail(exitUsage, "--spawned-username goes with --spawned-password-file")
	}
	if err := checkIDs(ids...); err != nil {
		return err
	}
	if *pool != "" {
		if err := checkIDs("pool", *pool); err != nil {
			return err
		}
	}
	if *httpURL != "" {
		if *httpAddr == "" {
			return fail(exitUsage, "--http-url goes with --http")
		}
		if u, err := url.Parse(*httpURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail(exitUsage, "--http-url: %q is not an http:// or https:// URL", *httpURL)
		}
	}
	pushOn, err := pushFlag(fs, *push, *allowLoopback, *httpAddr)
	if err != nil {
		return err
	}
	*push = pushOn
	reachability, err := rf.config(fs, *id, *data)
	if err != nil {
		return err
	}
	storeAt, err := sf.spec(*data, rf.pgQueue != nil, stderr)
	if err != nil {
		return err
	}
	if q := rf.pgQueue; q != nil && q.from == "--queue" && len(q.secrets) > 0 {
		warnPasswordIn(stderr, fs.Name(), "the --queue DSN", storePasswordHelp)
	}
	out := &lineOut{w: stdout, json: *asJSON}
	// By default the requests are logged at info, the rest at warn; with
	// --json they are printed on stdout instead.
	log, requests := (*slog.Logger)(nil), (*slog.Logger)(nil)
	if *logLevel == "" {
		log, _ = logger(stderr, "warn")
		requests, _ = logger(stderr, "info")
	} else if log, err = logger(stderr, *logLevel); err != nil {
		return err
	} else {
		requests = log
	}
	var onRequest func(context.Context, string, agent.CallRecord)
	if *asJSON {
		requests, onRequest = nil, func(_ context.Context, id string, r agent.CallRecord) { out.emit("", requestEvent(id, r)) }
	}
	migrated := func(component string, from, to int) {
		out.emit(fmt.Sprintf("agent %s: schema %s: version %d -> %d", *id, component, from, to),
			agentEvent{Event: "migrated", Agent: *id, Component: component, From: from, To: to})
	}
	var conn a2amqtt.Connection
	var spawnedPassword []byte
	var root mqttbind.Root
	if *brokerURL != "" {
		if root, err = rootf.root(stderr); err != nil {
			return err
		}
		if conn, err = cf.connection(*brokerURL, stderr); err != nil {
			return err
		}
		if *spawnedPasswordFile != "" {
			if spawnedPassword, err = firstLine("spawned-password-file", *spawnedPasswordFile); err != nil {
				return err
			}
			if *spawnedUser == "" {
				*spawnedUser = *org + "/" + *unit + "/" + *id + "-c1"
			}
		}
	}
	var verifier agent.Verifier
	accepted := 0
	if *tokensFile != "" {
		tokens, err := refagent.LoadTokens(*tokensFile)
		if err != nil {
			return fail(exitFailed, "--tokens: %v", err)
		}
		verifier, accepted = tokens, tokens.Len()
	}
	// The store opens before anything is served: a database that cannot
	// be used stops the agent before it is seen online.
	keys, err := sf.keys(log)
	if err != nil {
		return err
	}
	if reachability != nil {
		reachability.QueueKeys = keys
	}
	store, err := storeAt.open(ctx, *sf.migrate, keys, migrated)
	if err != nil {
		return err
	}
	// closeStores closes what Start has not taken over yet.
	closeStores := func() {
		if store != nil {
			store.Close()
		}
		if reachability != nil && reachability.Queue != nil {
			reachability.Queue.Close()
		}
	}
	if rf.pgQueue != nil {
		q, err := openQueue(ctx, *rf.pgQueue, *sf.migrate, keys, migrated, log)
		if err != nil {
			closeStores()
			return err
		}
		reachability.Queue = q
	}
	var ln net.Listener
	if *httpAddr != "" {
		var err error
		if ln, err = net.Listen("tcp", *httpAddr); err != nil {
			closeStores()
			return fail(exitFailed, "--http: %v", err)
		}
		// Webhooks on loopback are this machine's: fine for an agent
		// that only this machine reaches.
		*allowLoopback = *allowLoopback || onLoopback(ln.Addr())
	}
	// conn.Broker is the URL without its userinfo: the card lists it.
	ra, err := refagent.Start(ctx, refagent.Config{Broker: conn.Broker, Root: root, Org: *org, Unit: *unit, ID: *id, Pool: *pool,
		KeepAlive: time.Duration(*keepalive) * time.Second, ConnectTimeout: conn.ConnectTimeout, TLS: conn.TLS, Username: conn.Username, Password: conn.Password,
		SpawnedUsername: *spawnedUser, SpawnedPassword: spawnedPassword,
		HTTP: ln, HTTPURL: *httpURL, Store: store, Log: log, Requests: requests, OnRequest: onRequest, Verifier: verifier, Reachability: reachability,
		Push: *push, AllowLoopbackWebhooks: *push && *allowLoopback, OnBroker: brokerNews(out, conn.Broker)})
	if err != nil {
		if *brokerURL != "" {
			return withRootHint(agentBrokerError(err, conn, *org+"/"+*unit+"/"+*id, *spawnedUser), err, root)
		}
		return fail(exitFailed, "%v", err)
	}
	// The wake signals are heard before anything is printed: a script
	// that signals once it reads the start lines is not ignored.
	stopSignals := wakeOnSignals(ra.Offline(), func(awake bool) {
		state := map[bool]string{true: "awake", false: "asleep"}[awake]
		out.emit("agent "+state, agentEvent{Event: state, Agent: *id})
	})
	defer stopSignals()
	name := *id
	if *brokerURL != "" {
		name = *org + "/" + *unit + "/" + *id
	}
	if storeAt.kind != storeMemory {
		out.emit(fmt.Sprintf("agent %s keeps its tasks in %s", *id, storeAt.shown), agentEvent{Event: "store", Agent: *id, Store: storeAt.shown})
	}
	if verifier != nil {
		out.emit(fmt.Sprintf("agent %s requires a bearer token: %d accepted, from %s", *id, accepted, *tokensFile),
			agentEvent{Event: "tokens", Agent: *id, Tokens: accepted, File: *tokensFile})
	}
	if ln != nil {
		out.emit(fmt.Sprintf("agent %s listening on %s: JSON-RPC at %s, card at %s", *id, ln.Addr(), ra.HTTPURL(), cardURL(ra.HTTPURL())),
			agentEvent{Event: "listening", Agent: *id, Address: ln.Addr().String(), Endpoint: ra.HTTPURL(), Card: cardURL(ra.HTTPURL())})
	}
	if *push {
		to := "https webhooks"
		if *allowLoopback {
			to += " and webhooks on loopback addresses"
		}
		out.emit(fmt.Sprintf("agent %s sends push notifications to %s", *id, to), agentEvent{Event: "push", Agent: *id, Loopback: *allowLoopback})
	}
	if *brokerURL != "" {
		out.emit(fmt.Sprintf("agent %s online (spawned instance %s-c1 serves handed-over tasks)", name, *id),
			agentEvent{Event: "online", Agent: name, Broker: conn.Broker, Spawned: name + "-c1"})
	}
	if reachability != nil {
		reportQueue(out, *id, ra, reachability, rf.pgQueue)
	}
	var stopped error
	select {
	case <-ctx.Done():
	case <-ra.Stopped():
		stopped = withRootHint(refusedForGood("agent", ra.StopErr()), ra.StopErr(), root)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ra.Close(closeCtx); err != nil && stopped == nil {
		return fail(exitFailed, "stopping: %v", err)
	}
	if stopped != nil {
		return stopped
	}
	out.emit(fmt.Sprintf("agent %s offline", name), agentEvent{Event: "offline", Agent: name})
	return nil
}

// agentEvent is one line of a2a agent --json (agentHelp lists them): the
// event, the agent it is about (as the text line names it), and the
// members of that event.
type agentEvent struct {
	Event string `json:"event"`
	Agent string `json:"agent,omitempty"`
	// store: where the tasks are kept, its password shown as xxxxx.
	Store string `json:"store,omitempty"`
	// tokens: how many bearer tokens are accepted, from which file.
	Tokens int    `json:"tokens,omitempty"`
	File   string `json:"file,omitempty"`
	// listening: the HTTP address, the JSON-RPC endpoint, the card's URL.
	Address  string `json:"address,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Card     string `json:"card,omitempty"`
	// push: webhooks on loopback addresses are taken too.
	Loopback bool `json:"loopback,omitempty"`
	// online, broker: the broker (without credentials); online: the
	// spawned instance; broker: "lost" or "back", and why it was lost.
	Broker     string `json:"broker,omitempty"`
	Spawned    string `json:"spawned,omitempty"`
	Connection string `json:"connection,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// migrated: a schema migration applied at start (--migrate).
	Component string `json:"component,omitempty"`
	From      int    `json:"from,omitempty"`
	To        int    `json:"to,omitempty"`
	// queue: the reachability mode and the offline queue, its bounds, and
	// what a damaged queue file lost (recovery).
	Mode         string  `json:"mode,omitempty"`
	Queue        string  `json:"queue,omitempty"`
	MaxMessages  int     `json:"maxMessages,omitempty"`
	MaxBytes     int64   `json:"maxBytes,omitempty"`
	MaxPerCaller int     `json:"maxPerCaller,omitempty"`
	KeptSeconds  float64 `json:"keptSeconds,omitempty"`
	Recovery     string  `json:"recovery,omitempty"`
	// request: the method, the task, the state the answer left it in or
	// the error token, how long it took. Never the token.
	Method     string   `json:"method,omitempty"`
	Task       string   `json:"task,omitempty"`
	State      string   `json:"state,omitempty"`
	Error      string   `json:"error,omitempty"`
	DurationMs *float64 `json:"durationMs,omitempty"`
}

// requestEvent is the --json line of a request agent id answered.
func requestEvent(id string, r agent.CallRecord) agentEvent {
	ms := millis(r.Duration)
	return agentEvent{Event: "request", Agent: id, Method: string(r.Method), Task: r.TaskID, State: string(r.State), Error: string(r.Error), DurationMs: &ms}
}

// agentBrokerError is brokerError for the agent's two connections: the
// agent's own, and the spawned instance's (ORG/UNIT/ID-c1), which the
// agent's user logs in too unless spawnedUser is set. The spawned instance
// connects first, so a refusal naming no other cause is likely its.
func agentBrokerError(err error, conn a2amqtt.Connection, clientID, spawnedUser string) error {
	ids := []string{clientID}
	if spawnedUser == "" {
		ids = append(ids, clientID+"-c1")
	}
	e := brokerError(err, conn, ids...)
	var ee *exitError
	if spawnedUser == "" && conn.Username == clientID && errors.As(e, &ee) && strings.Contains(ee.msg, "is not the user name") {
		ee.msg += "; give the spawned instance a user of its own with --spawned-password-file (see a2a agent -h)"
	}
	return e
}

// cardURL is the Agent Card's URL at the root of an endpoint URL's server.
func cardURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return a2ahttp.WellKnownCardPath
	}
	u.Path, u.RawQuery, u.Fragment = a2ahttp.WellKnownCardPath, "", ""
	return u.String()
}

// onlyWith refuses the named flags when they were set without the
// transport flag they belong to (need, for the message).
func onlyWith(fs *flag.FlagSet, need string, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n && err == nil {
				err = fail(exitUsage, "--%s goes with %s", n, need)
			}
		}
	})
	return err
}

// brokerNews prints one line when the agent's connection to broker is
// lost, and one when it is back ("broker lost: ...", "broker back: ...";
// with --json {"event":"broker","connection":"lost"|"back",...}).
func brokerNews(out *lineOut, broker string) func(up bool, err error) {
	return func(up bool, err error) {
		switch {
		case up:
			out.emit("broker back: "+broker, agentEvent{Event: "broker", Broker: broker, Connection: "back"})
		case err != nil:
			out.emit(fmt.Sprintf("broker lost: %s: %v; reconnecting", broker, err), agentEvent{Event: "broker", Broker: broker, Connection: "lost", Reason: err.Error()})
		default:
			out.emit(fmt.Sprintf("broker lost: %s; reconnecting", broker), agentEvent{Event: "broker", Broker: broker, Connection: "lost"})
		}
	}
}
