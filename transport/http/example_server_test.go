package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// An agent that upper-cases text, served over HTTP: the JSON-RPC endpoint
// at /a2a, its card at /.well-known/agent-card.json. A plain POST plays
// the client.
func ExampleNewHandler() {
	// The runtime: one handler, whatever the transport.
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		return t.Complete(ctx, strings.ToUpper(t.Text()))
	}))
	defer srv.Close(context.Background())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	card, err := agentcard.New(agentcard.Config{Name: "Shouter", Description: "Upper-cases text",
		Interfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")}})
	if err != nil {
		log.Fatal(err)
	}

	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
	if err != nil {
		log.Fatal(err)
	}
	go h.Serve(ln, "/a2a")
	defer h.Close(context.Background())

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello, agent"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result a2a.SendMessageResponse `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		log.Fatal(err)
	}
	task := out.Result.Payload.(*a2a.Task)
	fmt.Println(task.Status.State, task.Status.Message.Parts[0].Content)
	// Output:
	// TASK_STATE_COMPLETED HELLO, AGENT
}

// Mounting on a mux of your own, for an agent also served over MQTT: the
// card lists both interfaces, and Register adds the JSON-RPC endpoint and
// the well-known card path beside the application's own routes.
func ExampleHandler_Register() {
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		return t.Complete(ctx, "done")
	}))
	streaming := true
	card := &a2a.AgentCard{Name: "Worker", Description: "Does work", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{
			a2ahttp.JSONRPCInterface("https://agent.example.com/a2a"),
			agentcard.Interface(agentcard.BindingMQTT, "mqtt://broker.example.com:1883"),
		},
		Capabilities:      &a2a.AgentCapabilities{Streaming: &streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "work", Name: "Work", Description: "Does work", Tags: []string{"work"}}}}
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h.Register(mux, "/a2a")
	hs := &http.Server{Addr: ":8443", Handler: mux}
	go hs.ListenAndServeTLS("cert.pem", "key.pem")

	// On shutdown: the handler first (its streams end, its calls are
	// awaited), then the server, then the runtime.
	ctx := context.Background()
	_ = h.Close(ctx)
	_ = hs.Shutdown(ctx)
	_ = srv.Close(ctx)
}
