package refagent

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// The reference agent's card publishes its limits and idle expiry.
func TestTheCardPublishesTheLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ra, err := Start(ctx, Config{ID: "limits", HTTP: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close(ctx)
	resp, err := http.Get("http://" + ln.Addr().String() + a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	card, err := a2a.ParseAgentCardJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	var ext *a2a.AgentExtension
	for i, e := range card.Capabilities.Extensions {
		if e.URI == agent.LimitsExtensionURI {
			ext = &card.Capabilities.Extensions[i]
		}
	}
	if ext == nil || ext.Params["maxRequestBytes"] != 4194304.0 || ext.Params["maxMessageParts"] != 1000.0 || ext.Params["idleExpirySeconds"] != 86400.0 {
		t.Fatalf("limits extension %+v in %s", ext, body)
	}
}
