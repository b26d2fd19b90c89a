package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/a2abind/a2abind/statemachines/presence"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("watch", "--broker URL --org O --unit U [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F]", "a2a watch --broker mqtt://127.0.0.1:1883 --org acme --unit lab", stderr)
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS)")
	org := fs.String("org", "", "org_id")
	unit := fs.String("unit", "", "unit_id")
	cf := addConnFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *brokerURL == "" {
		return fail(2, "--broker is required")
	}
	if err := checkIDs("org", *org, "unit", *unit); err != nil {
		return err
	}
	conn, err := cf.connection(*brokerURL)
	if err != nil {
		return err
	}
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: conn, Org: *org, Unit: *unit})
	if err != nil {
		return brokerError(err, conn)
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
		fmt.Fprintf(stdout, "watching $a2a/v1/discovery/%s/%s/+\n", *org, *unit)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
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
