package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// maxPasswordLine bounds a password read from stdin.
const maxPasswordLine = 64 << 10

// stdin is what a2a passwd reads the password from (tests replace it).
var stdin io.Reader = os.Stdin

// runPasswd manages a password file of the embedded broker (and of
// mosquitto 2.0: the same password_file format), as mosquitto_passwd does.
func runPasswd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	set := newFlags("passwd", "[-c] [-I N] [--json] FILE USER | -b [-c] [-I N] [--json] FILE USER PASSWORD | -D [--json] FILE USER",
		"a2a passwd broker.passwd acme/lab/echo", stderr)
	set.Usage = passwdUsage(set)
	batch := set.Bool("b", false, "take the password from the command line (it shows in ps: prefer the prompt, or a line on stdin)")
	create := set.Bool("c", false, "create a new file, replacing any existing one")
	del := set.Bool("D", false, "delete the user")
	iterations := set.Int("I", broker.DefaultPasswordIterations, "PBKDF2-HMAC-SHA512 iterations (mosquitto_passwd 2.0 writes 101; both brokers read any count)")
	asJSON := set.Bool("json", false, "print what changed as one JSON object (see above); errors as {\"error\":{...}}")
	if err := parseInOrder(set, args); err != nil {
		return err
	}
	want := 2
	if *batch {
		want = 3
	}
	switch {
	case set.NArg() != want:
		set.Usage()
		return fail(exitUsage, "want FILE USER%s, got %d arguments", map[bool]string{true: " PASSWORD"}[*batch], set.NArg())
	case *del && (*batch || *create):
		return fail(exitUsage, "-D goes alone")
	case *iterations < 1:
		return fail(exitUsage, "-I must be positive")
	}
	path, user := set.Arg(0), set.Arg(1)
	if err := broker.CheckUsername(user); err != nil {
		return fail(exitUsage, "USER: %v", err)
	}

	f := new(broker.PasswordFile)
	created := *create
	if !*create {
		var err error
		f, err = broker.ReadPasswordFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !*del:
			f, created = new(broker.PasswordFile), true
		case err != nil:
			return fail(exitFailed, "%v", err)
		}
	}
	if *del {
		if err := f.Delete(user); err != nil {
			return fail(exitFailed, "%v", err)
		}
		if err := f.WriteFile(path); err != nil {
			return fail(exitFailed, "%v", err)
		}
		if *asJSON {
			writeJSONLine(stdout, passwdChange{Action: "deleted", User: user, File: path, Identity: validIdentity(user)})
			return nil
		}
		fmt.Fprintf(stdout, "a2a passwd: deleted %s from %s\n", user, path)
		return nil
	}

	var password string
	if *batch {
		password = set.Arg(2)
	} else {
		var err error
		if password, err = readPassword(stderr); err != nil {
			return err
		}
	}
	if err := f.Set(user, password, *iterations); err != nil {
		return fail(exitFailed, "%v", err)
	}
	if err := f.WriteFile(path); err != nil {
		return fail(exitFailed, "%v", err)
	}
	if *asJSON {
		writeJSONLine(stdout, passwdChange{Action: "set", User: user, File: path, Created: created, Iterations: *iterations, Identity: validIdentity(user)})
	} else {
		fmt.Fprintf(stdout, "a2a passwd: set the password of %s in %s\n", user, path)
	}
	if !validIdentity(user) {
		fmt.Fprintf(stderr, "a2a passwd: note: %s is not an {org_id}/{unit_id}/{agent_id} Client ID, so the broker's identity rules "+
			"give it nothing: grant it rules in an --acl-file\n", user)
	}
	return nil
}

// passwdChange is what a2a passwd --json prints: the change (set or
// deleted), the user, the file, whether the file was created, the PBKDF2
// iterations of a password set, and whether the user is an
// {org_id}/{unit_id}/{agent_id} Client ID (the broker's identity rules
// give any other user nothing).
type passwdChange struct {
	Action     string `json:"action"`
	User       string `json:"user"`
	File       string `json:"file"`
	Created    bool   `json:"created"`
	Iterations int    `json:"iterations,omitempty"`
	Identity   bool   `json:"identity"`
}

func passwdUsage(set *flag.FlagSet) func() {
	return func() {
		fmt.Fprint(set.Output(), `usage: a2a passwd [-c] [-I N] [--json] FILE USER           set USER's password (prompted, or one line on stdin)
       a2a passwd -b [-c] [-I N] [--json] FILE USER PASSWORD  set it from the command line
       a2a passwd -D [--json] FILE USER                       delete USER

FILE is a mosquitto 2.0 password_file (USER:$7$N$salt$hash, PBKDF2-HMAC-SHA512),
read by a2a broker --password-file and by mosquitto alike; it is created if
missing (mode 0600). USER is the Client ID the user connects with:
{org_id}/{unit_id}/{agent_id} for agents, requesters and watchers.

--json prints what changed as one JSON object on stdout:
  {"action":"set"|"deleted","user":U,"file":F,"created":BOOL,"iterations":N,"identity":BOOL}
(identity false: USER is no {org_id}/{unit_id}/{agent_id} Client ID, and
the note on stderr says so). Every a2a command takes --json; an error is
one object {"error":{"token","code","message"}}, the exit status unchanged.

example:
  a2a passwd broker.passwd acme/lab/echo

flags:
`)
		set.PrintDefaults()
	}
}

// readPassword prompts twice, without echo, when stdin is a terminal, and
// otherwise reads one line of stdin.
func readPassword(stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && passwdTerminal(f) {
		p1, err := readNoEcho(f, stderr, "Password: ")
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fail(exitFailed, "reading the password: %v", err)
		}
		p2, err := readNoEcho(f, stderr, "Reenter password: ")
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fail(exitFailed, "reading the password: %v", err)
		}
		if p1 != p2 {
			return "", fail(exitFailed, "the passwords do not match")
		}
		return p1, nil
	}
	line, err := bufio.NewReaderSize(io.LimitReader(stdin, maxPasswordLine), 4096).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fail(exitFailed, "reading the password from stdin: %v", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", fail(exitFailed, "no password on stdin (one line is read)")
	}
	return line, nil
}

// validIdentity reports whether user is an {org_id}/{unit_id}/{agent_id}
// Client ID.
func validIdentity(user string) bool {
	parts := strings.Split(user, "/")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		if checkIDs([]string{"org", "unit", "id"}[i], p) != nil {
			return false
		}
	}
	return true
}
