package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--broker URL] [--quiet]", "a2a demo", stderr)
	brokerURL := fs.String("broker", "", "run against this broker instead of embedded ones")
	quiet := fs.Bool("quiet", false, "print the verdicts only, not the transcript")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	_, err := demo.Run(ctx, demo.Config{BrokerURL: *brokerURL, Out: stdout, Transcript: !*quiet,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if errors.Is(err, demo.ErrFailed) {
		return fail(1, "%v", err)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
