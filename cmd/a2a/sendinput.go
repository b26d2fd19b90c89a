package main

// What a2a send sends (the text from the arguments or standard input,
// files as file parts), and what it checks before: the target's retained
// card.

import (
	"context"
	"errors"
	"io"
	"mime"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/presence"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// maxTextBytes bounds the text read from standard input: an agent's
// default request limit (jsonrpc.DefaultMaxRequestBytes), which a larger
// text would pass anyway.
const maxTextBytes = jsonrpc.DefaultMaxRequestBytes

// maxFileBytes bounds the files of one send, in all: base64 makes 4 bytes
// of 3, so that they fit an agent's default request limit.
const maxFileBytes = jsonrpc.DefaultMaxRequestBytes / 4 * 3

// defaultCardWait is --card-wait's default.
const defaultCardWait = 2 * time.Second

// messageText is the text of a send: its arguments joined by spaces, or,
// for the one argument "-", standard input (at most maxTextBytes).
func messageText(args []string, stdin io.Reader) (string, error) {
	if len(args) != 1 || args[0] != "-" {
		return strings.Join(args, " "), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxTextBytes+1))
	switch {
	case err != nil:
		return "", fail(exitFailed, "reading the text from standard input: %v", err)
	case len(b) > maxTextBytes:
		return "", fail(exitFailed, "standard input: the text is longer than %d bytes (%d MiB), the agents' default request limit: nothing sent", maxTextBytes, maxTextBytes>>20)
	case len(b) == 0:
		return "", fail(exitUsage, "standard input is empty: the message TEXT is missing")
	}
	return string(b), nil
}

// messageParts are the parts of a send: the text (if any), then a file
// part for each file, whose bytes go base64 on the wire (A2A v1.0 Part
// raw), with its name and its media type from its extension.
func messageParts(text string, files []string) ([]a2a.Part, error) {
	var parts []a2a.Part
	if text != "" {
		parts = append(parts, a2a.Part{Content: a2a.PartText(text)})
	}
	total := 0
	for _, path := range files {
		b, err := readBounded(path, maxFileBytes-total)
		if err != nil {
			return nil, err
		}
		total += len(b)
		mt := mime.TypeByExtension(filepath.Ext(path))
		if mt == "" {
			mt = "application/octet-stream"
		}
		parts = append(parts, a2a.Part{Content: a2a.PartRaw(b), Filename: filepath.Base(path), MediaType: mt})
	}
	return parts, nil
}

// readBounded reads the file path, which must hold at most limit bytes.
func readBounded(path string, limit int) ([]byte, error) {
	b, tooBig, err := readAtMost(path, int64(limit))
	switch {
	case err != nil:
		return nil, fail(exitFailed, "--file: %v", err)
	case tooBig:
		return nil, fail(exitFailed, "--file %s: the files of a send are at most %d bytes (%d MiB) in all, so that the message fits an agent's default request limit: nothing sent",
			path, maxFileBytes, maxFileBytes>>20)
	}
	return b, nil
}

// checkPresence reads the retained card of agent org/unit/to, waiting at
// most wait for it, and fails at once, exit status 3, when there is none
// or it says the agent is offline. It connects as clientID, and
// disconnects before it returns. A broker that refuses the discovery
// subscription (an ACL) skips the check: the send then reports what the
// broker allows.
func checkPresence(ctx context.Context, conn a2amqtt.Connection, root mqttbind.Root, org, unit, clientID, to string, wait time.Duration) error {
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: conn, Root: root, Org: org, Unit: unit, ClientID: clientID})
	var ce *a2amqtt.ConnectError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		return withRootHint(brokerError(err, conn, clientID), err, root)
	case a2amqtt.IsRefusal(err):
		return nil
	default:
		return withRootHint(brokerError(err, conn, clientID), err, root)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Close(cctx)
	}()
	name := org + "/" + unit + "/" + to
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if e, ok := w.Lookup(to); ok && e.Registered() {
			if e.Status() == presence.StatusOffline {
				// A card carries no time: when the agent went offline is
				// not known, only who said so.
				return failToken(exitUnreachable, "offline", "%s is offline (%s): nothing sent", name, offlineWhy(e.Source()))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.Done():
			return nil
		case <-timer.C:
			return failToken(exitUnreachable, "no_agent", "no agent %s: no card on %s within %v (--card-wait): nothing sent", name, conn.Broker, wait)
		case <-w.Changes():
		}
	}
}

// offlineWhy says who said an agent is offline.
func offlineWhy(src presence.Source) string {
	switch src {
	case presence.SourceLWT:
		return "its Last Will: it lost its connection"
	case presence.SourceBroker:
		return "the broker saw it disconnect"
	}
	return "it said so when it stopped"
}
