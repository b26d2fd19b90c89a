package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
)

const chatHelp = `
A conversation with one agent: each line of standard input is a turn,
all in one context (--context C continues an earlier one). A new line
starts a new task in the context; after a task that asks for input
(INPUT_REQUIRED, AUTH_REQUIRED) the question is printed ("question ...",
and on a terminal the prompt becomes "answer> "), and the next line
answers it: the same task goes on. The agent's artifacts and messages are
printed as they come in its answer; a task that ends otherwise (FAILED,
REJECTED, CANCELED) is said so, and the next line starts a new task.

"/quit" (or "/exit") or the end of standard input ends the chat; it reads
a pipe as well as a terminal (printf 'ask me\nblue\n' | a2a chat --to
echo). A line is at most 4 MiB. --timeout bounds each turn.

--json prints, for each turn, the task (or message) the agent answered
with, then {"taskId","contextId","state"}, as a2a send --json does.

Exit status: 0 when the chat ended at /quit or at the end of the input,
whatever the tasks' states; 1 when the agent answered an error (the chat
stops there); 3 when it cannot be reached; 4 when a turn took longer than
--timeout; 130 on Ctrl-C.
`

func runChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chat", "((--to ID [--broker URL] [--org O --unit U]) | --url URL) [--context C] [--timeout D] [--json] [--token-file F] [flags of a2a send's connection]",
		"a2a chat --to echo --org acme --unit lab\n  printf 'ask me\\nblue\\n' | a2a chat --url http://127.0.0.1:8080", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		io.WriteString(fs.Output(), chatHelp+targetHelp+"\n"+envHelp+"\n"+exitCodesHelp)
	}
	t := addTargetFlags(fs, "give up on a turn after this long (exit status 4)")
	contextID := fs.String("context", "", "contextId of the conversation to continue (default: a new one)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q: the turns come from standard input", fs.Arg(0))
	}
	if !t.overHTTP() && *contextID != "" && !mqttbind.ValidUUID(*contextID) {
		return fail(exitUsage, "--context: %q is not a UUID", *contextID)
	}
	if *t.timeout <= 0 {
		return fail(exitUsage, "--timeout must be positive")
	}
	dctx, cancel := context.WithTimeout(ctx, *t.timeout)
	p, err := t.dial(dctx, stderr)
	err = timedOut(dctx, err, *t.timeout)
	cancel()
	if err != nil {
		return err
	}
	defer p.close()
	if *contextID == "" {
		*contextID = uuid.NewString()
	}
	c := &chat{peer: p, out: &printer{w: stdout, json: *t.asJSON, root: p.root}, contextID: *contextID, tty: isTerminal(os.Stdin) && isTerminal(stderr), stderr: stderr}
	if !c.out.json {
		fmt.Fprintf(stdout, "chat with %s, context %s (/quit or the end of the input ends it)\n", p.name, *contextID)
	}
	lines := readLines(ctx, os.Stdin)
	for {
		c.prompt()
		var l line
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l = <-lines:
		}
		if l.err != nil {
			return l.err
		}
		if l.eof {
			return nil
		}
		text := strings.TrimSpace(l.text)
		switch text {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		tctx, cancel := context.WithTimeout(ctx, *t.timeout)
		err := c.turn(tctx, text)
		err = timedOut(tctx, err, *t.timeout)
		cancel()
		if err != nil {
			return err
		}
	}
}

// chat is a conversation in progress.
type chat struct {
	peer      *peer
	out       *printer
	contextID string
	// waiting is the task that asked for input ("" when none): the next
	// line answers it.
	waiting string
	tty     bool
	stderr  io.Writer
}

// prompt shows, on a terminal, what the next line is.
func (c *chat) prompt() {
	if !c.tty {
		return
	}
	if c.waiting != "" {
		io.WriteString(c.stderr, "answer> ")
		return
	}
	io.WriteString(c.stderr, "> ")
}

// turn sends one line: a new task in the context, or the answer to the
// task that asked for input.
func (c *chat) turn(ctx context.Context, text string) error {
	req := requester.TextMessage(text, c.waiting, c.contextID)
	res, err := c.peer.c.SendMessage(ctx, req, c.peer.opts...)
	if err != nil {
		var q *requester.Queued
		if errors.As(err, &q) {
			return c.out.failed(err, c.peer.endpoint)
		}
		return c.peer.sendError(err)
	}
	if res.Message != nil {
		c.waiting = ""
		if c.out.json {
			c.out.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: res.Message}, Responder: res.Responder})
			return nil
		}
		fmt.Fprintf(c.out.w, "message     %s\n", agent.TextOf(res.Message))
		return nil
	}
	task := res.Task
	if task.ContextID != "" {
		c.contextID = task.ContextID
	}
	state := a2a.TaskState("")
	if task.Status != nil {
		state = task.Status.State
	}
	c.waiting = ""
	if state == a2a.TaskStateInputRequired || state == a2a.TaskStateAuthRequired {
		c.waiting = task.ID
	}
	if c.out.json {
		c.out.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: task}, Responder: res.Responder})
		c.out.state(task)
		return nil
	}
	w := c.out.w
	if res.Responder != "" {
		fmt.Fprintf(w, "responder   %s\n", res.Responder)
	}
	for _, a := range task.Artifacts {
		fmt.Fprintf(w, "artifact    %s\n", demo.PartsText(a.Parts))
	}
	question := ""
	if task.Status != nil && task.Status.Message != nil {
		question = agent.TextOf(task.Status.Message)
	}
	switch {
	case c.waiting != "" && question != "":
		fmt.Fprintf(w, "question    %s\n", question)
	case c.waiting != "":
		fmt.Fprintf(w, "question    (task %s asks for input)\n", task.ID)
	case state == a2a.TaskStateCompleted:
		fmt.Fprintf(w, "done        task %s COMPLETED\n", task.ID)
	default:
		line := fmt.Sprintf("ended       task %s %s", task.ID, state)
		if question != "" {
			line += ": " + question
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// line is one line of standard input, or its end or its error.
type line struct {
	text string
	eof  bool
	err  error
}

// readLines reads r line by line (each at most maxTextBytes) until its
// end, an error, or ctx's end.
func readLines(ctx context.Context, r io.Reader) <-chan line {
	ch := make(chan line)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxTextBytes)
		send := func(l line) bool {
			select {
			case ch <- l:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for sc.Scan() {
			if !send(line{text: sc.Text()}) {
				return
			}
		}
		if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
			send(line{err: fail(exitFailed, "standard input: a line is longer than %d bytes (%d MiB), the agents' default request limit", maxTextBytes, maxTextBytes>>20)})
			return
		} else if err != nil {
			send(line{err: fail(exitFailed, "reading standard input: %v", err)})
			return
		}
		send(line{eof: true})
	}()
	return ch
}
