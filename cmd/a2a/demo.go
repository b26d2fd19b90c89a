package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

const demoHelp = `
Without --broker the MQTT stories run on embedded brokers; with it, on that
broker (the HTTP stories need none, and story S11 always runs on an
embedded broker of its own, secured with a password file). --topic-root
applies to every broker the stories use, the embedded ones included: a
broker that refuses topics beginning with $ (ejabberd answers 0x90 topic
name invalid) needs a root without $, such as a2a/v1 (docs/protocol.md
§1.5).

Story F01, an agent fleet on PostgreSQL (three pool members sharing a task
store, the one holding a task killed, the follow-up failing over to the
pool: docs/protocol.md §4.6.1), runs when --pg DSN (or $A2A_PG) names a
database: a postgres:// URL or keyword/value pairs, the password best left
out of it ($PGPASSWORD or ~/.pgpass, as for a2a db). The story creates a
schema of its own there (a2a_demo_ and 8 hex digits), migrates it, and
drops it at the end; a database it cannot reach fails the story. Without
--pg the story is skipped with its reason.

Exit status: 0 when every story passed or was skipped, 1 when one failed
or the broker refused what the stories need (the demo stops at the first
refusal), 2 when the command line is wrong, 3 when --broker cannot be
reached within --connect-timeout (default 5s), 130 on Ctrl-C. The demo
runs on embedded brokers unless --broker is given: $A2A_BROKER does not
apply to it. A story is skipped, not
failed, when the broker does not offer a capability that only an Extended
conformance feature needs, when it cannot serve it, or when the run was
not given what it needs: story 05's pool on a broker without shared
subscriptions, or on mosquitto 2.0 under $a2a/v1 (it never delivers a
topic beginning with $ to a shared subscription: docs/protocol.md §12),
prints "SKIP" with the reason, and the last line counts it ("11 passed, 2
skipped (05: the broker does not offer shared subscriptions; F01: no
PostgreSQL given: --pg DSN)").

The transcript: stories are numbered as the profile numbers its user
stories (02 ... 09; H, O, P, S and F for the HTTP, offline, push,
security and fleet ones); those the demo does not tell are listed at the
top and in the summary ("not run here: 01 (OAuth), 04 (binary
artifacts), 06 (ubsp-v1)"). Topics are written short (discovery/ID,
request/ID, reply/ID), as the legend at the top explains; a discovery
message that changes nothing (a Will and the broker's own offline for one
disconnect) is printed once. The count line is the last line.

--json prints one JSON object per story as it ends, then the summary,
and nothing else: the transcript and the other text lines are left out
(as with --quiet, and the legend too):
  {"event":"story","id":ID,"title":T,"verdict":"pass"|"fail"|"skip"[,"reason":WHY][,"detail":D]}
  {"event":"summary","passed":N,"failed":[IDS],"skipped":[{"id":ID,"reason":WHY}],
   "notRun":[{"id":ID,"what":W}],"notRunAfterRefusal":N,"durationMs":F,"line":LAST_LINE}
reason says why a story was skipped or failed, detail what a story that
passed showed. The summary is the last object, but when the run fails
(exit 1: a story failed, or the broker refused) an error object follows
it; an error before any story (a broker that cannot be reached) is the
error object alone.
`

// envPG is the environment variable of a2a demo's PostgreSQL database
// (story F01); --pg takes precedence.
const envPG = "A2A_PG"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--broker URL [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F]] [--topic-root ROOT] [--pg DSN] [--quiet] [--json]",
		"a2a demo\n  a2a demo --pg postgres://agent@db.example:5432/a2a", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), demoHelp+jsonHelp) }
	brokerURL := fs.String("broker", "", "run against this broker instead of embedded ones")
	quiet := fs.Bool("quiet", false, "print the verdicts only, not the transcript")
	asJSON := fs.Bool("json", false, "print one JSON object per story, then the summary, and nothing else (see below); errors as {\"error\":{...}}")
	pg := fs.String("pg", "", "run story F01, the agent fleet, on this PostgreSQL database: a postgres:// URL or keyword/value pairs (default $"+envPG+
		"; without either the story is skipped); the password from "+storePasswordHelp)
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	var conn a2amqtt.Connection
	if *brokerURL == "" {
		if err := onlyWith(fs, "--broker", append(append([]string{}, credentialFlags...), tlsFlags...)...); err != nil {
			return err
		}
	}
	pgRef, err := demoPG(fs, *pg, stderr)
	if err != nil {
		return err
	}
	root, err := rootf.root(stderr)
	if err != nil {
		return err
	}
	if *brokerURL != "" {
		if conn, err = cf.connection(*brokerURL, stderr); err != nil {
			return err
		}
		if err := probeBroker(ctx, conn); err != nil {
			return err
		}
	}
	// conn.Broker is the URL without its userinfo (the demo prints it).
	cfg := demo.Config{BrokerURL: conn.Broker, TLS: conn.TLS, Username: conn.Username, Password: conn.Password, Root: root,
		Out: stdout, Transcript: !*quiet, PG: pgRef.raw,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	if *asJSON {
		cfg.Out, cfg.Transcript = io.Discard, false
		cfg.OnResult = func(r demo.Result) { writeJSONLine(stdout, storyEvent(r)) }
		cfg.OnSummary = func(s demo.Summary) { writeJSONLine(stdout, summaryEvent(s)) }
	}
	_, err = demo.Run(ctx, cfg)
	if errors.Is(err, demo.ErrFailed) {
		return withRootHint(fail(exitFailed, "%v", err), err, root)
	}
	if err != nil && *brokerURL != "" {
		return withRootHint(brokerError(err, conn), err, root)
	}
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	return nil
}

