package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

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

Exit status: 0 when every story passed or was skipped, 1 when one failed
or the broker refused what the stories need (the demo stops at the first
refusal), 2 when the command line is wrong. A story is skipped, not
failed, when the broker does not offer a capability that only an Extended
conformance feature needs: story 05's pool on a broker without shared
subscriptions prints "SKIP" with the reason, and the last line counts it
("11 passed, 1 skipped (05: the broker does not offer shared
subscriptions)").
`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--broker URL [--username U --password-file F] [--ca-file F] [--cert-file F --key-file F]] [--topic-root ROOT] [--quiet]", "a2a demo", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), demoHelp) }
	brokerURL := fs.String("broker", "", "run against this broker instead of embedded ones")
	quiet := fs.Bool("quiet", false, "print the verdicts only, not the transcript")
	cf := addConnFlags(fs)
	rootf := addRootFlag(fs)
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
	}
	root, err := rootf.root(stderr)
	if err != nil {
		return err
	}
	if *brokerURL != "" {
		if conn, err = cf.connection(*brokerURL, stderr); err != nil {
			return err
		}
	}
	// conn.Broker is the URL without its userinfo (the demo prints it).
	_, err = demo.Run(ctx, demo.Config{BrokerURL: conn.Broker, TLS: conn.TLS, Username: conn.Username, Password: conn.Password, Root: root,
		Out: stdout, Transcript: !*quiet,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if errors.Is(err, demo.ErrFailed) {
		return withRootHint(fail(1, "%v", err), err, root)
	}
	if err != nil && *brokerURL != "" {
		return withRootHint(brokerError(err, conn), err, root)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	return nil
}
