package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestRefusalsPrinted: a2a send, demo, agent and watch print the broker's
// refusal on one line, its reason code named (MQTT v5 §3.2.2.2,
// §3.4.2.1), and exit 1 at once instead of retrying or waiting for a
// timeout: a request whose publish the broker's ACL denies (PUBACK 0x87),
// the demo stopped at the first story refused, and a broker whose CONNACK
// does not offer QoS 1 (mosquitto max_qos 0).
func TestRefusalsPrinted(t *testing.T) {
	t.Parallel()
	const password = "pw-R3fusal"
	dir := t.TempDir()
	acl := writeFile(t, dir, "acl", "user alice\ntopic readwrite #\ntopic readwrite $a2a/#\ntopic deny $a2a/v1/request/+/+/echo\n")
	denied := startMosquittoWithPassword(t, "alice", password, "acl_file "+acl)
	good := writeFile(t, dir, "good", password+"\n")
	qos0 := mqtttest.StartMosquitto(t, mqtttest.WithMosquittoConfig("max_qos 0"))
	creds := []string{"--username", "alice", "--password-file", good}
	for _, c := range []struct {
		name string
		args []string
		// want are in stderr; stdout, when set, in stdout.
		want   []string
		stdout []string
	}{
		{"send to an agent the ACL denies", append([]string{"send", "--broker", denied.URL(), "--org", "acme", "--unit", "lab", "--to", "echo",
			"--routes", filepath.Join(dir, "routes.json"), "--card-wait", "0"}, append(creds, "hello")...),
			[]string{"broker refused publish to $a2a/v1/request/acme/lab/echo: 0x87 not authorized"}, nil},
		{"demo whose requests the ACL denies", append([]string{"demo", "--broker", denied.URL(), "--quiet"}, creds...),
			[]string{"stopped at the broker's refusal: story 02: mqtt: broker refused publish to $a2a/v1/request/demo/", "0x87 not authorized"},
			[]string{"stopped: the broker refused"}},
		{"agent on a broker of maximum QoS 0", []string{"agent", "--broker", qos0.URL(), "--org", "acme", "--unit", "lab", "--id", "echo"},
			[]string{"QoS"}, nil},
		{"watch on a broker of maximum QoS 0", []string{"watch", "--broker", qos0.URL(), "--org", "acme", "--unit", "lab"},
			[]string{"the broker does not offer QoS 1 (its maximum QoS is 0) (CONNACK): the profile needs QoS 1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, c.args...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			for _, w := range c.stdout {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout does not say %q:\n%s", w, r.stdout)
				}
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 {
				t.Errorf("want one line on stderr:\n%s", r.stderr)
			}
			if strings.Contains(r.stdout, "== story 03") {
				t.Errorf("the demo went on after the refusal:\n%s", r.stdout)
			}
		})
	}
}
