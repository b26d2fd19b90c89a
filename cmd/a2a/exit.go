package main

// Exit statuses, the errors that carry them, and how a2a reports them: one
// line on stderr, and, with --json, one JSON object on stdout.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/a2abind/a2abind/generated/a2a"
)

// The exit statuses of every a2a command (a2a -h, README "Exit codes and
// environment").
const (
	// exitOK: done; for a2a send, the task COMPLETED or asks for input
	// (INPUT_REQUIRED, AUTH_REQUIRED).
	exitOK = 0
	// exitFailed: the task FAILED, was REJECTED or CANCELED, the agent or
	// the broker refused, or another failure (a file that cannot be
	// read).
	exitFailed = 1
	// exitUsage: the command line (or an environment variable standing
	// in for a flag) is wrong.
	exitUsage = 2
	// exitUnreachable: the broker, the agent or its pool could not be
	// reached: no connection within --connect-timeout, no agent of that
	// id, an agent offline, or no reply after every attempt.
	exitUnreachable = 3
	// exitTimeout: --timeout passed before the answer.
	exitTimeout = 4
	// exitQueued: an asleep agent queued the message (or a2a send --get
	// found the task it queued still SUBMITTED); sending again would queue
	// it twice.
	exitQueued = 5
	// exitInterrupted: Ctrl-C (SIGINT) stopped a command that was not
	// done; SIGTERM gives 128+15.
	exitInterrupted = 128 + int(syscall.SIGINT)
)

// The error tokens of the exit statuses, as --json prints them.
var exitTokens = map[int]string{
	exitFailed:      "failed",
	exitUsage:       "usage",
	exitUnreachable: "unreachable",
	exitTimeout:     "timeout",
	exitQueued:      "queued",
	exitInterrupted: "interrupted",
}

// exitCodesHelp documents the exit statuses (a2a -h, a2a send -h).
const exitCodesHelp = `exit status:
  0    done; a2a send: the task COMPLETED or asks for input (INPUT_REQUIRED, AUTH_REQUIRED)
  1    the task FAILED, was REJECTED or CANCELED; the agent or the broker refused; another failure
  2    usage: a wrong flag, argument or environment variable
  3    unreachable: no broker connection within --connect-timeout, no agent of that id,
       the agent offline, or no reply after every attempt
  4    timeout: --timeout passed before the answer
  5    queued: an asleep agent stored the message for when it wakes (do not send it again)
  130  interrupted (Ctrl-C); 143 for SIGTERM. agent, broker, watch and webhook stop on
       either as their normal end, with 0
`

// exitError carries an exit status and a one-line message; token names
// the error for --json (default: the status's, exitTokens), and rpcCode
// is the JSON-RPC code of an error the agent answered (0 for none).
type exitError struct {
	code    int
	token   string
	msg     string
	rpcCode int
	// printed says the message is already on stderr (the flag package
	// printed it with the usage): it goes to the JSON object only.
	printed bool
}

func (e *exitError) Error() string { return e.msg }

// tokenOf is the --json token of e.
func (e *exitError) tokenOf() string {
	if e.token != "" {
		return e.token
	}
	if t, ok := exitTokens[e.code]; ok {
		return t
	}
	return "failed"
}

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// failToken is fail with a --json token of its own.
func failToken(code int, token, format string, args ...any) error {
	return &exitError{code: code, token: token, msg: fmt.Sprintf(format, args...)}
}

// a2aFailure is the exit error of an A2A error the agent answered: exit
// status 1, its token and JSON-RPC code kept for --json.
func a2aFailure(e *a2a.Error) *exitError {
	return &exitError{code: exitFailed, token: string(e.Token), rpcCode: e.Code,
		msg: fmt.Sprintf("%s (code %d): %s", e.Token, e.Code, e.Message)}
}

// signalled is the cause of the context of a command stopped by a signal.
type signalled struct{ sig os.Signal }

func (s *signalled) Error() string { return "interrupted by " + s.sig.String() }

// exitStatus is the exit status of a command stopped by s: 128 + its
// number.
func (s *signalled) exitStatus() int {
	if n, ok := s.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitInterrupted
}

// services are the commands that run until stopped: a signal is their
// normal end, exit status 0 (a2a watch, unless --once, ends with no error
// on a signal, exit status 0 too).
var services = map[string]bool{"agent": true, "broker": true, "webhook": true}

// jsonCommands are the commands whose --json prints errors as JSON.
var jsonCommands = map[string]bool{"send": true, "watch": true, "version": true, "chat": true, "card": true,
	"get": true, "cancel": true, "list": true, "resubscribe": true,
	"agent": true, "broker": true, "demo": true, "db": true, "passwd": true, "webhook": true}

// wantsJSON reports whether args, a command's arguments, turn --json on
// (before a "--" that ends the flags).
func wantsJSON(args []string) bool {
	on := false
	for _, a := range args {
		switch a {
		case "--":
			return on
		case "-json", "--json", "-json=true", "--json=true", "-json=1", "--json=1":
			on = true
		case "-json=false", "--json=false", "-json=0", "--json=0":
			on = false
		}
	}
	return on
}

// report turns the error of command name into its exit status: the
// message on one line on stderr (its "name: " prefix not doubled), and,
// when asJSON, one JSON object on stdout. ctx is the command's: a command
// that is not a service, stopped by a signal, exits 128 + the signal's
// number whatever its error.
func report(ctx context.Context, name string, err error, asJSON bool, stdout, stderr io.Writer) int {
	var sig *signalled
	if errors.As(context.Cause(ctx), &sig) && !services[name] && err != nil {
		err = &exitError{code: sig.exitStatus(), token: "interrupted", msg: "interrupted"}
	}
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case !errors.As(err, &ee):
		ee = &exitError{code: exitFailed, msg: err.Error()}
	}
	msg := ee.msg
	for _, prefix := range []string{"a2a " + name + ": ", name + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	if msg != "" && !ee.printed {
		fmt.Fprintf(stderr, "a2a %s: %s\n", name, msg)
	}
	if asJSON && ee.code != exitOK && ee.code != exitQueued {
		writeJSONError(stdout, ee, msg)
	}
	return ee.code
}

// jsonError is the object --json prints for an error: the error's token,
// the exit status, the message, and the JSON-RPC code of an error the
// agent answered.
type jsonError struct {
	Error struct {
		Token   string `json:"token"`
		Code    int    `json:"code"`
		Message string `json:"message"`
		RPCCode int    `json:"rpcCode,omitempty"`
	} `json:"error"`
}

func writeJSONError(w io.Writer, ee *exitError, msg string) {
	var j jsonError
	j.Error.Token, j.Error.Code, j.Error.Message, j.Error.RPCCode = ee.tokenOf(), ee.code, msg, ee.rpcCode
	if j.Error.Message == "" {
		j.Error.Message = j.Error.Token
	}
	b, _ := json.Marshal(j)
	fmt.Fprintln(w, string(b))
}
