package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/schemaerr"
)

// defaultMaxValidateBytes bounds what a2a validate reads of one file: the
// largest request an a2abind server accepts by default.
const defaultMaxValidateBytes = jsonrpc.DefaultMaxRequestBytes

// stdinName names standard input in the output.
const stdinName = "<stdin>"

// validators maps every type --type accepts to the generated validator of
// that type: bytes in, a *schemaerr.SyntaxError, a *schemaerr.ValidationError
// or nil out.
var validators = map[string]func([]byte) error{
	"APIKeySecurityScheme":                    a2a.ValidateAPIKeySecuritySchemeJSON,
	"AgentCapabilities":                       a2a.ValidateAgentCapabilitiesJSON,
	"AgentCard":                               a2a.ValidateAgentCardJSON,
	"AgentCardSignature":                      a2a.ValidateAgentCardSignatureJSON,
	"AgentExtension":                          a2a.ValidateAgentExtensionJSON,
	"AgentInterface":                          a2a.ValidateAgentInterfaceJSON,
	"AgentProvider":                           a2a.ValidateAgentProviderJSON,
	"AgentSkill":                              a2a.ValidateAgentSkillJSON,
	"Artifact":                                a2a.ValidateArtifactJSON,
	"AuthenticationInfo":                      a2a.ValidateAuthenticationInfoJSON,
	"AuthorizationCodeOAuthFlow":              a2a.ValidateAuthorizationCodeOAuthFlowJSON,
	"CancelTaskRequest":                       a2a.ValidateCancelTaskRequestJSON,
	"ClientCredentialsOAuthFlow":              a2a.ValidateClientCredentialsOAuthFlowJSON,
	"DeleteTaskPushNotificationConfigRequest": a2a.ValidateDeleteTaskPushNotificationConfigRequestJSON,
	"DeviceCodeOAuthFlow":                     a2a.ValidateDeviceCodeOAuthFlowJSON,
	"Empty":                                   a2a.ValidateEmptyJSON,
	"GetExtendedAgentCardRequest":             a2a.ValidateGetExtendedAgentCardRequestJSON,
	"GetTaskPushNotificationConfigRequest":    a2a.ValidateGetTaskPushNotificationConfigRequestJSON,
	"GetTaskRequest":                          a2a.ValidateGetTaskRequestJSON,
	"HTTPAuthSecurityScheme":                  a2a.ValidateHTTPAuthSecuritySchemeJSON,
	"ImplicitOAuthFlow":                       a2a.ValidateImplicitOAuthFlowJSON,
	"JSONRPCError":                            a2a.ValidateJSONRPCErrorJSON,
	"JSONRPCRequest":                          a2a.ValidateJSONRPCRequestJSON,
	"JSONRPCResponse":                         a2a.ValidateJSONRPCResponseJSON,
	"ListTaskPushNotificationConfigsRequest":  a2a.ValidateListTaskPushNotificationConfigsRequestJSON,
	"ListTaskPushNotificationConfigsResponse": a2a.ValidateListTaskPushNotificationConfigsResponseJSON,
	"ListTasksRequest":                        a2a.ValidateListTasksRequestJSON,
	"ListTasksResponse":                       a2a.ValidateListTasksResponseJSON,
	"Message":                                 a2a.ValidateMessageJSON,
	"MutualTlsSecurityScheme":                 a2a.ValidateMutualTlsSecuritySchemeJSON,
	"OAuth2SecurityScheme":                    a2a.ValidateOAuth2SecuritySchemeJSON,
	"OAuthFlows":                              a2a.ValidateOAuthFlowsJSON,
	"OpenIdConnectSecurityScheme":             a2a.ValidateOpenIdConnectSecuritySchemeJSON,
	"Part":                                    a2a.ValidatePartJSON,
	"PasswordOAuthFlow":                       a2a.ValidatePasswordOAuthFlowJSON,
	"SecurityRequirement":                     a2a.ValidateSecurityRequirementJSON,
	"SecurityScheme":                          a2a.ValidateSecuritySchemeJSON,
	"SendMessageConfiguration":                a2a.ValidateSendMessageConfigurationJSON,
	"SendMessageRequest":                      a2a.ValidateSendMessageRequestJSON,
	"SendMessageResponse":                     a2a.ValidateSendMessageResponseJSON,
	"StreamResponse":                          a2a.ValidateStreamResponseJSON,
	"StringList":                              a2a.ValidateStringListJSON,
	"SubscribeToTaskRequest":                  a2a.ValidateSubscribeToTaskRequestJSON,
	"Task":                                    a2a.ValidateTaskJSON,
	"TaskArtifactUpdateEvent":                 a2a.ValidateTaskArtifactUpdateEventJSON,
	"TaskPushNotificationConfig":              a2a.ValidateTaskPushNotificationConfigJSON,
	"TaskStatus":                              a2a.ValidateTaskStatusJSON,
	"TaskStatusUpdateEvent":                   a2a.ValidateTaskStatusUpdateEventJSON,
}

