package presence

import (
	"bytes"
	"testing"
)

// decodeProps turns fuzz bytes into user properties: lines of key=value.
func decodeProps(b []byte) Properties {
	var out Properties
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		k, v, _ := bytes.Cut(line, []byte{'='})
		out = append(out, Property{Key: string(k), Value: string(v)})
	}
	return out
}

// Arbitrary topics, payloads and property sets never make Ingest panic, and
// whatever it accepts leaves a consistent entry.
func FuzzPresenceIngest(f *testing.F) {
	f.Add("$a2a/v1/discovery/acme/lab/b", cardJSON("b", "1"), []byte("a2a-status=online\na2a-status-source=agent"))
	f.Add("$a2a/v1/discovery/acme/lab/b", cardJSON("b", "1"), []byte("a2a-status=offline\na2a-status-source=lwt"))
	f.Add("$a2a/v1/discovery/acme/lab/b", cardJSON("b", "1"), []byte("a2a-status=online\na2a-status-source=agent\na2a-status=offline\na2a-status-source=emqx"))
	f.Add("$a2a/v1/discovery/acme/lab/b", []byte{}, []byte{})
	f.Add("$a2a/v1/discovery/acme/lab/b", []byte(`{"name":"b","capabilities":{"pushNotifications":true},"skills":[{"tags":null}]}`), []byte("a2a-status"))
	f.Add("$a2a/v1/discovery/+/lab/#", []byte("{"), []byte("=\n=="))
	f.Add("", []byte(`null`), []byte("a2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online\na2a-status=online"))
	f.Fuzz(func(t *testing.T, topic string, payload, rawProps []byte) {
		props := decodeProps(rawProps)
		for _, tr := range []*Tracker{NewTracker(), NewTracker(WithCardDecoder(DecodeCardLenient))} {
			// Twice: once for a new agent, once for a known one.
			for range 2 {
				ch, err := tr.Ingest(topic, payload, props, t0)
				if err != nil {
					continue
				}
				e, ok := tr.Get(ch.Entry.Key)
				if !ok || e != ch.Entry || !e.State.Valid() {
					t.Fatalf("accepted message left entry %+v (found %v)", e, ok)
				}
				if (e.Card != nil) != e.State.IsHasCard() {
					t.Fatalf("card %v in state %v", e.Card != nil, e.State)
				}
				if len(payload) == 0 && e.Registered() {
					t.Fatalf("an empty payload left the agent registered")
				}
			}
		}
	})
}
