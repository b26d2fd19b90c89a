package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--broker URL [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F]] [--quiet]", "a2a demo", stderr)
	brokerURL := fs.String("broker", "", "run against this broker instead of embedded ones")
	quiet := fs.Bool("quiet", false, "print the verdicts only, not the transcript")
	cf := addConnFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	var conn a2amqtt.Connection
	if *brokerURL == "" {
		if err := onlyWith(fs, "--broker", append(append([]string{}, credentialFlags...), tlsFlags...)...); err != nil {
			return err
		}
	} else {
		var err error
		if conn, err = cf.connection(*brokerURL, stderr); err != nil {
			return err
		}
	}
	// conn.Broker is the URL without its userinfo (the demo prints it).
	_, err := demo.Run(ctx, demo.Config{BrokerURL: conn.Broker, TLS: conn.TLS, Username: conn.Username, Password: conn.Password, Out: stdout, Transcript: !*quiet,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if errors.Is(err, demo.ErrFailed) {
		return fail(1, "%v", err)
	}
	if err != nil && *brokerURL != "" {
		return brokerError(err, conn)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