// typeNames lists the keys of validators, sorted.
func typeNames() []string {
	names := make([]string, 0, len(validators))
	for n := range validators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const validateHelp = `
Each FILE is read whole (at most --max-bytes; "-" reads standard input,
named <stdin> in the output) and checked with the validators generated from
schema/a2a: JSON syntax, every rule of the schema, required members. For a
JSON-RPC request the params are checked as the request type of its method;
for a JSON-RPC response whose result has a recognisable shape, the result is
checked too (at /result).

Output: for each file a verdict line, "FILE: valid (TYPE)" or
"FILE: invalid (TYPE): N violations", followed by one line per violation,
"FILE: /json/pointer: rule: message" ("(document)" stands for the whole
document). With --json, one JSON document on standard output:
{"valid":…, "files":[{"file", "type", "guessed", "resultType", "valid",
"violations":[{"pointer","rule","message"}], "omitted", "error"}]}.

Exit status: 0 when every file is valid; 1 when any is invalid, is not JSON,
or (with --type auto) fits no type; 2 on a usage error (unknown --type, no
FILE, a file that cannot be read or is larger than --max-bytes).

--type auto (the default) tells the type from the members of the document:
  "method" (params checked as the method's request)  JSONRPCRequest
  "result" or "error", with "jsonrpc" or "id"       JSONRPCResponse
  "supportedInterfaces", "skills", "capabilities",
    "defaultInputModes" or "protocolVersion"        AgentCard
  "statusUpdate", "artifactUpdate", or two of
    "task" and "message"                            StreamResponse
  "task"                                            SendMessageResponse
  "message" (in a response's result: SendMessageResponse)
                                                    SendMessageRequest
  "taskId" with "status"                            TaskStatusUpdateEvent
  "taskId" with "artifact"                          TaskArtifactUpdateEvent
  "kind": "task", "message", "status-update" or "artifact-update" (A2A v0.3)
                                                    Task, Message, the events
  "id" with "status", "status" an object, "artifacts" or "history"
                                                    Task
  "role", "parts" or "messageId"                    Message
  "artifactId"                                      Artifact
  "configs"                       ListTaskPushNotificationConfigsResponse
  "tasks" or "nextPageToken"                        ListTasksResponse
  "url" with "token", "authentication" or "taskId"  TaskPushNotificationConfig
  "taskId" with "pageSize" or "pageToken"
                                 ListTaskPushNotificationConfigsRequest
  "pageSize", "pageToken", "statusTimestampAfter" or "includeArtifacts"
                                                    ListTasksRequest
  "text", "raw" or "data", or "url" with "mediaType" or "filename"
                                                    Part
  "apiKeySecurityScheme", "httpAuthSecurityScheme", "oauth2SecurityScheme",
    "openIdConnectSecurityScheme" or "mtlsSecurityScheme"
                                                    SecurityScheme
  "authorizationCode", "clientCredentials", "implicit", "password" or
    "deviceCode"                                    OAuthFlows
  "state"                                           TaskStatus
Anything else is refused: name its type with --type. The verdict line says
which type was chosen.

Pre-commit or CI step (exit 1 fails the step):
  a2a validate --type AgentCard .well-known/agent-card.json
  a2a validate payloads/*.json
  curl -s https://agent.example.com/.well-known/agent-card.json | a2a validate --type AgentCard -

Types (--type):
`

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "[--type TYPE|auto] [--json] [--max-bytes N] FILE... | -",
		"a2a validate --type AgentCard agent-card.json", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		io.WriteString(fs.Output(), validateHelp)
		io.WriteString(fs.Output(), wrapList(typeNames(), 76, "  "))
	}
	typeFlag := fs.String("type", "auto", "the type of every FILE (see the list below), or auto to tell it from each file's shape")
	asJSON := fs.Bool("json", false, "print one JSON document describing every file's verdict")
	maxBytes := fs.Int64("max-bytes", defaultMaxValidateBytes, "largest file read, in bytes; the default, 4 MiB, is the largest request an a2abind server accepts")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	typeName := ""
	if !strings.EqualFold(*typeFlag, "auto") {
		typeName = canonicalType(*typeFlag)
		if typeName == "" {
			return fail(2, "unknown --type %q (auto, or one of the types a2a validate -h lists)", *typeFlag)
		}
	}
	if *maxBytes <= 0 {
		return fail(2, "--max-bytes must be positive")
	}
	if len(files) == 0 {
		return fail(2, "name at least one FILE, or - for standard input")
	}
	if n := count(files, "-"); n > 1 {
		return fail(2, "- (standard input) is named %d times", n)
	}
	var reports []fileReport
	for _, f := range files {
		data, err := readDocument(f, *maxBytes)
		if err != nil {
			return fail(2, "%v", err)
		}
		r := validateDocument(data, typeName)
		r.File = f
		if f == "-" {
			r.File = stdinName
		}
		if !*asJSON {
			r.print(stdout)
		}
		reports = append(reports, r)
	}
	invalid := slices.ContainsFunc(reports, func(r fileReport) bool { return !r.Valid })
	if *asJSON {
		doc := struct {
			Valid bool         `json:"valid"`
			Files []fileReport `json:"files"`
		}{!invalid, reports}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		stdout.Write(append(b, '\n'))
	}
	if invalid {
		return &exitError{code: 1}
	}
	return nil
}

