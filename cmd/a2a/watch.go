package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/statemachines/presence"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

const watchHelp = `
Broker credentials: --username (or $A2A_USERNAME) and --password-file FILE
(its first line; or $A2A_PASSWORD), or in the broker URL,
mqtt://USER:PASSWORD@host:port (percent-encoded; a password there shows in
ps and the shell's history: a2a warns), a flag taking precedence over the
URL, the URL over the environment (a user name or password in a flag and
in the URL that differ is a usage error); for TLS an mqtts:// broker URL,
with --ca-file, --cert-file and --key-file.

Client ID: a broker with a password file (a2a broker --password-file,
mosquitto with use_username_as_clientid) admits a user only under its own
Client ID, its user name, so with a user name the watch connects as that
user (and a user name ORG/UNIT/ID gives --org and --unit unless they are
set); without one, as ORG/UNIT/watch-<random>. --client-id overrides
both. One user holds one connection at a time: a watch logged in as a user
that is also running an agent or a requester takes its session over. Give
the watch a user of its own, or, on the embedded broker, an ACL file line
"clientid ORG/UNIT/watch-*" under the user and --client-id ORG/UNIT/watch-1
(docs/protocol.md §13.3).

Broker loss: when the watch's broker connection is lost it says so, one
line ("broker lost: BROKER: why; every agent unknown until it is back"),
shows every agent unknown (the table, and with --json each agent again
with "status":"unknown" and "brokerLost":true, after a line
{"broker":BROKER,"connection":"lost","error":...}), and reconnects; once
it is back it says "broker back: BROKER" ({"connection":"back"} and each
agent as the table has it), and the retained cards bring the news.
`

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("watch", "[--broker URL] [--org O --unit U] [--json] [--once [--settle D]] [--client-id ID] [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F] [--topic-root ROOT]",
		"a2a watch --broker mqtt://127.0.0.1:1883 --org acme --unit lab\n  a2a watch --org acme --unit lab --once --json", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), watchHelp+"\n"+envHelp+"\n"+exitCodesHelp) }
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS) (default: $"+envBroker+", else "+defaultBroker+")")
	org := fs.String("org", "", "org_id (default: ORG of a user name ORG/UNIT/ID, else $"+envOrg+")")
	unit := fs.String("unit", "", "unit_id (default: UNIT of a user name ORG/UNIT/ID, else $"+envUnit+")")
	clientID := fs.String("client-id", "", "the watch's MQTT Client ID (default: the user name, else ORG/UNIT/watch-<random>)")
	asJSON := fs.Bool("json", false, "print one JSON object per line: each change, or with --once each agent, and errors")
	once := fs.Bool("once", false, "print the table once, after the retained cards arrived (see --settle), and exit")
	settle := fs.Duration("settle", defaultSettle, "with --once: wait at most this long for the retained cards, less when they stop arriving for "+settleQuiet.String())
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if *settle <= 0 {
		return fail(exitUsage, "--settle must be positive")
	}
	if given(fs, "settle") && !*once {
		return fail(exitUsage, "--settle goes with --once")
	}
	*brokerURL, cf.brokerFrom = brokerOf(fs, *brokerURL)
	// The watch may read another unit (an ACL file can grant it): the
	// flags left empty are taken from the user name, and no other value
	// conflicts with it.
	if err := cf.readerOrgUnit(*brokerURL, org, unit); err != nil {
		return err
	}
	if err := checkIDs("org", *org, "unit", *unit); err != nil {
		return err
	}
	root, err := rootf.root(stderr)
	if err != nil {
		return err
	}
	filter, err := root.DiscoveryFilterTopic(*org, *unit)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	conn, err := cf.connection(*brokerURL, stderr)
	if err != nil {
		return err
	}
	id := *clientID
	if id == "" {
		id = conn.Username
	}
	if id == "" {
		id = *org + "/" + *unit + "/watch-" + uuid.NewString()
	}
	// The connection's losses and returns, in order; a full channel drops
	// nothing that matters: the latest state is kept in linkUp too.
	links := make(chan linkChange, 64)
	conn.OnConnectionChange = func(up bool, err error) {
		select {
		case links <- linkChange{up, err}:
		default:
		}
	}
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: conn, Root: root, Org: *org, Unit: *unit, ClientID: id})
	if err != nil {
		return withRootHint(brokerError(err, conn, id), err, root)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Close(cctx)
	}()
	if *once {
		if err := settleWatch(ctx, w, *settle); err != nil {
			if ctx.Err() != nil {
				return err
			}
			return withRootHint(refusedForGood("watch", err), err, root)
		}
		entries := w.Entries()
		sortEntries(entries)
		if *asJSON {
			for _, e := range entries {
				fmt.Fprintln(stdout, entryJSON(e, false))
			}
			return nil
		}
		io.WriteString(stdout, tableText(entries, false))
		return nil
	}
	tty := isTerminal(stdout) && !*asJSON
	switch {
	case tty:
		drawTable(stdout, w.Entries(), "")
	case !*asJSON:
		fmt.Fprintf(stdout, "watching %s\n", filter)
	}
	// lost says why the broker connection is down ("" while it is up):
	// every agent is then unknown, whatever its table says.
	lost := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Done():
			return withRootHint(refusedForGood("watch", w.Err()), w.Err(), root)
		case l := <-links:
			if l.up {
				lost = ""
			} else {
				lost = conn.Broker
				if l.err != nil {
					lost += ": " + l.err.Error()
				}
			}
			entries := w.Entries()
			sortEntries(entries)
			switch {
			case *asJSON:
				fmt.Fprintln(stdout, linkJSON(conn.Broker, l))
				for _, e := range entries {
					fmt.Fprintln(stdout, entryJSON(e, !l.up))
				}
			case tty:
				drawTable(stdout, entries, lost)
			case l.up:
				fmt.Fprintf(stdout, "broker back: %s\n", conn.Broker)
			default:
				fmt.Fprintf(stdout, "broker lost: %s; every agent unknown until it is back\n", lost)
			}
		case ch, ok := <-w.Changes():
			if !ok {
				return nil
			}
			switch {
			case *asJSON:
				fmt.Fprintln(stdout, entryJSON(ch.Entry, lost != ""))
			case tty:
				drawTable(stdout, w.Entries(), lost)
			default:
				fmt.Fprintln(stdout, changeLine(ch))
			}
		}
	}
}

