package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vdir holds the payloads a2a validate is run over.
const vdir = "testdata/validate/"

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(vdir + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// manyBadParts is a message with more invalid parts than a validator lists.
func manyBadParts() string {
	return `{"messageId":"m1","role":"ROLE_USER","parts":[{}` + strings.Repeat(`,{}`, 149) + `]}`
}

// TestValidateVerdicts runs a2a validate over valid and invalid payloads of
// several types, from files and standard input, and checks the verdict and
// violation lines and the exit status.
func TestValidateVerdicts(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		// lines must each be a whole line of stdout; absent must not occur
		// in it.
		lines  []string
		absent []string
	}{
		{"a valid Agent Card, type given",
			[]string{"validate", "--type", "AgentCard", vdir + "agent-card.json"}, "", 0,
			[]string{vdir + "agent-card.json: valid (AgentCard)"}, nil},
		{"an invalid Agent Card: one line per violation, at its pointer, sorted",
			[]string{"validate", "--type", "AgentCard", vdir + "agent-card-invalid.json"}, "", 1,
			[]string{
				vdir + "agent-card-invalid.json: invalid (AgentCard): 3 violations",
				vdir + `agent-card-invalid.json: /capabilities/streaming: type: got string, want boolean`,
				vdir + `agent-card-invalid.json: /name: required: missing property "name"`,
				vdir + `agent-card-invalid.json: /skills: minItems: fewer than 1 items`,
			}, nil},
		{"auto tells each valid payload's type from its shape",
			[]string{"validate", vdir + "agent-card.json", vdir + "task.json", vdir + "message.json",
				vdir + "send-message-request.json", vdir + "jsonrpc-send-message.json",
				vdir + "jsonrpc-response-task.json", vdir + "stream-status-update.json"}, "", 0,
			[]string{
				vdir + "agent-card.json: valid (AgentCard)",
				vdir + "task.json: valid (Task)",
				vdir + "message.json: valid (Message)",
				vdir + "send-message-request.json: valid (SendMessageRequest)",
				vdir + "jsonrpc-send-message.json: valid (JSONRPCRequest)",
				vdir + "jsonrpc-response-task.json: valid (JSONRPCResponse, result SendMessageResponse)",
				vdir + "stream-status-update.json: valid (StreamResponse)",
			}, nil},
		{"auto finds the violations of invalid payloads of several types",
			[]string{"validate", vdir + "task-invalid.json", vdir + "message-invalid.json",
				vdir + "jsonrpc-send-message-invalid.json"}, "", 1,
			[]string{
				vdir + "task-invalid.json: invalid (Task): 1 violation",
				vdir + `task-invalid.json: /status/state: enum: unknown value "DONE"`,
				vdir + "message-invalid.json: invalid (Message): 2 violations",
				vdir + `message-invalid.json: /parts: required: missing property "parts"`,
				vdir + `message-invalid.json: /role: enum: unknown value "ROLE_BOSS"`,
				vdir + `jsonrpc-send-message-invalid.json: /params/message/messageId: required: missing property "messageId"`,
			}, nil},
		{"the result of a JSON-RPC response is checked at /result",
			[]string{"validate", vdir + "jsonrpc-response-task-invalid.json"}, "", 1,
			[]string{
				vdir + "jsonrpc-response-task-invalid.json: invalid (JSONRPCResponse, result SendMessageResponse): 1 violation",
				vdir + `jsonrpc-response-task-invalid.json: /result/task/status/state: enum: unknown value "WORKING"`,
			}, nil},
		{"one invalid file among valid ones makes the exit status 1",
			[]string{"validate", vdir + "task.json", vdir + "task-invalid.json", vdir + "message.json"}, "", 1,
			[]string{vdir + "task.json: valid (Task)", vdir + "task-invalid.json: invalid (Task): 1 violation",
				vdir + "message.json: valid (Message)"}, nil},
		{"standard input with a type",
			[]string{"validate", "--type", "Task", "-"}, fixture(t, "task-invalid.json"), 1,
			[]string{"<stdin>: invalid (Task): 1 violation", `<stdin>: /status/state: enum: unknown value "DONE"`}, nil},
		{"standard input with auto, beside a file",
			[]string{"validate", vdir + "task.json", "-"}, fixture(t, "agent-card.json"), 0,
			[]string{vdir + "task.json: valid (Task)", "<stdin>: valid (AgentCard)"}, nil},
		{"a type named in any case",
			[]string{"validate", "--type", "agentcard", vdir + "agent-card.json"}, "", 0,
			[]string{vdir + "agent-card.json: valid (AgentCard)"}, nil},
		{"a given type wins over the shape",
			[]string{"validate", "--type", "Message", vdir + "task.json"}, "", 1,
			[]string{vdir + "task.json: invalid (Message): 3 violations",
				vdir + `task.json: /messageId: required: missing property "messageId"`}, nil},
		{"bytes that are not JSON: a syntax violation with line and column",
			[]string{"validate", vdir + "not-json.json"}, "", 1,
			[]string{vdir + "not-json.json: invalid: 1 violation",
				vdir + "not-json.json: (document): syntax: invalid JSON at line 3, column 1 (offset 61): expected , or } after object member"}, nil},
		{"a shape auto does not know is refused, naming --type",
			[]string{"validate", vdir + "unknown-shape.json"}, "", 1,
			[]string{vdir + "unknown-shape.json: not checked: the shape fits no type --type auto knows (see a2a validate -h); name its type with --type"},
			[]string{": valid ("}},
		{"a document that is not an object is refused under auto",
			[]string{"validate", "-"}, `[{"id":"task-1"}]`, 1,
			[]string{"<stdin>: not checked: the document is not a JSON object, so --type auto cannot tell its type; name it with --type"}, nil},
		{"... and checked when the type is given",
			[]string{"validate", "--type", "Task", "-"}, `[{"id":"task-1"}]`, 1,
			[]string{"<stdin>: (document): type: got array, want object"}, []string{": valid (Task)"}},
		{"flags after the files, as pre-commit appends the files",
			[]string{"validate", vdir + "task-invalid.json", "--type", "Task"}, "", 1,
			[]string{vdir + "task-invalid.json: invalid (Task): 1 violation"}, nil},
		{"past 100 violations the rest are counted",
			[]string{"validate", "-"}, manyBadParts(), 1,
			[]string{"<stdin>: invalid (Message): 150 violations", "<stdin>: (document): omitted: 50 more violations not listed"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdin *strings.Reader
			if tc.stdin != "" {
				stdin = strings.NewReader(tc.stdin)
			}
			r := runWith(t, nil, readerOrNil(stdin), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%sstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			got := strings.Split(r.stdout, "\n")
			for _, want := range tc.lines {
				if !contains(got, want) {
					t.Errorf("stdout lacks the line %q\nstdout:\n%s", want, r.stdout)
				}
			}
			for _, bad := range tc.absent {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("stdout has %q\nstdout:\n%s", bad, r.stdout)
				}
			}
			if r.stderr != "" {
				t.Errorf("stderr %q, want none", r.stderr)
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// TestValidateUsageErrors: a wrong invocation or a file that cannot be read
// exits 2 with one message naming the flag or the file.
func TestValidateUsageErrors(t *testing.T) {
	big := fixture(t, "agent-card.json")
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"an unknown --type", []string{"validate", "--type", "Card", vdir + "task.json"}, "", `unknown --type "Card"`},
		{"no file", []string{"validate", "--type", "Task"}, "", "name at least one FILE, or - for standard input"},
		{"standard input twice", []string{"validate", "-", "-"}, "{}", "- (standard input) is named 2 times"},
		{"a missing file", []string{"validate", vdir + "task.json", vdir + "nope.json"}, "", vdir + "nope.json: no such file"},
		{"a directory", []string{"validate", "testdata/validate"}, "", "testdata/validate: is a directory"},
		{"a file past --max-bytes", []string{"validate", "--max-bytes", "100", vdir + "agent-card.json"}, "",
			vdir + "agent-card.json: larger than --max-bytes 100"},
		{"standard input past --max-bytes", []string{"validate", "--max-bytes", "100", "-"}, big, "<stdin>: larger than --max-bytes 100"},
		{"--max-bytes 0", []string{"validate", "--max-bytes", "0", vdir + "task.json"}, "", "--max-bytes must be positive"},
		{"an unknown flag", []string{"validate", vdir + "task.json", "--nope"}, "", "flag provided but not defined: -nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, nil, readerOrNil(strings.NewReader(tc.stdin)), tc.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%sstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", r.stderr, tc.want)
			}
		})
	}
}