// parseInterleaved parses flags given before, between or after the files
// ("a2a validate a.json --json b.json"), as pre-commit and find -exec
// append file names after the flags a user wrote. Everything after "--" is
// a file.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(files, rest...), nil
		}
		i := 0
		for i < len(rest) && (rest[i] == "-" || !strings.HasPrefix(rest[i], "-")) {
			i++
		}
		files = append(files, rest[:i]...)
		if i == len(rest) {
			return files, nil
		}
		args = rest[i:]
	}
}

// canonicalType returns the type name s stands for, matched regardless of
// case, or "".
func canonicalType(s string) string {
	for n := range validators {
		if strings.EqualFold(n, s) {
			return n
		}
	}
	return ""
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// readAtMost reads the file name ("-" for standard input), at most max
// bytes of it: tooBig reports that it holds more. Its errors name the file
// (stdinName for standard input).
func readAtMost(name string, max int64) (data []byte, tooBig bool, err error) {
	var r io.Reader
	display := name
	if name == "-" {
		r, display = os.Stdin, stdinName
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, false, err // *fs.PathError names the file
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, false, fmt.Errorf("%s: is a directory", name)
		}
		r = f
	}
	data, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", display, err)
	}
	if int64(len(data)) > max {
		return nil, true, nil
	}
	return data, false, nil
}

