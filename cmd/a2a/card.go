package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/presence"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

const cardHelp = `
Over MQTT a2a card reads the agent's retained card on its discovery
topic ({root}/discovery/ORG/UNIT/ID), waiting at most --card-wait for it;
over HTTP (--url, or $A2A_URL when no ID is given) it GETs the card at
the URL's /.well-known/agent-card.json (or at the URL itself when it is
the card's). It prints the card, and checks it against the A2A v1.0
AgentCard schema (the generated validator, as a2a validate does); --json
prints the card as received, on one line. Over MQTT it also prints the
agent's presence: online or offline, and who said so.

Exit status: 0 when the card is valid; 1 when it is not (the card is
printed all the same, then the schema's complaints), or the URL serves no
card; 2 for a wrong command line; 3 when there is no card within
--card-wait ("no agent ORG/UNIT/ID"), or the broker or the URL cannot be
reached; 4 when --timeout passed.
`

func runCard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("card", "(ID [--broker URL] [--org O --unit U] [--card-wait D] | --url URL) [--json] [--timeout D] [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F] [--topic-root ROOT]",
		"a2a card echo --org acme --unit lab\n  a2a card --url http://127.0.0.1:8080 --json", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), cardHelp+"\n"+envHelp+"\n"+exitCodesHelp) }
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS) (default: $"+envBroker+", else "+defaultBroker+")")
	agentURL := fs.String("url", "", "read the card of the agent at this URL over HTTP: its base URL or its card's URL (default: $"+envURL+" when no ID is given)")
	org := fs.String("org", "", "org_id (MQTT; default: ORG of a user name ORG/UNIT/ID, else $"+envOrg+")")
	unit := fs.String("unit", "", "unit_id (MQTT; default: UNIT of a user name ORG/UNIT/ID, else $"+envUnit+")")
	wait := fs.Duration("card-wait", defaultCardWait, "wait this long at most for the retained card (MQTT)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long (exit status 4)")
	asJSON := fs.Bool("json", false, "print the card as received, on one line (errors as {\"error\":{...}})")
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(1))
	}
	id := fs.Arg(0)
	if *agentURL == "" && id == "" && !given(fs, "broker") && os.Getenv(envURL) != "" {
		*agentURL = os.Getenv(envURL)
	}
	switch {
	case *agentURL != "" && (id != "" || given(fs, "broker")):
		return fail(exitUsage, "give either an agent ID (MQTT) or --url (HTTP)")
	case *agentURL == "" && id == "":
		return fail(exitUsage, "the agent ID is missing (or give --url URL)")
	case *wait <= 0:
		return fail(exitUsage, "--card-wait must be positive")
	case *timeout <= 0:
		return fail(exitUsage, "--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var raw []byte
	var who string
	if *agentURL != "" {
		if err := onlyWith(fs, "--broker", append([]string{"org", "unit", "card-wait", "topic-root", "connect-timeout"}, credentialFlags...)...); err != nil {
			return err
		}
		if err := noUserinfo("url", *agentURL); err != nil {
			return err
		}
		hc, err := cf.httpClient(*agentURL)
		if err != nil {
			return err
		}
		cardAt, b, err := fetchCardRaw(ctx, hc, *agentURL)
		if err != nil {
			return timedOut(ctx, err, *timeout)
		}
		raw, who = b, "card "+cardAt
	} else {
		*brokerURL, cf.brokerFrom = brokerOf(fs, *brokerURL)
		if err := cf.readerOrgUnit(*brokerURL, org, unit); err != nil {
			return err
		}
		if err := checkIDs("org", *org, "unit", *unit, "ID", id); err != nil {
			return err
		}
		root, err := rootf.root(stderr)
		if err != nil {
			return err
		}
		conn, err := cf.connection(*brokerURL, stderr)
		if err != nil {
			return err
		}
		e, b, err := retainedCard(ctx, conn, root, *org, *unit, id, *wait)
		if err != nil {
			return timedOut(ctx, withRootHint(err, err, root), *timeout)
		}
		raw, who = b, fmt.Sprintf("agent %s/%s/%s  %s (%s)", *org, *unit, id, e.Status(), e.Source())
	}
	invalid := a2a.ValidateAgentCardJSON(raw)
	if *asJSON {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			fmt.Fprintln(stdout, b.String())
		}
	} else {
		printCard(stdout, who, raw, invalid)
	}
	if invalid != nil {
		return failToken(exitFailed, "invalid_card", "not a valid A2A v1.0 AgentCard: %v", invalid)
	}
	return nil
}

