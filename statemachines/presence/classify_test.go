package presence

import (
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

func TestClassify(t *testing.T) {
	p := func(kv ...string) Properties {
		var out Properties
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, Property{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const st, src = "a2a-status", "a2a-status-source"
	for _, c := range []struct {
		name  string
		props Properties
		want  fsm.PresenceEvent
	}{
		{"online by the agent", p(st, "online", src, "agent"), fsm.PresenceEventCardOnlineAgent},
		{"online without a source is the agent's", p(st, "online"), fsm.PresenceEventCardOnlineAgent},
		{"offline by the agent is graceful", p(st, "offline", src, "agent"), fsm.PresenceEventCardOfflineAgent},
		{"offline without a source is graceful", p(st, "offline"), fsm.PresenceEventCardOfflineAgent},
		{"offline by the Last Will", p(st, "offline", src, "lwt"), fsm.PresenceEventCardOfflineLWT},
		{"online by the broker", p(st, "online", src, "broker"), fsm.PresenceEventBrokerOnline},
		{"offline by the broker", p(st, "offline", src, "broker"), fsm.PresenceEventBrokerOffline},
		{"EMQX's source value counts as broker", p(st, "online", src, "emqx"), fsm.PresenceEventBrokerOnline},
		{"an empty source is the agent's", p(st, "online", src, ""), fsm.PresenceEventCardOnlineAgent},
		{"properties in either order", p(src, "lwt", st, "offline"), fsm.PresenceEventCardOfflineLWT},
		{"unknown properties are ignored", p("a2a-foo", "x", st, "online", "color", "red"), fsm.PresenceEventCardOnlineAgent},
		{"no status at all", nil, fsm.PresenceEventCardNoStatus},
		{"a source without a status", p(src, "broker"), fsm.PresenceEventCardNoStatus},
		{"a status value that is not online or offline", p(st, "sleeping"), fsm.PresenceEventCardNoStatus},
		{"status values are case-sensitive", p(st, "Online"), fsm.PresenceEventCardNoStatus},
		{"a Last Will never says online", p(st, "online", src, "lwt"), fsm.PresenceEventCardNoStatus},
		{"status repeated with different values", p(st, "online", st, "offline"), fsm.PresenceEventCardNoStatus},
		{"status repeated with the same value", p(st, "online", st, "online", src, "agent"), fsm.PresenceEventCardOnlineAgent},
		{"a broker pair appended after the agent's pair wins", p(st, "online", src, "agent", st, "offline", src, "broker"), fsm.PresenceEventBrokerOffline},
		{"a broker pair placed before the agent's pair wins", p(st, "offline", src, "emqx", st, "online", src, "agent"), fsm.PresenceEventBrokerOffline},
		{"two broker pairs that disagree", p(st, "offline", src, "broker", st, "online", src, "broker"), fsm.PresenceEventCardNoStatus},
		{"agent and lwt pairs that disagree on the source", p(st, "offline", src, "agent", st, "offline", src, "lwt"), fsm.PresenceEventCardNoStatus},
		{"two sources for one status cannot be paired", p(st, "offline", src, "agent", src, "lwt"), fsm.PresenceEventCardNoStatus},
		{"one source shared by repeated equal statuses", p(st, "offline", st, "offline", src, "lwt"), fsm.PresenceEventCardOfflineLWT},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Classify(c.props); got != c.want {
				t.Errorf("Classify(%v) = %v, want %v", c.props, got, c.want)
			}
		})
	}
}

func TestClassifyTooManyStatuses(t *testing.T) {
	var props Properties
	for range maxPairs + 1 {
		props = append(props, Property{Key: "a2a-status", Value: "online"})
	}
	if got := Classify(props); got != fsm.PresenceEventCardNoStatus {
		t.Errorf("got %v, want CardNoStatus", got)
	}
}