// readDocument reads the file name ("-" for standard input), refusing one
// of more than max bytes. Its errors name the file.
func readDocument(name string, max int64) ([]byte, error) {
	data, tooBig, err := readAtMost(name, max)
	if tooBig {
		display := name
		if name == "-" {
			display = stdinName
		}
		return nil, fmt.Errorf("%s: larger than --max-bytes %d; raise --max-bytes to check it", display, max)
	}
	return data, err
}

// fileReport is the verdict on one file, as --json prints it.
type fileReport struct {
	File string `json:"file"`
	// Type is the type the file was checked as; empty when auto could not
	// tell it.
	Type string `json:"type,omitempty"`
	// Guessed is true when --type auto chose Type.
	Guessed bool `json:"guessed"`
	// ResultType is the type the result of a JSON-RPC response was
	// checked as, when its shape told it.
	ResultType string      `json:"resultType,omitempty"`
	Valid      bool        `json:"valid"`
	Violations []violation `json:"violations"`
	// Omitted counts the violations found beyond those listed.
	Omitted int `json:"omitted"`
	// Error says why the file was not checked (auto could not tell its
	// type).
	Error string `json:"error,omitempty"`
}

type violation struct {
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (r *fileReport) print(w io.Writer) {
	typ := " (" + r.Type + ")"
	switch {
	case r.Type == "":
		typ = ""
	case r.ResultType != "":
		typ = " (" + r.Type + ", result " + r.ResultType + ")"
	}
	switch {
	case r.Error != "":
		fmt.Fprintf(w, "%s: not checked: %s\n", r.File, r.Error)
		return
	case r.Valid:
		fmt.Fprintf(w, "%s: valid%s\n", r.File, typ)
		return
	}
	n := len(r.Violations) + r.Omitted
	plural := "s"
	if n == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "%s: invalid%s: %d violation%s\n", r.File, typ, n, plural)
	for _, v := range r.Violations {
		p := v.Pointer
		if p == "" {
			p = "(document)"
		}
		fmt.Fprintf(w, "%s: %s: %s: %s\n", r.File, p, v.Rule, v.Message)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(w, "%s: (document): omitted: %d more violations not listed\n", r.File, r.Omitted)
	}
}

// validateDocument checks data as typeName, or as the type its shape tells
// when typeName is "".
func validateDocument(data []byte, typeName string) fileReport {
	r := fileReport{Type: typeName, Violations: []violation{}}
	var top map[string]json.RawMessage
	isObject := json.Unmarshal(data, &top) == nil
	if typeName == "" {
		r.Guessed = true
		if isObject {
			r.Type = guessType(top, false)
		}
		if r.Type == "" {
			// Bytes that are not JSON get the generated decoder's
			// syntax error, whatever the type.
			if err := a2a.ValidateEmptyJSON(data); errors.As(err, new(*schemaerr.SyntaxError)) {
				r.add(err, "", data)
				return r
			}
			if isObject {
				r.Error = "the shape fits no type --type auto knows (see a2a validate -h); name its type with --type"
			} else {
				r.Error = "the document is not a JSON object, so --type auto cannot tell its type; name it with --type"
			}
			return r
		}
	}
	r.add(validators[r.Type](data), "", data)
	// The envelope leaves a response's result unchecked (its type is the
	// method's); check it as the type its shape tells.
	if r.Type == "JSONRPCResponse" && isObject {
		var result map[string]json.RawMessage
		if raw, ok := top["result"]; ok && json.Unmarshal(raw, &result) == nil {
			if t := guessType(result, true); t != "" {
				r.ResultType = t
				r.add(validators[t](raw), "/result", nil)
			}
		}
	}
	r.Valid = len(r.Violations) == 0 && r.Omitted == 0
	return r
}