// fetchCardRaw GETs the card of the agent at rawURL: at rawURL itself
// when it names the card, else at its /.well-known/agent-card.json. It
// returns the card's URL and its bytes (at most maxTextBytes).
func fetchCardRaw(ctx context.Context, hc *http.Client, rawURL string) (string, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", nil, fail(exitUsage, "--url: %q is not an http:// or https:// URL", rawURL)
	}
	cardURL := rawURL
	if !strings.HasSuffix(u.Path, a2ahttp.WellKnownCardPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + a2ahttp.WellKnownCardPath
		u.RawQuery, u.Fragment = "", ""
		cardURL = u.String()
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return "", nil, fail(exitUsage, "--url: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	var oe *net.OpError
	switch {
	case errors.As(err, &oe):
		return "", nil, fail(exitUnreachable, "agent %s unreachable: %v", rawURL, oe)
	case err != nil:
		return "", nil, fail(exitFailed, "%v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTextBytes+1))
	switch {
	case err != nil:
		return "", nil, fail(exitFailed, "reading the card %s: %v", cardURL, err)
	case resp.StatusCode != http.StatusOK:
		return "", nil, failToken(exitFailed, "no_card", "no agent card at %s: %s", cardURL, resp.Status)
	case len(b) > maxTextBytes:
		return "", nil, failToken(exitFailed, "invalid_card", "the card at %s is longer than %d bytes", cardURL, maxTextBytes)
	}
	return cardURL, b, nil
}

// retainedCard reads the retained card of agent org/unit/id, waiting at
// most wait for it: its presence entry and the card's bytes as published.
// It connects as the broker's user name (a broker with a password file
// admits a user under its own Client ID only), else as
// ORG/UNIT/card-<random>, and disconnects before it returns.
func retainedCard(ctx context.Context, conn a2amqtt.Connection, root mqttbind.Root, org, unit, id string, wait time.Duration) (presence.Entry, []byte, error) {
	var mu sync.Mutex
	raws := map[*a2a.AgentCard][]byte{}
	// The decoder keeps each card's bytes: the card is printed and
	// checked as published, not as decoded.
	decode := func(payload []byte) (*a2a.AgentCard, error) {
		card, err := presence.DecodeCardLenient(payload)
		if err == nil {
			mu.Lock()
			raws[card] = append([]byte(nil), payload...)
			mu.Unlock()
		}
		return card, err
	}
	clientID := conn.Username
	if clientID == "" {
		clientID = org + "/" + unit + "/card-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	}
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: conn, Root: root, Org: org, Unit: unit, ClientID: clientID,
		TrackerOptions: []presence.Option{presence.WithCardDecoder(decode)}})
	if err != nil {
		return presence.Entry{}, nil, brokerError(err, conn, clientID)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Close(cctx)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if e, ok := w.Lookup(id); ok && e.Card != nil {
			mu.Lock()
			b := raws[e.Card]
			mu.Unlock()
			if b != nil {
				return e, b, nil
			}
		}
		select {
		case <-ctx.Done():
			return presence.Entry{}, nil, ctx.Err()
		case <-w.Done():
			return presence.Entry{}, nil, refusedForGood("card's subscription", w.Err())
		case <-timer.C:
			return presence.Entry{}, nil, failToken(exitUnreachable, "no_agent", "no agent %s/%s/%s: no card on %s within %v (--card-wait)", org, unit, id, conn.Broker, wait)
		case <-w.Changes():
		}
	}
}

// printCard prints a card for people: who (where it comes from), its
// name, description, version, interfaces, capabilities and skills, and
// whether it is valid.
func printCard(w io.Writer, who string, raw []byte, invalid error) {
	fmt.Fprintf(w, "%-14s%s\n", "from", who)
	card, err := a2a.ParseAgentCardJSON(raw)
	if err != nil {
		// The validator says why below; the lenient form may still read.
		card, _ = presence.DecodeCardLenient(raw)
	}
	if card != nil {
		fmt.Fprintf(w, "%-14s%s\n", "name", card.Name)
		if card.Description != "" {
			fmt.Fprintf(w, "%-14s%s\n", "description", card.Description)
		}
		if card.Version != "" {
			fmt.Fprintf(w, "%-14s%s\n", "version", card.Version)
		}
		if card.Provider != nil {
			fmt.Fprintf(w, "%-14s%s %s\n", "provider", card.Provider.Organization, card.Provider.URL)
		}
		for _, i := range card.SupportedInterfaces {
			fmt.Fprintf(w, "%-14s%s %s %s\n", "interface", i.ProtocolBinding, i.ProtocolVersion, i.URL)
		}
		if c := card.Capabilities; c != nil {
			var caps []string
			for _, f := range []struct {
				name string
				on   *bool
			}{{"streaming", c.Streaming}, {"pushNotifications", c.PushNotifications}, {"extendedAgentCard", c.ExtendedAgentCard}} {
				if f.on != nil && *f.on {
					caps = append(caps, f.name)
				}
			}
			for _, e := range c.Extensions {
				caps = append(caps, "extension "+e.URI)
			}
			if len(caps) == 0 {
				caps = []string{"none"}
			}
			fmt.Fprintf(w, "%-14s%s\n", "capabilities", strings.Join(caps, ", "))
		}
		if len(card.SecurityRequirements) > 0 {
			var names []string
			for name := range card.SecuritySchemes {
				names = append(names, name)
			}
			fmt.Fprintf(w, "%-14s%s\n", "security", strings.Join(names, ", "))
		}
		for _, s := range card.Skills {
			fmt.Fprintf(w, "%-14s%s: %s\n", "skill", s.ID, s.Description)
		}
	}
	if invalid != nil {
		fmt.Fprintf(w, "%-14s%v\n", "invalid", invalid)
		return
	}
	fmt.Fprintf(w, "%-14s%s\n", "valid", "the card passes the A2A v1.0 AgentCard schema")
}