// demoStory is the a2a demo --json line of a story (demoHelp).
type demoStory struct {
	Event   string `json:"event"`
	ID      string `json:"id"`
	Title   string `json:"title"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

func storyEvent(r demo.Result) demoStory {
	e := demoStory{Event: "story", ID: r.ID, Title: r.Title, Verdict: "pass", Reason: r.Reason()}
	switch {
	case r.Skipped:
		e.Verdict = "skip"
	case r.Err != nil:
		e.Verdict = "fail"
	default:
		e.Detail = r.Detail
	}
	return e
}

// demoSummary is the a2a demo --json summary, its last line (demoHelp).
type demoSummary struct {
	Event              string       `json:"event"`
	Passed             int          `json:"passed"`
	Failed             []string     `json:"failed"`
	Skipped            []demoReason `json:"skipped"`
	NotRun             []demoNotRun `json:"notRun"`
	NotRunAfterRefusal int          `json:"notRunAfterRefusal"`
	DurationMs         float64      `json:"durationMs"`
	Line               string       `json:"line"`
}

// demoReason is a story skipped, in the summary.
type demoReason struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// demoNotRun is a user story of the profile the demo does not tell.
type demoNotRun struct {
	ID   string `json:"id"`
	What string `json:"what"`
}

func summaryEvent(s demo.Summary) demoSummary {
	e := demoSummary{Event: "summary", Passed: s.Passed, Failed: s.Failed, Skipped: []demoReason{}, NotRun: []demoNotRun{},
		NotRunAfterRefusal: s.NotRunAfterRefusal, DurationMs: millis(s.Duration), Line: s.Line}
	if e.Failed == nil {
		e.Failed = []string{}
	}
	for _, k := range s.Skipped {
		e.Skipped = append(e.Skipped, demoReason{k.ID, k.Reason})
	}
	for _, n := range demo.NotRun {
		e.NotRun = append(e.NotRun, demoNotRun{n.ID, n.What})
	}
	return e
}

// probeBroker fails, exit status 3, when no TCP connection to the
// broker of conn can be made within its ConnectTimeout (--connect-timeout),
// trying again every probeInterval: the stories would otherwise each wait
// for their timeouts.
func probeBroker(ctx context.Context, conn a2amqtt.Connection) error {
	u, err := a2amqtt.ParseBrokerURL(conn.Broker)
	if err != nil {
		return fail(exitUsage, "--broker: %s", strings.TrimPrefix(err.Error(), "mqtt: "))
	}
	ctx, cancel := context.WithTimeout(ctx, conn.ConnectTimeout)
	defer cancel()
	var last error
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err == nil {
			c.Close()
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fail(exitUnreachable, "broker %s unreachable within %v (--connect-timeout): %v", conn.Broker, conn.ConnectTimeout, last)
		case <-time.After(probeInterval):
		}
	}
}

// probeInterval is how often probeBroker tries.
const probeInterval = 250 * time.Millisecond

// demoPG returns story F01's database: --pg, else $A2A_PG, else none (the
// story is skipped). A DSN that does not parse is a usage error (exit 2)
// naming where it comes from, its password never quoted; a password in
// --pg prints a warning on stderr.
func demoPG(fs *flag.FlagSet, flagValue string, stderr io.Writer) (dsnRef, error) {
	from, raw, flagged := "--pg", flagValue, given(fs, "pg")
	if !flagged {
		from, raw = "$"+envPG, os.Getenv(envPG)
	}
	if raw == "" {
		if flagged {
			return dsnRef{}, fail(exitUsage, "--pg: give the PostgreSQL database of story F01, or leave the flag out to skip the story")
		}
		return dsnRef{}, nil
	}
	_, ref, err := parsePG(from, raw)
	if err != nil {
		return ref, err
	}
	if flagged && holdsPassword(raw) {
		warnPasswordIn(stderr, fs.Name(), "the --pg DSN", storePasswordHelp)
	}
	return ref, nil
}
