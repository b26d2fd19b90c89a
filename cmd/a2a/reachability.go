package main

import (
	"bufio"
	"crypto/ed25519"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/reach"
)

const reachabilityHelp = `
Reachability (docs/protocol.md §7): --reachability always_on (the default
without the flag: no reachability is published), session, hourly_wake or
sleep. hourly_wake accepts work inside its windows; --window
PERIOD:OFFSET:LENGTH (Go durations, whole seconds: 1h:12m:5m opens every
hour, 12 minutes past, for 5 minutes), by default a 5-minute window each
hour at a point picked from the agent id. sleep accepts nothing live until
woken. Both queue what they do not accept live in DIR/queue.db (--queue-dir,
default the --data directory), or in PostgreSQL with --queue
postgres://USER@HOST/DB (not both flags; $A2A_QUEUE when neither they nor
--data is given). Agents started with the same --queue (and the same
--store postgres://...) share the queue: each message is delivered by one
of them (in queue order within each agent, not across them), and one that
is awake delivers at once what another queued (LISTEN/NOTIFY). The
database's offline queue schema must be the version this a2a knows, as for
--store: --migrate (or a2a db migrate) applies it. The sender gets HTTP
503 agent_asleep with queued true and the task to poll, or 507/429
asleep_queue_full when a bound (--queue-max-messages, --queue-max-bytes,
--queue-max-per-peer, defaults 500, 2 MiB, 50) would be passed; records
expire after --queue-ttl (default 7 days). --asleep-answer jsonrpc answers
with HTTP 200 JSON-RPC errors instead. With --trusted-keys FILE (lines
"KEY_ID BASE64URL_ED25519_PUBLIC_KEY") every queued message must carry a
governed object signed by one of them (agent/governed), for one of
--purposes (comma-separated; default any). The card publishes the mode,
the windows and the bounds.

Signals: SIGUSR1 wakes the agent (sleep: delivers the queue, in order, and
serves live; session: begins a session), SIGUSR2 puts it back to sleep
(session: ends the session).
`

// reachFlags are a2a agent's reachability flags.
type reachFlags struct {
	mode, window, queueDir, queue, answer, keys, purposes *string
	maxMessages, maxPerPeer                               *int
	maxBytes                                              *int64
	ttl                                                   *time.Duration
	// pgQueue is the offline queue in PostgreSQL that config chose
	// (--queue or $A2A_QUEUE), nil for none.
	pgQueue *dsnRef
}

func addReachFlags(fs *flag.FlagSet) *reachFlags {
	return &reachFlags{
		mode:     fs.String("reachability", "", "always_on, session, hourly_wake or sleep (docs/protocol.md §7)"),
		window:   fs.String("window", "", "accept windows PERIOD:OFFSET:LENGTH, e.g. 1h:12m:5m (hourly_wake; sleep: when it wakes)"),
		queueDir: fs.String("queue-dir", "", "directory of the offline queue, queue.db (default: the --data directory)"),
		queue: fs.String("queue", "", "keep the offline queue in PostgreSQL, postgres://USER@HOST/DB, which several agents may share, instead of --queue-dir "+
			"(the password from "+storePasswordHelp+") (default: $"+envQueue+" when neither --queue-dir nor --data is given)"),
		answer:      fs.String("asleep-answer", "http_status", "how an asleep agent answers over HTTP: http_status (503/507/429) or jsonrpc (HTTP 200)"),
		keys:        fs.String("trusted-keys", "", "require queued messages to carry a governed object signed by a key of this file"),
		purposes:    fs.String("purposes", "", "with --trusted-keys: the purposes served, comma-separated (default: any)"),
		maxMessages: fs.Int("queue-max-messages", 0, "most queued messages (default 500)"),
		maxPerPeer:  fs.Int("queue-max-per-peer", 0, "most queued messages of one caller (default 50)"),
		maxBytes:    fs.Int64("queue-max-bytes", 0, "most bytes queued (default 2 MiB)"),
		ttl:         fs.Duration("queue-ttl", 0, "how long a queued message may wait (default 168h)"),
	}
}

