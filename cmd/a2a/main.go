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
//	a2a chat  --org acme --unit lab --to echo    # one turn per line, INPUT_REQUIRED as a question
//	a2a card  echo --org acme --unit lab         # the retained card, checked against the schema
//	a2a list  --to echo; a2a get TASK --to echo; a2a cancel TASK --to echo; a2a resubscribe TASK --to echo
//	a2a webhook --listen 127.0.0.1:9090
//	a2a send  --url http://127.0.0.1:8080 --webhook http://127.0.0.1:9090/ hello
//	a2a validate agent-card.json task.json       # check payloads; the type told by each one's shape
//
// Run "a2a <command> -h" for the flags of each command.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

var commands = []struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}{
	{"demo", "run the user stories on an embedded broker and over HTTP, and report pass / fail", runDemo},
	{"broker", "run the embedded MQTT v5 broker", runBroker},
	{"passwd", "manage the broker's password file (mosquitto_passwd's format)", runPasswd},
	{"agent", "run the reference agent over MQTT, HTTP or both", runAgent},
	{"send", "send a message to an agent and print the replies", runSend},
	{"chat", "talk with an agent, one turn per line of standard input, in one context", runChat},
	{"card", "print an agent's card (retained over MQTT, or over HTTP) and check it against the schema", runCard},
	{"get", "print a task (GetTask)", runGet},
	{"cancel", "cancel a task (CancelTask)", runCancel},
	{"list", "list an agent's tasks (ListTasks)", runList},
	{"resubscribe", "follow a task's events until it ends or asks for input (SubscribeToTask)", runResubscribe},
	{"webhook", "receive push notifications on an HTTP address and print them", runWebhook},
	{"watch", "show the live presence table of an org/unit", runWatch},
	{"validate", "check A2A payloads in files or stdin against the schemas (exit 1 when any is invalid)", runValidate},
	{"db", "migrate a PostgreSQL task store's schema, or show its version", runDB},
	{"version", "print the version (also a2a --version, a2a -v)", runVersion},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: a2a <command> [flags] [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nexample:\n  a2a demo\n  a2a agent --org acme --unit lab --id echo &\n  a2a send --org acme --unit lab --to echo hello\n\n"+
		"Flags may come before or after the arguments; \"--\" ends the flags.\n"+
		"Every command takes --json: one JSON object per line on stdout and nothing else,\n"+
		"an error as {\"error\":{\"token\",\"code\",\"message\"}} with the exit status unchanged.\n"+
		"Run a2a <command> -h for the flags of a command.\n\n%s\n%s", envHelp, exitCodesHelp)
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		// A second signal kills the command the default way.
		signal.Stop(sigs)
		cancel(&signalled{sig: s})
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	cancel(nil)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	case "-v", "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		return report(ctx, c.name, err, jsonCommands[c.name] && wantsJSON(args[1:]), stdout, stderr)
	}
	fmt.Fprintf(stderr, "a2a: unknown command %q (run a2a -h)\n", args[0])
	return exitUsage
}

// runVersion prints the version: a2a's, and the versions of A2A and of
// the A2A-over-MQTT profile it speaks.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "[--json]", "a2a version", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if *asJSON {
		b, _ := json.Marshal(map[string]string{"version": refagent.Version, "a2a": "1.0", "mqttProfile": "0.1"})
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintln(stdout, "a2a", refagent.Version, "(A2A v1.0, A2A-over-MQTT profile 0.1)")
	return nil
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

// parse parses flags, turning a flag error into exit status 2. Flags may
// come after the arguments (a2a send hello --to echo): they are moved
// before them first (reorder); "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) error {
	return parseArgs(fs, reorder(fs, args))
}

// parseInOrder is parse for a command whose arguments may begin with "-"
// (a2a passwd -b FILE USER PASSWORD): flags come first, as mosquitto_passwd
// takes them.
func parseInOrder(fs *flag.FlagSet, args []string) error {
	return parseArgs(fs, args)
}

func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			return flag.ErrHelp
		}
		return &exitError{code: exitUsage, msg: err.Error(), printed: true}
	}
	return nil
}

// reorder moves the flags of args before its arguments, each flag with
// its value (the next argument, unless the flag is boolean or written
// -flag=value), and puts "--" between them, so that flags after the
// arguments work. Everything after a "--" is an argument; "-" alone is an
// argument (standard input). An unknown flag is kept for Parse to report.
func reorder(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 == len(args) {
			// The flag's value is missing: Parse says so.
			return flags
		}
		i++
		flags = append(flags, args[i])
	}
	return append(append(flags, "--"), rest...)
}

// checkIDs refuses a flag value that cannot stand in a topic level; empty
// values of optional flags are skipped by the caller. Pairs are flag name,
// value.
func checkIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := mqttbind.CheckIdentifier(pairs[i], pairs[i+1]); err != nil {
			return fail(exitUsage, "--%s: %v", pairs[i], err)
		}
	}
	return nil
}
