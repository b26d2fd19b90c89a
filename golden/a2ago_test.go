package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// Payloads written by the official Go SDK (github.com/a2aproject/a2a-go/v2,
// the version in go.mod): values of its own types passed to json.Marshal,
// the JSON-RPC requests its client sends (captured by an http.RoundTripper)
// and the JSON-RPC responses its server handler writes (captured by an
// httptest.ResponseRecorder). TestA2AGoPayloadsUpToDate keeps them in
// payloads/a2a-go/ (rewritten with -update), where TestDifferential checks
// them against payloads/a2a-go/verdicts.json like any other corpus entry.
// docs/conformance.md tabulates the verdicts.

// sdkDir holds the SDK's payloads.
var sdkDir = filepath.Join(payloadDir, "a2a-go")

// Fixed values, so that the payloads are the same on every run.
var (
	sdkTime      = time.Date(2025, 10, 28, 10, 30, 0, 123000000, time.UTC)
	sdkLocalTime = time.Date(2025, 10, 28, 12, 30, 0, 0, time.FixedZone("CEST", 2*60*60))
	sdkTaskID    = a2ago.TaskID("0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f10")
	sdkContextID = "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f11"
)

func TestA2AGoPayloadsUpToDate(t *testing.T) {
	got := map[string][]byte{}
	for name, v := range sdkValues() {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", name, err)
		}
		got[name] = data
	}
	for name, data := range sdkClientRequests(t) {
		got[name] = data
	}
	for name, data := range sdkServerResponses(t) {
		got[name] = data
	}

	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(sdkDir, name+".json")
		data := got[name]
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run go test ./golden -run TestA2AGoPayloadsUpToDate -update)", name, err)
			continue
		}
		if !bytes.Equal(want, data) {
			t.Errorf("%s: the SDK now writes\n%s\nwhere payloads/a2a-go/%s.json holds\n%s(run with -update and review verdicts.json)", name, data, name, want)
		}
	}
	files, err := filepath.Glob(filepath.Join(sdkDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if _, ok := got[name]; !ok && name != "verdicts" {
			t.Errorf("payloads/a2a-go/%s.json is not produced by this test any more", name)
		}
	}
}

