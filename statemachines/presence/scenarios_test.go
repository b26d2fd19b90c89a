package presence

import (
	"errors"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// msg is one discovery message in a scenario.
type msg struct {
	agent   string
	st, src string // a2a-status and a2a-status-source; "" leaves it out
	version string // card version; "" means an empty (cleared) payload
}

// want is the entry a scenario must end with.
type want struct {
	status     Status
	source     Source
	registered bool
	everOnline bool
	version    string // version of the recorded card, "" for none
}

func play(t *testing.T, tr *Tracker, msgs []msg) {
	t.Helper()
	for i, m := range msgs {
		var props Properties
		if m.st != "" {
			props = status(m.st, m.src)
		} else if m.src != "" {
			props = Properties{{Key: "a2a-status-source", Value: m.src}}
		}
		var payload []byte
		if m.version != "" {
			payload = cardJSON(m.agent, m.version)
		}
		if _, err := tr.Ingest(topic(m.agent), payload, props, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
}

func check(t *testing.T, tr *Tracker, agent string, w want) {
	t.Helper()
	e, _ := tr.Get(key(agent))
	version := ""
	if e.Card != nil {
		version = e.Card.Version
	}
	got := want{e.Status(), e.Source(), e.Registered(), e.EverOnline, version}
	if got != w {
		t.Errorf("agent %s in state %v: got %+v, want %+v", agent, e.State, got, w)
	}
}

// docs/protocol.md §3.3, the subscriber table: one test per row.
func TestSubscriberTable(t *testing.T) {
	for _, c := range []struct {
		name string
		msgs []msg
		want want
	}{
		{"card published online/agent: agent is reachable",
			[]msg{{"b", "online", "agent", "1"}},
			want{StatusOnline, SourceAgent, true, true, "1"}},
		{"card republished offline/agent: agent shut down gracefully",
			[]msg{{"b", "online", "agent", "1"}, {"b", "offline", "agent", "1"}},
			want{StatusOffline, SourceAgent, true, true, "1"}},
		{"LWT fired offline/lwt: agent crashed or lost connection",
			[]msg{{"b", "online", "agent", "1"}, {"b", "offline", "lwt", "1"}},
			want{StatusOffline, SourceLWT, true, true, "1"}},
		{"broker-managed online/broker: broker confirms agent connected",
			[]msg{{"b", "online", "broker", "1"}},
			want{StatusOnline, SourceBroker, true, true, "1"}},
		{"broker-managed offline/broker: broker confirms agent disconnected",
			[]msg{{"b", "online", "broker", "1"}, {"b", "offline", "broker", "1"}},
			want{StatusOffline, SourceBroker, true, true, "1"}},
		{"no retained card (cleared): agent unregistered",
			[]msg{{"b", "online", "agent", "1"}, {"b", "", "", ""}},
			want{StatusUnknown, SourceNone, false, true, ""}},
		{"no retained card (never published): agent unavailable",
			nil,
			want{StatusUnknown, SourceNone, false, false, ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker()
			play(t, tr, c.msgs)
			check(t, tr, "b", c.want)
		})
	}
}

// docs/protocol.md §3.1, the lifecycle phases 1 to 4 in order: connect,
// graceful disconnect, reconnect, crash.
func TestLifecycle(t *testing.T) {
	tr := NewTracker()
	steps := []struct {
		msg  msg
		want want
	}{
		{msg{"b", "online", "agent", "1"}, want{StatusOnline, SourceAgent, true, true, "1"}},
		{msg{"b", "offline", "agent", "1"}, want{StatusOffline, SourceAgent, true, true, "1"}},
		{msg{"b", "online", "agent", "1"}, want{StatusOnline, SourceAgent, true, true, "1"}},
		{msg{"b", "offline", "lwt", "1"}, want{StatusOffline, SourceLWT, true, true, "1"}},
	}
	for i, s := range steps {
		play(t, tr, []msg{s.msg})
		check(t, tr, "b", s.want)
		if t.Failed() {
			t.Fatalf("phase %d", i+1)
		}
	}
}

// docs/protocol.md §3.5, the failure cases: one test each.
func TestFailureCases(t *testing.T) {
	t.Run("agent crashes before publishing the initial card: offline, never seen online", func(t *testing.T) {
		tr := NewTracker()
		play(t, tr, []msg{{"b", "offline", "lwt", "1"}})
		check(t, tr, "b", want{StatusOffline, SourceLWT, true, false, "1"})
	})
	t.Run("agent updates its card mid-session then crashes: old card offline, current card on reconnect", func(t *testing.T) {
		tr := NewTracker()
		play(t, tr, []msg{
			{"b", "online", "agent", "1"}, // CONNECT with a Will holding card 1
			{"b", "online", "agent", "2"}, // UpdateCard mid-session
		})
		check(t, tr, "b", want{StatusOnline, SourceAgent, true, true, "2"})
		play(t, tr, []msg{{"b", "offline", "lwt", "1"}}) // the Will fires with the CONNECT-time card
		check(t, tr, "b", want{StatusOffline, SourceLWT, true, true, "1"})
		play(t, tr, []msg{{"b", "online", "agent", "2"}}) // reconnect publishes the current card
		check(t, tr, "b", want{StatusOnline, SourceAgent, true, true, "2"})
	})
	t.Run("broker restarts and loses retained cards: absence is handled gracefully", func(t *testing.T) {
		before := NewTracker()
		play(t, before, []msg{{"b", "online", "agent", "1"}})
		// A subscriber that was running keeps what it knew: the absence of a
		// retained message after the restart is not an event.
		check(t, before, "b", want{StatusOnline, SourceAgent, true, true, "1"})
		// A subscriber that connects after the restart receives nothing.
		after := NewTracker()
		if e, ok := after.Get(key("b")); ok || e.Registered() || e.Status() != StatusUnknown {
			t.Errorf("fresh tracker after restart: got %+v, %v", e, ok)
		}
		if n := len(after.Entries()); n != 0 {
			t.Errorf("fresh tracker has %d entries", n)
		}
		// When the agent republishes (it reconnects to the restarted broker), it is back.
		play(t, after, []msg{{"b", "online", "agent", "1"}})
		check(t, after, "b", want{StatusOnline, SourceAgent, true, true, "1"})
	})
	t.Run("subscriber connects after the agent crashed and the LWT fired: retained card offline/lwt", func(t *testing.T) {
		tr := NewTracker() // sees only the retained Will
		play(t, tr, []msg{{"b", "offline", "lwt", "1"}})
		check(t, tr, "b", want{StatusOffline, SourceLWT, true, false, "1"})
	})
}

// docs/protocol.md §3.2 (phase 5) and the preference rule of §3.3: a
// broker-sourced status shadows agent and LWT statuses until the agent
// unregisters.
func TestBrokerStatusPreference(t *testing.T) {
	for _, c := range []struct {
		name string
		msgs []msg
		want want
	}{
		{"broker online shadows a later graceful offline, whose card is still recorded",
			[]msg{{"b", "online", "broker", "1"}, {"b", "offline", "agent", "2"}},
			want{StatusOnline, SourceBroker, true, true, "2"}},
		{"broker offline shadows a later agent online",
			[]msg{{"b", "offline", "broker", "1"}, {"b", "online", "agent", "1"}},
			want{StatusOffline, SourceBroker, true, false, "1"}},
		{"broker online shadows a stale Will",
			[]msg{{"b", "online", "broker", "1"}, {"b", "offline", "lwt", "1"}},
			want{StatusOnline, SourceBroker, true, true, "1"}},
		{"broker status overrides an earlier agent status",
			[]msg{{"b", "online", "agent", "1"}, {"b", "offline", "broker", "1"}},
			want{StatusOffline, SourceBroker, true, true, "1"}},
		{"a card without status keeps the broker status",
			[]msg{{"b", "online", "broker", "1"}, {"b", "", "", "2"}},
			want{StatusOnline, SourceBroker, true, true, "2"}},
		{"unregistration ends the preference",
			[]msg{{"b", "online", "broker", "1"}, {"b", "", "", ""}, {"b", "offline", "agent", "3"}},
			want{StatusOffline, SourceAgent, true, true, "3"}},
		{"EMQX's source value is broker-managed",
			[]msg{{"b", "offline", "emqx", "1"}, {"b", "online", "agent", "1"}},
			want{StatusOffline, SourceBroker, true, false, "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker()
			play(t, tr, c.msgs)
			check(t, tr, "b", c.want)
		})
	}
}

// A missing or invalid status leaves the liveness unknown rather than
// guessing, and replaces an earlier agent-published status.
func TestUnreadableStatusIsUnknown(t *testing.T) {
	for _, c := range []struct {
		name string
		msgs []msg
	}{
		{"no status property", []msg{{"b", "", "", "1"}}},
		{"an invalid status value", []msg{{"b", "maybe", "agent", "1"}}},
		{"a source without status", []msg{{"b", "", "agent", "1"}}},
		{"online claimed by a Last Will", []msg{{"b", "online", "lwt", "1"}}},
		{"after an agent online", []msg{{"b", "online", "agent", "1"}, {"b", "", "", "1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker()
			play(t, tr, c.msgs)
			e, _ := tr.Get(key("b"))
			if e.Status() != StatusUnknown || !e.Registered() {
				t.Errorf("got status %v registered %v", e.Status(), e.Registered())
			}
		})
	}
}

// Messages that are not presence events change nothing.
func TestRejectedMessagesChangeNothing(t *testing.T) {
	for _, c := range []struct {
		name    string
		topic   string
		payload []byte
		target  error
	}{
		{"a request topic", "$a2a/v1/request/acme/lab/b", cardJSON("b", "9"), ErrNotDiscoveryTopic},
		{"a discovery filter", "$a2a/v1/discovery/acme/lab/+", cardJSON("b", "9"), ErrNotDiscoveryTopic},
		{"too many levels", "$a2a/v1/discovery/acme/lab/b/x", cardJSON("b", "9"), ErrNotDiscoveryTopic},
		{"an identifier with a space", "$a2a/v1/discovery/acme/lab/b c", cardJSON("b", "9"), ErrNotDiscoveryTopic},
		{"a payload that is not JSON", topic("b"), []byte("not json"), nil},
		{"a JSON value that is not a card", topic("b"), []byte(`[1,2]`), nil},
		{"a card missing required members", topic("b"), []byte(`{"name":"b"}`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker()
			play(t, tr, []msg{{"b", "online", "agent", "1"}})
			before, _ := tr.Get(key("b"))
			_, err := tr.Ingest(c.topic, c.payload, status("offline", "lwt"), t0.Add(time.Hour))
			var ce *CardError
			switch {
			case c.target != nil && !errors.Is(err, c.target):
				t.Errorf("got %v, want %v", err, c.target)
			case c.target == nil && !errors.As(err, &ce):
				t.Errorf("got %v, want a *CardError", err)
			}
			after, _ := tr.Get(key("b"))
			if after != before || tr.Len() != 1 {
				t.Errorf("entry changed: %+v -> %+v (%d entries)", before, after, tr.Len())
			}
		})
	}
}

// The lenient decoder keeps the liveness of a peer whose card breaks a rule.
func TestLenientDecoder(t *testing.T) {
	tr := NewTracker(WithCardDecoder(DecodeCardLenient))
	if _, err := tr.Ingest(topic("b"), []byte(`{"name":"b"}`), status("online", "agent"), t0); err != nil {
		t.Fatal(err)
	}
	if e, _ := tr.Get(key("b")); e.Status() != StatusOnline || e.Card.Name != "b" {
		t.Errorf("got %+v", e)
	}
}

// Agents are told apart by org and unit as well as by agent_id.
func TestKeyIncludesOrgAndUnit(t *testing.T) {
	tr := NewTracker()
	for _, tp := range []string{"$a2a/v1/discovery/acme/lab/b", "$a2a/v1/discovery/acme/ops/b"} {
		if _, err := tr.Ingest(tp, cardJSON("b", "1"), status("online", "agent"), t0); err != nil {
			t.Fatal(err)
		}
	}
	if tr.Len() != 2 {
		t.Errorf("got %d entries, want 2", tr.Len())
	}
	if got := tr.Entries(); got[0].Key.Unit != "lab" || got[1].Key.Unit != "ops" {
		t.Errorf("entries not sorted: %v, %v", got[0].Key, got[1].Key)
	}
}

// Since moves only when the state does; Updated moves on every message.
func TestSinceAndUpdated(t *testing.T) {
	tr := NewTracker()
	play(t, tr, []msg{{"b", "online", "agent", "1"}, {"b", "online", "agent", "2"}, {"b", "offline", "agent", "2"}})
	e, _ := tr.Get(key("b"))
	if !e.Since.Equal(t0.Add(2*time.Second)) || !e.Updated.Equal(t0.Add(2*time.Second)) {
		t.Errorf("Since %v Updated %v", e.Since, e.Updated)
	}
	play(t, tr, []msg{{"b", "offline", "agent", "3"}})
	e, _ = tr.Get(key("b"))
	if !e.Since.Equal(t0.Add(2*time.Second)) || !e.Updated.Equal(t0) {
		t.Errorf("after a card update with the same status: Since %v Updated %v", e.Since, e.Updated)
	}
}

// A republished card identical to the recorded one (every status change
// republishes it) is not decoded again; any other payload is, and the
// tracker keeps its own copy of the bytes.
func TestIdenticalCardIsNotDecodedAgain(t *testing.T) {
	decoded := 0
	tr := NewTracker(WithCardDecoder(func(p []byte) (*a2a.AgentCard, error) {
		decoded++
		return DecodeCard(p)
	}))
	buf := cardJSON("b", "1")
	steps := []struct {
		name    string
		payload []byte
		props   Properties
		decodes int
	}{
		{"first card", buf, status("online", "agent"), 1},
		{"same bytes, new status", buf, status("offline", "lwt"), 1},
		{"same card in a fresh buffer", cardJSON("b", "1"), status("online", "broker"), 1},
		{"a new card version", cardJSON("b", "2"), status("online", "broker"), 2},
		{"cleared", nil, nil, 2},
		{"the same card after unregistering", cardJSON("b", "2"), status("online", "agent"), 3},
	}
	for i, s := range steps {
		if _, err := tr.Ingest(topic("b"), s.payload, s.props, t0.Add(time.Duration(i))); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if decoded != s.decodes {
			t.Fatalf("%s: %d decodes, want %d", s.name, decoded, s.decodes)
		}
	}
	// The caller may reuse its buffer: the tracker compared against its copy.
	copy(buf, cardJSON("b", "9"))
	if _, err := tr.Ingest(topic("b"), buf, status("online", "agent"), t0); err != nil {
		t.Fatal(err)
	}
	if e, _ := tr.Get(key("b")); e.Card.Version != "9" || decoded != 4 {
		t.Errorf("reused buffer: card %s after %d decodes", e.Card.Version, decoded)
	}
}