// add records the violations of err, their pointers under prefix; data
// locates a syntax error by line and column.
func (r *fileReport) add(err error, prefix string, data []byte) {
	var verr *schemaerr.ValidationError
	var serr *schemaerr.SyntaxError
	switch {
	case err == nil:
	case errors.As(err, &verr):
		for _, v := range verr.Violations {
			r.Violations = append(r.Violations, violation{Pointer: prefix + v.Pointer, Rule: v.Rule, Message: v.Message})
		}
		r.Omitted += verr.Omitted
	case errors.As(err, &serr):
		line, col := lineColumn(data, serr.Offset)
		r.Violations = append(r.Violations, violation{Pointer: prefix, Rule: "syntax",
			Message: fmt.Sprintf("invalid JSON at line %d, column %d (offset %d): %s", line, col, serr.Offset, serr.Msg)})
	default:
		r.Violations = append(r.Violations, violation{Pointer: prefix, Rule: "error", Message: err.Error()})
	}
}

// lineColumn turns a byte offset of data into a 1-based line and column
// (in bytes).
func lineColumn(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = offset - bytes.LastIndexByte(before, '\n')
	return line, col
}

// guessType tells the type of a JSON object from its members, or returns
// "" when they fit none (the rules a2a validate -h lists). inResult is set
// for the result of a JSON-RPC response, where "message" alone is the
// SendMessage result, not its request.
func guessType(m map[string]json.RawMessage, inResult bool) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
		return false
	}
	if !inResult {
		switch {
		case has("method"):
			return "JSONRPCRequest"
		case has("result", "error") && has("jsonrpc", "id"):
			return "JSONRPCResponse"
		case has("jsonrpc"):
			return "JSONRPCRequest"
		}
	}
	oneofs := 0
	for _, k := range []string{"task", "message", "statusUpdate", "artifactUpdate"} {
		if has(k) {
			oneofs++
		}
	}
	var kind string
	if raw, ok := m["kind"]; ok {
		json.Unmarshal(raw, &kind)
	}
	switch {
	case has("supportedInterfaces", "skills", "capabilities", "defaultInputModes", "protocolVersion"):
		return "AgentCard"
	case has("statusUpdate", "artifactUpdate") || oneofs > 1:
		return "StreamResponse"
	case has("task"):
		return "SendMessageResponse"
	case has("message") && inResult:
		return "SendMessageResponse"
	case has("message"):
		return "SendMessageRequest"
	case has("taskId") && has("status") || kind == "status-update":
		return "TaskStatusUpdateEvent"
	case has("taskId") && has("artifact") || kind == "artifact-update":
		return "TaskArtifactUpdateEvent"
	case kind == "task":
		return "Task"
	case kind == "message":
		return "Message"
	case has("id") && has("status") || isObject(m["status"]) || has("artifacts", "history"):
		return "Task"
	case has("role", "parts", "messageId"):
		return "Message"
	case has("artifactId"):
		return "Artifact"
	case has("configs"):
		return "ListTaskPushNotificationConfigsResponse"
	case has("tasks", "nextPageToken"):
		return "ListTasksResponse"
	case has("url") && has("token", "authentication", "taskId"):
		return "TaskPushNotificationConfig"
	case has("taskId") && has("pageSize", "pageToken"):
		return "ListTaskPushNotificationConfigsRequest"
	case has("pageSize", "pageToken", "statusTimestampAfter", "includeArtifacts"):
		return "ListTasksRequest"
	case has("text", "raw", "data") || has("url") && has("mediaType", "filename"):
		return "Part"
	case has("apiKeySecurityScheme", "httpAuthSecurityScheme", "oauth2SecurityScheme", "openIdConnectSecurityScheme", "mtlsSecurityScheme"):
		return "SecurityScheme"
	case has("authorizationCode", "clientCredentials", "implicit", "password", "deviceCode"):
		return "OAuthFlows"
	case has("state"):
		return "TaskStatus"
	}
	return ""
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// wrapList joins words with ", " in lines of at most width columns, each
// starting with indent.
func wrapList(words []string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for i, w := range words {
		if i < len(words)-1 {
			w += ","
		}
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}