// config checks the flags and returns the reference agent's reachability
// (nil without --reachability). Its queue is a directory (QueueDir), or a
// PostgreSQL database, which r.pgQueue then names: opening it is the
// caller's (openQueue).
func (r *reachFlags) config(fs *flag.FlagSet, id, dataDir string) (*refagent.Reachability, error) {
	if *r.mode == "" {
		return nil, onlyWith(fs, "--reachability", "window", "queue-dir", "queue", "trusted-keys", "purposes",
			"queue-max-messages", "queue-max-per-peer", "queue-max-bytes", "queue-ttl", "asleep-answer")
	}
	queueGiven := given(fs, "queue")
	if queueGiven && *r.queueDir != "" {
		return nil, fail(exitUsage, "give one of --queue and --queue-dir, not both: --queue postgres://... keeps the offline queue in PostgreSQL, --queue-dir DIR in DIR/queue.db")
	}
	mode := offline.ReachabilityMode(*r.mode)
	if !mode.Valid() {
		return nil, fail(exitUsage, "--reachability: %q is not always_on, session, hourly_wake or sleep", *r.mode)
	}
	out := &refagent.Reachability{Mode: mode, Answer: offline.AsleepAnswer(*r.answer),
		Bounds: offline.QueueBounds{MaxMessages: *r.maxMessages, MaxPerPeer: *r.maxPerPeer, MaxBytes: *r.maxBytes, RecordTTL: *r.ttl}}
	if !out.Answer.Valid() {
		return nil, fail(exitUsage, "--asleep-answer: %q is not http_status or jsonrpc", *r.answer)
	}
	if *r.maxMessages < 0 || *r.maxPerPeer < 0 || *r.maxBytes < 0 || *r.ttl < 0 {
		return nil, fail(exitUsage, "the --queue-max-* flags and --queue-ttl must not be negative")
	}
	queues := agent.StoresAndForwards(mode)
	switch {
	case *r.window != "":
		if !queues {
			return nil, fail(exitUsage, "--window goes with --reachability hourly_wake or sleep")
		}
		w, err := parseWindow(*r.window)
		if err != nil {
			return nil, fail(exitUsage, "--window: %v", err)
		}
		out.Window = &w
	case mode == offline.ReachabilityModePeriodicallyAvailable:
		w := reach.HourlyWake(id, 5*time.Minute, 55*time.Minute)
		w.Offset = w.Offset.Truncate(time.Second)
		out.Window = &w
	}
	switch {
	case queues && queueGiven:
		q, err := parseQueue("--queue", *r.queue)
		if err != nil {
			return nil, err
		}
		r.pgQueue = &q
	case queues && *r.queueDir != "":
		out.QueueDir = *r.queueDir
	case queues && dataDir != "":
		out.QueueDir = dataDir
	case queues && os.Getenv(envQueue) != "":
		q, err := parseQueue("$"+envQueue, os.Getenv(envQueue))
		if err != nil {
			return nil, err
		}
		r.pgQueue = &q
	case queues:
		return nil, fail(exitUsage, "--reachability %s queues messages: give --queue-dir DIR or --queue postgres://... (or --data DIR, or $%s)", mode, envQueue)
	case *r.queueDir != "":
		return nil, fail(exitUsage, "--queue-dir goes with --reachability hourly_wake or sleep (%s never queues)", mode)
	case queueGiven:
		return nil, fail(exitUsage, "--queue goes with --reachability hourly_wake or sleep (%s never queues)", mode)
	}
	if *r.keys != "" {
		keys, err := readTrustedKeys(*r.keys)
		if err != nil {
			return nil, err
		}
		out.Keys = keys
		if *r.purposes != "" {
			out.Purposes = strings.Split(*r.purposes, ",")
		}
	} else if *r.purposes != "" {
		return nil, fail(exitUsage, "--purposes goes with --trusted-keys")
	}
	return out, nil
}