// linkChange is a loss or a return of the watch's broker connection.
type linkChange struct {
	up  bool
	err error
}

// linkJSON is the --json line of a loss or a return of the broker
// connection.
func linkJSON(broker string, l linkChange) string {
	v := struct {
		Broker     string `json:"broker"`
		Connection string `json:"connection"`
		Error      string `json:"error,omitempty"`
	}{Broker: broker, Connection: "back"}
	if !l.up {
		v.Connection = "lost"
		if l.err != nil {
			v.Error = l.err.Error()
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// a2a watch --once waits for the retained cards: until none arrived for
// settleQuiet, at most --settle (defaultSettle).
const (
	defaultSettle = 2 * time.Second
	settleQuiet   = 300 * time.Millisecond
)

// settleWatch waits until the watch's changes have stopped for
// settleQuiet (the retained cards arrive at once after the subscription),
// at most max. It returns the watch's error if it stopped.
func settleWatch(ctx context.Context, w *a2amqtt.Watcher, max time.Duration) error {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	quiet := time.NewTimer(settleQuiet)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.Done():
			return w.Err()
		case <-deadline.C:
			return nil
		case <-quiet.C:
			return nil
		case <-w.Changes():
			quiet.Reset(settleQuiet)
		}
	}
}

// entryJSON is one agent of the presence table as a JSON object: its
// identity, status and its source, when its state changed and when the
// latest discovery message arrived, and its card's name. brokerLost marks
// it unknown: the watch's broker connection is down, so its status is not
// known any more (brokerLost true in the object).
func entryJSON(e presence.Entry, brokerLost bool) string {
	v := struct {
		Org        string `json:"org"`
		Unit       string `json:"unit"`
		Agent      string `json:"agent"`
		Status     string `json:"status"`
		Source     string `json:"source"`
		Registered bool   `json:"registered"`
		Card       string `json:"card,omitempty"`
		Since      string `json:"since"`
		Updated    string `json:"updated"`
		BrokerLost bool   `json:"brokerLost,omitempty"`
	}{Org: e.Key.Org, Unit: e.Key.Unit, Agent: e.Key.Agent, Status: e.Status().String(), Source: e.Source().String(), Registered: e.Registered(),
		Since: e.Since.UTC().Format(time.RFC3339Nano), Updated: e.Updated.UTC().Format(time.RFC3339Nano), BrokerLost: brokerLost}
	if brokerLost {
		v.Status, v.Source = presence.StatusUnknown.String(), presence.SourceNone.String()
	}
	if e.Card != nil {
		v.Card = e.Card.Name
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// refusedForGood is the exit of a command whose connection stopped for
// good (a2amqtt's Done): the broker refused, after a reconnect, what it had
// allowed until then. The refusal names its reason code
// (a2amqtt.ReasonName).
func refusedForGood(what string, err error) error {
	return fail(exitFailed, "stopped: after a reconnect the broker refused the %s for good: %v; "+
		"check what the broker now allows (its ACL, its card registry, its password file, its capabilities)", what, err)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// changeLine is one line per change, for pipes and logs.
func changeLine(ch presence.Change) string {
	e := ch.Entry
	name := "-"
	if e.Card != nil {
		name = e.Card.Name
	}
	return fmt.Sprintf("%s agent=%s status=%s source=%s card=%q", e.Updated.UTC().Format(time.RFC3339), e.Key.Agent, e.Status(), e.Source(), name)
}

func sortEntries(entries []presence.Entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key.Agent < entries[j].Key.Agent })
}

// tableText is the presence table; brokerLost shows every agent unknown
// (the watch's broker connection is down).
func tableText(entries []presence.Entry, brokerLost bool) string {
	sortEntries(entries)
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %-8s %-7s %-20s %s\n", "AGENT", "STATUS", "SOURCE", "SINCE", "CARD")
	for _, e := range entries {
		name := "-"
		if e.Card != nil {
			name = e.Card.Name
		}
		status, source := e.Status(), e.Source()
		if brokerLost {
			status, source = presence.StatusUnknown, presence.SourceNone
		}
		fmt.Fprintf(&b, "%-24s %-8s %-7s %-20s %s\n", e.Key.Agent, status, source, e.Since.Local().Format("2006-01-02 15:04:05"), name)
	}
	return b.String()
}

// drawTable redraws the presence table in place, under a line saying the
// broker is lost when lost (why) is not "".
func drawTable(w io.Writer, entries []presence.Entry, lost string) {
	head := ""
	if lost != "" {
		head = "broker lost: " + lost + "; every agent unknown until it is back\n"
	}
	io.WriteString(w, "\x1b[H\x1b[2J"+head+tableText(entries, lost != ""))
}
