// Command a2a runs A2A agents over MQTT v5 and HTTP: an embedded broker,
// the reference agent, a requester, a live presence table, and a demo of
// the whole protocol.
//
//	a2a demo                      # every user story on an embedded broker, three over HTTP
//	a2a broker --status           # an MQTT v5 broker with broker-managed status
//	a2a agent --broker mqtt://127.0.0.1:1883 --org acme --unit lab --id echo
//	a2a agent --http 127.0.0.1:8080 --id echo
//	a2a agent --http 127.0.0.1:8080 --id echo --store postgres://agent@db.example/a2a --migrate
//	a2a db status --dsn postgres://agent@db.example/a2a
//	a2a watch --broker mqtt://127.0.0.1:1883 --org acme --unit lab
//	a2a send  --broker mqtt://127.0.0.1:1883 --org acme --unit lab --to echo hello
//	a2a send  --url http://127.0.0.1:8080 hello
//	a2a webhook --listen 127.0.0.1:9090
//	a2a send  --url http://127.0.0.1:8080 --webhook http://127.0.0.1:9090/ hello
//	a2a validate agent-card.json task.json       # check payloads; the type told by each one's shape
//
// Run "a2a <command> -h" for the flags of each command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// exitError carries an exit status and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

var commands = []struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}{
	{"demo", "run the user stories on an embedded broker and over HTTP, and report pass / fail", runDemo},
	{"broker", "run the embedded MQTT v5 broker", runBroker},
	{"passwd", "manage the broker's password file (mosquitto_passwd's format)", runPasswd},
	{"agent", "run the reference agent over MQTT, HTTP or both", runAgent},
	{"send", "send a message to an agent and print the replies", runSend},
	{"webhook", "receive push notifications on an HTTP address and print them", runWebhook},
	{"watch", "show the live presence table of an org/unit", runWatch},
	{"validate", "check A2A payloads in files or stdin against the schemas (exit 1 when any is invalid)", runValidate},
	{"db", "migrate a PostgreSQL task store's schema, or show its version", runDB},
	{"version", "print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		fmt.Fprintln(stdout, "a2a", refagent.Version, "(A2A v1.0, A2A-over-MQTT profile 0.1)")
		return nil
	}},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: a2a <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nexample:\n  a2a demo\n\nRun a2a <command> -h for the flags of a command.\n")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		var ee *exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ee):
			if ee.msg != "" {
				fmt.Fprintf(stderr, "a2a %s: %s\n", c.name, ee.msg)
			}
			return ee.code
		default:
			fmt.Fprintf(stderr, "a2a %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "a2a: unknown command %q (run a2a -h)\n", args[0])
	return 2
}

// newFlags returns a flag set whose usage shows an example.
func newFlags(name, synopsis, example string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("a2a "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: a2a %s %s\n\nexample:\n  %s\n\nflags:\n", name, synopsis, example)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, turning a flag error into exit status 2.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			return flag.ErrHelp
		}
		return &exitError{code: 2}
	}
	return nil
}

// checkIDs refuses a flag value that cannot stand in a topic level; empty
// values of optional flags are skipped by the caller. Pairs are flag name,
// value.
func checkIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := mqttbind.CheckIdentifier(pairs[i], pairs[i+1]); err != nil {
			return fail(2, "--%s: %v", pairs[i], err)
		}
	}
	return nil
}
