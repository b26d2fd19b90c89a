package broker

import (
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// BenchmarkPolicyRoundTrip is what the security hook's authorization costs
// a request/reply round trip on a broker with a password file and
// MosquittoACL's file for both clients: the request's PUBLISH and its
// delivery to the agent, the reply's PUBLISH and its delivery to the
// requester.
func BenchmarkPolicyRoundTrip(b *testing.B) {
	text, err := MosquittoACL([]string{"acme/lab/req", "acme/lab/echo"})
	if err != nil {
		b.Fatal(err)
	}
	file, err := parseACL(text)
	if err != nil {
		b.Fatal(err)
	}
	p := &policy{root: mqttbind.Root{}, file: file}
	const (
		request = "$a2a/v1/request/acme/lab/echo"
		reply   = "$a2a/v1/reply/acme/lab/req/4f1e4d7b"
	)
	checks := []struct {
		client, topic string
		o             op
	}{
		{"acme/lab/req", request, opWrite},
		{"acme/lab/echo", request, opRead},
		{"acme/lab/echo", reply, opWrite},
		{"acme/lab/req", reply, opRead},
	}
	for _, c := range checks {
		if ok, _ := p.allows(c.client, c.client, c.topic, c.o); !ok {
			b.Fatalf("%s may not %d %s", c.client, c.o, c.topic)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range checks {
			p.allows(c.client, c.client, c.topic, c.o)
		}
	}
}