// readerOrNil gives the command no stdin (reading it ends at once) for
// an empty or nil reader.
func readerOrNil(r *strings.Reader) io.Reader {
	if r == nil || r.Len() == 0 {
		return nil
	}
	return r
}

// TestValidateJSON: --json prints one document with every file's verdict,
// the type chosen and whether auto chose it, and the violations.
func TestValidateJSON(t *testing.T) {
	type doc struct {
		Valid bool `json:"valid"`
		Files []struct {
			File       string `json:"file"`
			Type       string `json:"type"`
			Guessed    bool   `json:"guessed"`
			ResultType string `json:"resultType"`
			Valid      bool   `json:"valid"`
			Violations []struct {
				Pointer, Rule, Message string
			} `json:"violations"`
			Omitted int    `json:"omitted"`
			Error   string `json:"error"`
		} `json:"files"`
	}
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
		check func(t *testing.T, d doc)
	}{
		{"all valid: valid true, exit 0",
			[]string{"validate", "--json", vdir + "agent-card.json", vdir + "jsonrpc-response-task.json"}, "", 0,
			func(t *testing.T, d doc) {
				if !d.Valid || len(d.Files) != 2 {
					t.Fatalf("%+v", d)
				}
				f := d.Files[1]
				if f.Type != "JSONRPCResponse" || !f.Guessed || f.ResultType != "SendMessageResponse" || !f.Valid || f.Violations == nil || len(f.Violations) != 0 {
					t.Fatalf("%+v", f)
				}
			}},
		{"a given type is not guessed; violations carry pointer, rule and message",
			[]string{"validate", "--json", "--type", "AgentCard", vdir + "agent-card-invalid.json"}, "", 1,
			func(t *testing.T, d doc) {
				f := d.Files[0]
				if d.Valid || f.Guessed || f.Valid || f.Type != "AgentCard" || len(f.Violations) != 3 {
					t.Fatalf("%+v", d)
				}
				if v := f.Violations[1]; v.Pointer != "/name" || v.Rule != "required" || !strings.Contains(v.Message, "name") {
					t.Fatalf("%+v", v)
				}
			}},
		{"standard input, not JSON, and a refused shape",
			[]string{"validate", vdir + "unknown-shape.json", "-", "--json"}, fixture(t, "not-json.json"), 1,
			func(t *testing.T, d doc) {
				if d.Valid || len(d.Files) != 2 {
					t.Fatalf("%+v", d)
				}
				refused, stdin := d.Files[0], d.Files[1]
				if refused.Type != "" || refused.Valid || !strings.Contains(refused.Error, "--type") {
					t.Fatalf("%+v", refused)
				}
				if stdin.File != "<stdin>" || stdin.Valid || len(stdin.Violations) != 1 || stdin.Violations[0].Rule != "syntax" || stdin.Violations[0].Pointer != "" {
					t.Fatalf("%+v", stdin)
				}
			}},
		{"the count past the listed violations",
			[]string{"validate", "--json", "-"}, manyBadParts(), 1,
			func(t *testing.T, d doc) {
				if f := d.Files[0]; len(f.Violations) != 100 || f.Omitted != 50 {
					t.Fatalf("%d listed, %d omitted", len(f.Violations), f.Omitted)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, nil, readerOrNil(strings.NewReader(tc.stdin)), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%sstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			var d doc
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&d); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
			}
			if dec.More() {
				t.Fatalf("more than one JSON document on stdout:\n%s", r.stdout)
			}
			tc.check(t, d)
		})
	}
}

// TestValidateHelp: -h shows the synopsis, an example, auto's rules and
// every type --type accepts.
func TestValidateHelp(t *testing.T) {
	r := runCLI(t, nil, "validate", "-h")
	out := r.stdout + r.stderr
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, out)
	}
	for _, want := range append([]string{"usage: a2a validate", "example:", "--type auto", "Exit status", "Pre-commit"}, typeNames()...) {
		if !strings.Contains(out, want) {
			t.Errorf("-h does not mention %q", want)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "    \t") && !strings.Contains(line, "curl") && len(line) > 80 {
			t.Errorf("help line over 80 columns: %q", line)
		}
	}
}

// TestValidateFixturesAreUsed: every file under testdata/validate is used
// by a case above.
func TestValidateFixturesAreUsed(t *testing.T) {
	src, err := os.ReadFile("validate_test.go")
	if err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(vdir + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no fixtures")
	}
	for _, n := range names {
		if !strings.Contains(string(src), `"`+filepath.Base(n)+`"`) {
			t.Errorf("fixture %s is used by no case", n)
		}
	}
}
