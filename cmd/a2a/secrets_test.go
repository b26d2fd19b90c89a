package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
)

// secret returns a fresh random secret with a prefix, so that a leak found
// in an output can only be the test's own.
func secret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// TestSecretsNeverInOutput runs a2a broker, a2a agent (over MQTT and HTTP,
// and on a mosquitto that requires a password) and a2a send with debug
// logging, with accepted, wrong and malformed tokens, and asserts that no
// token and no password appears in any output stream of any of them, nor
// in any reply.
func TestSecretsNeverInOutput(t *testing.T) {
	good, wrong, malformed := secret(t, "goodtok"), secret(t, "wrongtok"), secret(t, "badform")
	password := secret(t, "pw")
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens", good+" tester\n")
	goodFile := writeFile(t, dir, "good", good+"\n")
	wrongFile := writeFile(t, dir, "wrong", wrong+"\n")
	pwFile := writeFile(t, dir, "pw", password+"\n")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	br := start(t, "broker", "--listen", addr)
	br.waitFor(t, "listening on")
	brokerURL := "mqtt://" + addr
	ag, endpoint, base := startHTTPAgent(t, "--broker", brokerURL, "--org", "acme", "--unit", "sec", "--id", "guard",
		"--http", "127.0.0.1:0", "--tokens", tokens, "--log-level", "debug")
	ag.waitFor(t, "online")

	mq := startMosquittoWithPassword(t, "alice", password)
	ag2 := start(t, "agent", "--broker", mq.URL(), "--org", "acme", "--unit", "sec", "--id", "guard",
		"--username", "alice", "--password-file", pwFile, "--tokens", tokens, "--log-level", "debug")
	ag2.waitFor(t, "online")

	var outputs []string
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	send := func(env []string, args ...string) result {
		t.Helper()
		r := runCLI(t, env, append(append([]string{"send", "--log-level", "debug", "--timeout", "20s"}, args...), "hello")...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	viaMQTT := []string{"--broker", brokerURL, "--org", "acme", "--unit", "sec", "--to", "guard"}
	viaHTTP := []string{"--url", base}
	viaMosquitto := []string{"--broker", mq.URL(), "--org", "acme", "--unit", "sec", "--to", "guard", "--username", "alice", "--password-file", pwFile}
	for _, to := range [][]string{viaMQTT, viaHTTP, viaMosquitto} {
		send(env, append(to, "--token-file", goodFile)...)
		send(env, append(to, "--token-file", goodFile, "--stream")...)
		send(env, append(to, "--token-file", wrongFile)...)
		send(env, append(to, "--token-file", wrongFile, "--stream")...)
		send(append(env, envToken+"="+good), to...)
		send(append(env, envToken+"="+wrong), to...)
	}
	// Nobody answers: the requester retries, and logs each attempt.
	if r := send(env, "--broker", brokerURL, "--org", "acme", "--unit", "sec", "--to", "nobody", "--token-file", goodFile, "--timeout", "3s", "--card-wait", "0"); r.code != exitTimeout || !strings.Contains(r.stderr, "no answer within 3s (--timeout)") {
		t.Errorf("to nobody: exit %d\n%s", r.code, r.stderr)
	}
	// The broker refuses a wrong password.
	send(append(env, envUsername+"=alice", envPassword+"=not-"+password), "--broker", mq.URL(), "--org", "acme", "--unit", "sec", "--to", "guard", "--timeout", "3s")

	// Tokens an a2a send would refuse to send, straight to the agent.
	for _, auth := range []string{"Bearer " + wrong, "Basic " + malformed, "Bearer " + malformed + " trailing", "bearer " + malformed + "\"!"} {
		outputs = append(outputs, postWithAuthorization(t, endpoint, auth))
		outputs = append(outputs, publishWithAuthorization(t, addr, "acme", "sec", "guard", auth))
	}

	// Let the last log lines out, then stop everything gracefully.
	time.Sleep(200 * time.Millisecond)
	for _, p := range []*process{ag, ag2, br} {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		outputs = append(outputs, p.output())
	}
	for _, out := range outputs {
		for _, s := range []string{good, wrong, malformed, password} {
			if strings.Contains(out, s) {
				t.Fatalf("a secret (%.8s…) is in an output:\n%s", s, out)
			}
		}
	}
	t.Logf("%d debug lines", strings.Count(strings.Join(outputs, ""), "level=DEBUG"))
}

// postWithAuthorization posts a SendMessage to an HTTP endpoint with an
// Authorization header and returns the answer.
func postWithAuthorization(t *testing.T, endpoint, auth string) string {
	t.Helper()
	body, err := jsonrpc.EncodeRequest([]byte(`"1"`), a2a.MethodSendMessage, requester.TextMessage("hi", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "unauthenticated") && !strings.Contains(string(b), "-31401") {
		t.Errorf("Authorization %.12s…: answered %s %s, want unauthenticated", auth, resp.Status, b)
	}
	return fmt.Sprintf("%s %v %s", resp.Status, resp.Header, b)
}

// publishWithAuthorization sends a SendMessage request over MQTT with an
// a2a-authorization user property as given and returns the reply.
func publishWithAuthorization(t *testing.T, addr, org, unit, agentID, auth string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	replies := make(chan *paho.Publish, 4)
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) { replies <- pr.Packet; return true, nil }}})
	id := "raw-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: org + "/" + unit + "/" + id, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(&paho.Disconnect{})
	replyTopic, err := mqttbind.ReplyTopic(org, unit, id, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: replyTopic, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	topic, err := mqttbind.RequestTopic(org, unit, agentID)
	if err != nil {
		t.Fatal(err)
	}
	corr := uuid.NewString()
	payload, err := jsonrpc.EncodeRequest([]byte(`"`+corr+`"`), a2a.MethodSendMessage, requester.TextMessage("hi", uuid.NewString(), uuid.NewString()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload, Properties: &paho.PublishProperties{
		ResponseTopic: replyTopic, CorrelationData: []byte(corr), ContentType: "application/json",
		User: paho.UserProperties{{Key: mqttbind.PropRequesterAgentID, Value: id}, {Key: mqttbind.PropAuthorization, Value: auth}}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-replies:
		var props []string
		if p.Properties != nil {
			for _, u := range p.Properties.User {
				props = append(props, u.Key+"="+u.Value)
			}
		}
		return fmt.Sprintf("%s %v %s", p.Topic, props, p.Payload)
	case <-ctx.Done():
		t.Fatalf("no reply to a request with a2a-authorization %.12s…", auth)
		return ""
	}
}