// sdkValues are values of the SDK's types, by payload name.
func sdkValues() map[string]any {
	skill := a2ago.AgentSkill{
		ID:          "route",
		Name:        "Route planner",
		Description: "Plans a route between two places.",
		Tags:        []string{"maps", "routing"},
		Examples:    []string{"Plan a route from A to B"},
		InputModes:  []string{"text/plain"},
		OutputModes: []string{"application/json"},
	}
	minimalCard := a2ago.AgentCard{
		Name:        "Route Agent",
		Description: "Plans routes.",
		SupportedInterfaces: []*a2ago.AgentInterface{
			a2ago.NewAgentInterface("https://agent.example.com/a2a", a2ago.TransportProtocolJSONRPC),
		},
		Version:            "1.0.0",
		Capabilities:       a2ago.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2ago.AgentSkill{skill},
	}
	schemes := a2ago.NamedSecuritySchemes{
		"apiKey": a2ago.APIKeySecurityScheme{Location: a2ago.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"},
		"bearer": a2ago.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"},
		"google": a2ago.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://accounts.google.com/.well-known/openid-configuration"},
		"mtls":   a2ago.MutualTLSSecurityScheme{Description: "client certificate"},
		"oauth": a2ago.OAuth2SecurityScheme{Flows: a2ago.AuthorizationCodeOAuthFlow{
			AuthorizationURL: "https://auth.example.com/authorize",
			TokenURL:         "https://auth.example.com/token",
			Scopes:           map[string]string{"routes": "Plan routes"},
			PKCERequired:     true,
		}},
		"device": a2ago.OAuth2SecurityScheme{Flows: a2ago.DeviceCodeOAuthFlow{
			DeviceAuthorizationURL: "https://auth.example.com/device",
			TokenURL:               "https://auth.example.com/token",
			Scopes:                 map[string]string{},
		}},
	}
	withSchemes := minimalCard
	withSchemes.SecuritySchemes = schemes

	withRequirements := withSchemes
	withRequirements.SecurityRequirements = a2ago.SecurityRequirementsOptions{
		{"oauth": {"routes"}},
		{"apiKey": {}, "mtls": {}},
	}
	securedSkill := skill
	securedSkill.SecurityRequirements = a2ago.SecurityRequirementsOptions{{"google": {"openid", "profile"}}}
	withRequirements.Skills = []a2ago.AgentSkill{securedSkill}

	fullCard := withRequirements
	fullCard.SupportedInterfaces = []*a2ago.AgentInterface{
		a2ago.NewAgentInterface("https://agent.example.com/a2a", a2ago.TransportProtocolJSONRPC),
		a2ago.NewAgentInterface("https://agent.example.com/grpc", a2ago.TransportProtocolGRPC),
		{URL: "https://agent.example.com/rest", ProtocolBinding: a2ago.TransportProtocolHTTPJSON, ProtocolVersion: "1.0", Tenant: "acme"},
	}
	fullCard.Provider = &a2ago.AgentProvider{Org: "Example Inc.", URL: "https://example.com"}
	fullCard.DocumentationURL = "https://docs.example.com/route-agent"
	fullCard.IconURL = "https://agent.example.com/icon.png"
	fullCard.Capabilities = a2ago.AgentCapabilities{
		Streaming: true, PushNotifications: true, ExtendedAgentCard: true,
		Extensions: []a2ago.AgentExtension{{URI: "https://example.com/ext/geo/v1", Description: "geo", Params: map[string]any{"units": "metric"}}},
	}
	fullCard.Signatures = []a2ago.AgentCardSignature{{Protected: "eyJhbGciOiJFUzI1NiJ9", Signature: "QFdkNLNszlGj3z3u0YQGt_T9", Header: map[string]any{"kid": "key-1"}}}

	untaggedCard := minimalCard
	untaggedSkill := skill
	untaggedSkill.Tags = nil
	untaggedCard.Skills = []a2ago.AgentSkill{untaggedSkill}

	userMsg := &a2ago.Message{
		ID:        "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f01",
		Role:      a2ago.MessageRoleUser,
		ContextID: sdkContextID,
		Parts:     a2ago.ContentParts{a2ago.NewTextPart("Plan a route to the airport.")},
	}
	allParts := &a2ago.Message{
		ID:             "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f02",
		Role:           a2ago.MessageRoleAgent,
		ContextID:      sdkContextID,
		TaskID:         sdkTaskID,
		Extensions:     []string{"https://example.com/ext/geo/v1"},
		ReferenceTasks: []a2ago.TaskID{"0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f00"},
		Metadata:       map[string]any{"trace": map[string]any{"id": "abc", "hops": []any{1, 2}}},
		Parts: a2ago.ContentParts{
			a2ago.NewTextPart("Here is your route."),
			{Content: a2ago.Raw([]byte{0x89, 'P', 'N', 'G'}), Filename: "map.png", MediaType: "image/png"},
			a2ago.NewFileURLPart("https://agent.example.com/files/route.geojson", "application/geo+json"),
			{Content: a2ago.Data{Value: map[string]any{"distanceKm": 12.5, "steps": []any{"left", "right"}}}, MediaType: "application/json"},
		},
	}
	artifact := &a2ago.Artifact{
		ID:          "route-1",
		Name:        "route.geojson",
		Description: "The planned route.",
		Parts:       a2ago.ContentParts{a2ago.NewDataPart(map[string]any{"type": "LineString"})},
		Metadata:    map[string]any{"version": 1},
	}
	task := &a2ago.Task{
		ID:        sdkTaskID,
		ContextID: sdkContextID,
		Status: a2ago.TaskStatus{
			State:     a2ago.TaskStateCompleted,
			Timestamp: &sdkTime,
			Message:   &a2ago.Message{ID: "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f03", Role: a2ago.MessageRoleAgent, Parts: a2ago.ContentParts{a2ago.NewTextPart("Done.")}},
		},
		Artifacts: []*a2ago.Artifact{artifact, {ID: "summary", Parts: a2ago.ContentParts{a2ago.NewTextPart("12.5 km")}}},
		History:   []*a2ago.Message{userMsg, allParts},
		Metadata:  map[string]any{"priority": "high"},
	}
	submitted := a2ago.NewSubmittedTask(a2ago.TaskInfo{TaskID: sdkTaskID, ContextID: sdkContextID}, userMsg)
	localTime := &a2ago.Task{ID: sdkTaskID, ContextID: sdkContextID, Status: a2ago.TaskStatus{State: a2ago.TaskStateWorking, Timestamp: &sdkLocalTime}}

	statusEvent := a2ago.NewStatusUpdateEvent(task, a2ago.TaskStateInputRequired, &a2ago.Message{
		ID: "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f04", Role: a2ago.MessageRoleAgent, Parts: a2ago.ContentParts{a2ago.NewTextPart("Which airport?")},
	})
	statusEvent.Status.Timestamp = &sdkTime
	artifactEvent := a2ago.NewArtifactUpdateEvent(task, "route-1", a2ago.NewTextPart("…continued"))
	artifactEvent.LastChunk = true

	pushConfig := &a2ago.PushConfig{
		TaskID: sdkTaskID,
		ID:     "cfg-1",
		URL:    "https://client.example.com/a2a/push",
		Token:  "opaque-token",
		Auth:   &a2ago.PushAuthInfo{Scheme: "Bearer", Credentials: "secret"},
	}
	historyLength := 5
	sendRequest := &a2ago.SendMessageRequest{
		Message: userMsg,
		Config: &a2ago.SendMessageConfig{
			AcceptedOutputModes: []string{"text/plain", "application/json"},
			HistoryLength:       &historyLength,
			ReturnImmediately:   true,
			PushConfig:          &a2ago.PushConfig{URL: "https://client.example.com/a2a/push", Token: "t"},
		},
		Metadata: map[string]any{"source": "test"},
	}

	return map[string]any{
		"agent-card-minimal":                 minimalCard,
		"agent-card-security-schemes":        withSchemes,
		"agent-card-security-requirements":   withRequirements,
		"agent-card-full":                    fullCard,
		"agent-card-skill-without-tags":      untaggedCard,
		"message-every-part-kind":            allParts,
		"part-empty-url":                     a2ago.Part{Content: a2ago.URL("")},
		"task-artifacts-and-history":         task,
		"task-submitted":                     submitted,
		"task-status-timestamp-local-offset": localTime,
		"task-status-update-event":           statusEvent,
		"task-artifact-update-event":         artifactEvent,
		"stream-response-task":               a2ago.StreamResponse{Event: task},
		"stream-response-message":            a2ago.StreamResponse{Event: allParts},
		"stream-response-status-update":      a2ago.StreamResponse{Event: statusEvent},
		"stream-response-artifact-update":    a2ago.StreamResponse{Event: artifactEvent},
		"push-config":                        pushConfig,
		"send-message-request":               sendRequest,
		"list-tasks-response-no-tasks":       a2ago.ListTasksResponse{PageSize: 50},
	}
}

// captureTransport records request bodies and fails every request.
type captureTransport struct{ bodies [][]byte }

func (c *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	c.bodies = append(c.bodies, body)
	return nil, errors.New("captured")
}

// uuidID matches the random id the SDK's client gives each request.
var uuidID = regexp.MustCompile(`"id":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"}$`)

// sdkClientRequests are the JSON-RPC requests the SDK's client sends, one per
// method, with the random request id replaced by "req-1".
func sdkClientRequests(t *testing.T) map[string][]byte {
	ctx := context.Background()
	capture := &captureTransport{}
	tr := a2aclient.NewJSONRPCTransport("http://agent.invalid/a2a", &http.Client{Transport: capture})
	params := a2aclient.ServiceParams{}
	msg := &a2ago.Message{ID: "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f05", Role: a2ago.MessageRoleUser, Parts: a2ago.ContentParts{a2ago.NewTextPart("hello")}}
	historyLength := 2
	drain := func(seq iter.Seq2[a2ago.Event, error]) {
		for range seq {
		}
	}
	calls := []struct {
		name string
		call func()
	}{
		{"jsonrpc-send-message", func() { _, _ = tr.SendMessage(ctx, params, &a2ago.SendMessageRequest{Message: msg}) }},
		{"jsonrpc-send-streaming-message", func() {
			drain(tr.SendStreamingMessage(ctx, params, &a2ago.SendMessageRequest{Message: msg, Config: &a2ago.SendMessageConfig{AcceptedOutputModes: []string{"text/plain"}}}))
		}},
		{"jsonrpc-get-task", func() {
			_, _ = tr.GetTask(ctx, params, &a2ago.GetTaskRequest{ID: sdkTaskID, HistoryLength: &historyLength})
		}},
		{"jsonrpc-list-tasks", func() {
			_, _ = tr.ListTasks(ctx, params, &a2ago.ListTasksRequest{ContextID: sdkContextID, Status: a2ago.TaskStateWorking, PageSize: 10, StatusTimestampAfter: &sdkTime, IncludeArtifacts: true})
		}},
		{"jsonrpc-list-tasks-local-time", func() {
			_, _ = tr.ListTasks(ctx, params, &a2ago.ListTasksRequest{StatusTimestampAfter: &sdkLocalTime})
		}},
		{"jsonrpc-cancel-task", func() { _, _ = tr.CancelTask(ctx, params, &a2ago.CancelTaskRequest{ID: sdkTaskID}) }},
		{"jsonrpc-subscribe-to-task", func() { drain(tr.SubscribeToTask(ctx, params, &a2ago.SubscribeToTaskRequest{ID: sdkTaskID})) }},
		{"jsonrpc-create-task-push-notification-config", func() {
			_, _ = tr.CreateTaskPushConfig(ctx, params, &a2ago.PushConfig{TaskID: sdkTaskID, URL: "https://client.example.com/a2a/push"})
		}},
		{"jsonrpc-get-task-push-notification-config", func() {
			_, _ = tr.GetTaskPushConfig(ctx, params, &a2ago.GetTaskPushConfigRequest{TaskID: sdkTaskID, ID: "cfg-1"})
		}},
		{"jsonrpc-list-task-push-notification-configs", func() {
			_, _ = tr.ListTaskPushConfigs(ctx, params, &a2ago.ListTaskPushConfigRequest{TaskID: sdkTaskID})
		}},
		{"jsonrpc-delete-task-push-notification-config", func() {
			_ = tr.DeleteTaskPushConfig(ctx, params, &a2ago.DeleteTaskPushConfigRequest{TaskID: sdkTaskID, ID: "cfg-1"})
		}},
		{"jsonrpc-get-extended-agent-card", func() { _, _ = tr.GetExtendedAgentCard(ctx, params, &a2ago.GetExtendedAgentCardRequest{}) }},
	}
	out := map[string][]byte{}
	for _, c := range calls {
		before := len(capture.bodies)
		c.call()
		if len(capture.bodies) != before+1 {
			t.Fatalf("%s: the client sent %d requests, want 1", c.name, len(capture.bodies)-before)
		}
		body := capture.bodies[before]
		if !uuidID.Match(body) {
			t.Fatalf("%s: no trailing random id in %s", c.name, body)
		}
		out[c.name] = uuidID.ReplaceAll(body, []byte(`"id":"req-1"}`))
	}
	return out
}

// echoExecutor answers every message with one fixed agent message.
type echoExecutor struct{}

func (echoExecutor) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		yield(&a2ago.Message{ID: "0199f3a4-6b8e-7c3d-9a1f-2b4c6d8e0f06", Role: a2ago.MessageRoleAgent, Parts: a2ago.ContentParts{a2ago.NewTextPart("echo")}}, nil)
	}
}