// parseWindow reads PERIOD:OFFSET:LENGTH.
func parseWindow(s string) (reach.Schedule, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return reach.Schedule{}, fmt.Errorf("%q is not PERIOD:OFFSET:LENGTH (e.g. 1h:12m:5m)", s)
	}
	var d [3]time.Duration
	for i, v := range f {
		x, err := time.ParseDuration(v)
		if err != nil {
			return reach.Schedule{}, fmt.Errorf("%q: %v", v, err)
		}
		if x%time.Second != 0 {
			return reach.Schedule{}, fmt.Errorf("%q is not a whole number of seconds", v)
		}
		d[i] = x
	}
	w := reach.Schedule{Period: d[0], Offset: d[1], Length: d[2]}
	if err := w.Check(); err != nil {
		return reach.Schedule{}, err
	}
	return w, nil
}

// readTrustedKeys reads "KEY_ID BASE64URL_PUBLIC_KEY" lines (blank lines and
// # comments skipped).
func readTrustedKeys(path string) (map[string]ed25519.PublicKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(exitFailed, "--trusted-keys: %v", err)
	}
	defer f.Close()
	keys := map[string]ed25519.PublicKey{}
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fail(exitFailed, "--trusted-keys: %s:%d: want KEY_ID BASE64URL_PUBLIC_KEY", path, n)
		}
		k, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(fields[1], "="))
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, fail(exitFailed, "--trusted-keys: %s:%d: key %s is not a base64url Ed25519 public key (32 bytes)", path, n, fields[0])
		}
		keys[fields[0]] = ed25519.PublicKey(k)
	}
	if err := sc.Err(); err != nil {
		return nil, fail(exitFailed, "--trusted-keys: %s: %v", path, err)
	}
	if len(keys) == 0 {
		return nil, fail(exitFailed, "--trusted-keys: %s holds no key", path)
	}
	return keys, nil
}

// reportQueue prints where the offline queue of agent id is (a file, or
// pg, the database of --queue), its bounds, and what a damaged queue file
// lost.
func reportQueue(out *lineOut, id string, ra *refagent.Agent, r *refagent.Reachability, pg *dsnRef) {
	o := ra.Offline()
	if o == nil || (r.QueueDir == "" && pg == nil) {
		return
	}
	b := o.Bounds()
	path, recovery := "", ""
	if pg != nil {
		path = pg.shown
	} else {
		path = filepath.Join(r.QueueDir, "queue.db")
		if rec := ra.Recovery(); rec.Damaged {
			dropped := fmt.Sprintf("%d unreadable dropped", rec.Unreadable)
			if rec.Uncounted {
				dropped = fmt.Sprintf("%d unreadable dropped and an unknown number more (part of the file could not be read, its record count with it)", rec.Unreadable)
			}
			recovery = fmt.Sprintf("offline queue %s was damaged (%s): moved to %s; %d records and %d replay keys salvaged, %s",
				path, rec.Error, rec.MovedTo, rec.Records, rec.Replay, dropped)
		} else if rec.Unreadable > 0 {
			recovery = fmt.Sprintf("offline queue %s: %d unreadable records dropped", path, rec.Unreadable)
		}
	}
	text := fmt.Sprintf("agent is %s: offline queue %s (at most %d messages, %d bytes, %d per caller, kept %s)",
		o.Mode(), path, b.MaxMessages, b.MaxBytes, b.MaxPerPeer, b.RecordTTL)
	if recovery != "" && !out.json {
		out.emit(recovery, nil)
	}
	out.emit(text, agentEvent{Event: "queue", Agent: id, Mode: string(o.Mode()), Queue: path, MaxMessages: b.MaxMessages,
		MaxBytes: int64(b.MaxBytes), MaxPerCaller: b.MaxPerPeer, KeptSeconds: b.RecordTTL.Seconds(), Recovery: recovery})
}
