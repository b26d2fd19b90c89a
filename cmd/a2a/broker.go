package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("broker", "[--listen 127.0.0.1:1883] [--status] [--data DIR]", "a2a broker --listen 127.0.0.1:1883 --status", stderr)
	listen := fs.String("listen", "127.0.0.1:1883", "TCP address to listen on")
	status := fs.Bool("status", false, "broker-managed status: set a2a-status from each agent's connection state")
	data := fs.String("data", "", "directory that keeps sessions and retained messages across restarts")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	b, err := broker.Start(ctx, broker.Config{Addr: *listen, Status: *status, DataDir: *data,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "a2a broker listening on %s (status %v)\n", b.URL(), *status)
	<-ctx.Done()
	if err := b.Close(); err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