func (echoExecutor) Cancel(_ context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		yield(a2ago.NewStatusUpdateEvent(execCtx, a2ago.TaskStateCanceled, nil), nil)
	}
}

// errorTimestamp matches the time the SDK's server puts in ErrorInfo
// metadata.
var errorTimestamp = regexp.MustCompile(`"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

// sdkServerResponses are the JSON-RPC responses the SDK's server handler
// writes, with the ErrorInfo timestamp fixed.
func sdkServerResponses(t *testing.T) map[string][]byte {
	handler := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoExecutor{},
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil))))
	requests := map[string]string{
		"jsonrpc-response-send-message":       `{"jsonrpc":"2.0","id":"req-1","method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`,
		"jsonrpc-response-task-not-found":     `{"jsonrpc":"2.0","id":"req-2","method":"GetTask","params":{"id":"no-such-task"}}`,
		"jsonrpc-response-method-not-found":   `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t"}}`,
		"jsonrpc-response-parse-error":        `{"jsonrpc":"2.0","id":4,`,
		"jsonrpc-response-delete-push-config": `{"jsonrpc":"2.0","id":"req-5","method":"DeleteTaskPushNotificationConfig","params":{"taskId":"t","id":"cfg-1"}}`,
	}
	out := map[string][]byte{}
	for name, body := range requests {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: HTTP %d", name, rec.Code)
		}
		out[name] = errorTimestamp.ReplaceAll(rec.Body.Bytes(), []byte(`"timestamp":"2025-10-28T10:30:00Z"`))
	}
	return out
}
