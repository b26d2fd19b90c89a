package main

import (
	"context"
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
`

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("watch", "--broker URL --org O --unit U [--client-id ID] [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F] [--topic-root ROOT]", "a2a watch --broker mqtt://127.0.0.1:1883 --org acme --unit lab", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), watchHelp) }
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS)")
	org := fs.String("org", "", "org_id (default: ORG of a user name ORG/UNIT/ID)")
	unit := fs.String("unit", "", "unit_id (default: UNIT of a user name ORG/UNIT/ID)")
	clientID := fs.String("client-id", "", "the watch's MQTT Client ID (default: the user name, else ORG/UNIT/watch-<random>)")
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *brokerURL == "" {
		return fail(2, "--broker is required")
	}
	// The watch may read another unit (an ACL file can grant it): the
	// flags left empty are taken from the user name, and no other value
	// conflicts with it.
	user, _, err := cf.user(*brokerURL)
	if err != nil {
		return err
	}
	if o, u, _, ok := identityOf(user); ok {
		if *org == "" {
			*org = o
		}
		if *unit == "" {
			*unit = u
		}
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
		return fail(2, "%v", err)
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
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: conn, Root: root, Org: *org, Unit: *unit, ClientID: id})
	if err != nil {
		return withRootHint(brokerError(err, conn, id), err, root)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Close(cctx)
	}()
	tty := isTerminal(stdout)
	if tty {
		drawTable(stdout, w.Entries())
	} else {
		fmt.Fprintf(stdout, "watching %s\n", filter)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Done():
			return withRootHint(refusedForGood("watch", w.Err()), w.Err(), root)
		case ch, ok := <-w.Changes():
			if !ok {
				return nil
			}
			if tty {
				drawTable(stdout, w.Entries())
			} else {
				fmt.Fprintln(stdout, changeLine(ch))
			}
		}
	}
}

// refusedForGood is the exit of a command whose connection stopped for
// good (a2amqtt's Done): the broker refused, after a reconnect, what it had
// allowed until then. The refusal names its reason code
// (a2amqtt.ReasonName).
func refusedForGood(what string, err error) error {
	return fail(1, "stopped: after a reconnect the broker refused the %s for good: %v; "+
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

// drawTable redraws the presence table in place.
func drawTable(w io.Writer, entries []presence.Entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key.Agent < entries[j].Key.Agent })
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	fmt.Fprintf(&b, "%-24s %-8s %-7s %-20s %s\n", "AGENT", "STATUS", "SOURCE", "SINCE", "CARD")
	for _, e := range entries {
		name := "-"
		if e.Card != nil {
			name = e.Card.Name
		}
		fmt.Fprintf(&b, "%-24s %-8s %-7s %-20s %s\n", e.Key.Agent, e.Status(), e.Source(), e.Since.Local().Format("2006-01-02 15:04:05"), name)
	}
	io.WriteString(w, b.String())
}
