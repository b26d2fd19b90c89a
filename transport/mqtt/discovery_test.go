package mqtt

import (
	"context"
	"fmt"
	"testing"

	"github.com/a2abind/a2abind/statemachines/presence"
)

func TestWatchFollowsPresence(t *testing.T) {
	forEachSite(t, func(t *testing.T, s site) {
		w, err := Watch(testCtx(t), WatchConfig{Connection: s.conn, Root: s.root, Org: "acme", Unit: "lab"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close(context.Background()) })
		next := func() presence.Change {
			select {
			case ch := <-w.Changes():
				return ch
			case <-testCtx(t).Done():
				t.Fatal("no presence change")
			}
			return presence.Change{}
		}
		srv := echoServer(t)
		a := startAgent(t, s.agent(AgentConfig{Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv}))
		if ch := next(); ch.Entry.Status() != presence.StatusOnline || ch.Entry.Source() != presence.SourceAgent || ch.Entry.Card.Name != "B" {
			t.Fatalf("%+v", ch.Entry)
		}
		a.Kill()
		if ch := next(); ch.Entry.Status() != presence.StatusOffline || ch.Entry.Source() != presence.SourceLWT || !ch.Entry.EverOnline {
			t.Fatalf("%+v", ch.Entry)
		}
		if e, ok := w.Lookup("b"); !ok || e.Status() != presence.StatusOffline {
			t.Fatalf("lookup %+v %v", e, ok)
		}
		// Another unit is outside the watch.
		startAgent(t, s.agent(AgentConfig{Org: "acme", Unit: "other", ID: "x", Card: testCard("X"), Server: srv}))
		startAgent(t, s.agent(AgentConfig{Org: "acme", Unit: "lab", ID: "c", Card: testCard("C"), Server: srv}))
		if ch := next(); ch.Entry.Key.Agent != "c" {
			t.Fatalf("got %v: a watch must stay in its org/unit", ch.Entry.Key)
		}
		if w.Len() != 2 {
			t.Fatalf("%d agents", w.Len())
		}
	})
}

func TestWatchGetsEveryRetainedCard(t *testing.T) {
	b := startBroker(t, true)
	srv := echoServer(t)
	const n = 20
	for i := range n {
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "fleet", ID: fmt.Sprintf("a%02d", i), Card: testCard("A"), Server: srv})
	}
	w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	for range n {
		select {
		case ch := <-w.Changes():
			if ch.Entry.Source() != presence.SourceBroker || ch.Entry.Status() != presence.StatusOnline {
				t.Fatalf("%v: %v/%v, want online from the broker", ch.Entry.Key, ch.Entry.Status(), ch.Entry.Source())
			}
		case <-testCtx(t).Done():
			t.Fatalf("only %d of %d cards", w.Len(), n)
		}
	}
}
