package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent", "--broker URL --org O --unit U --id ID [--pool P] [--keepalive SECONDS]",
		"a2a agent --broker mqtt://127.0.0.1:1883 --org acme --unit lab --id echo", stderr)
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS)")
	org := fs.String("org", "", "org_id")
	unit := fs.String("unit", "", "unit_id")
	id := fs.String("id", "", "agent_id")
	pool := fs.String("pool", "", "also serve this shared pool")
	keepalive := fs.Int("keepalive", 30, "MQTT keep-alive in seconds; a crashed agent's Will fires about 1.5 x this later")
	data := fs.String("data", "", "keep tasks in a bbolt database in this directory (default: in memory)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if *brokerURL == "" {
		return fail(2, "--broker is required")
	}
	if err := checkIDs("org", *org, "unit", *unit, "id", *id); err != nil {
		return err
	}
	if *pool != "" {
		if err := checkIDs("pool", *pool); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ra, err := refagent.Start(ctx, refagent.Config{Broker: *brokerURL, Org: *org, Unit: *unit, ID: *id, Pool: *pool,
		KeepAlive: time.Duration(*keepalive) * time.Second, DataDir: *data, Log: log})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "agent %s/%s/%s online (spawned instance %s-c1 serves handed-over tasks)\n", *org, *unit, *id, *id)
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ra.Close(closeCtx); err != nil {
		return fail(1, "stopping: %v", err)
	}
	fmt.Fprintf(stdout, "agent %s/%s/%s offline\n", *org, *unit, *id)
	return nil
}
