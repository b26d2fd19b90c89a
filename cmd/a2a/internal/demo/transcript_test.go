package demo_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// update rewrites the golden transcripts from this run.
var update = flag.Bool("update", false, "rewrite testdata/transcripts")

var (
	uuidRE  = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	stampRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
	unitRE  = regexp.MustCompile(`lab-[0-9a-f]{6}`)
	portRE  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// normalizer replaces what changes from run to run (ids, times, the demo's
// unit) by stable placeholders, numbered in order of first appearance.
type normalizer struct {
	ids  map[string]string
	repl []string
}

func (n *normalizer) id(kind, v string) string {
	if p, ok := n.ids[v]; ok {
		return p
	}
	p := fmt.Sprintf("<%s-%d>", kind, len(n.ids)+1)
	n.ids[v] = p
	return p
}

func (n *normalizer) text(s string) string {
	for i := 0; i+1 < len(n.repl); i += 2 {
		s = strings.ReplaceAll(s, n.repl[i], n.repl[i+1])
	}
	s = unitRE.ReplaceAllString(s, "lab")
	s = portRE.ReplaceAllString(s, "127.0.0.1:<port>")
	s = stampRE.ReplaceAllString(s, "<time>")
	return uuidRE.ReplaceAllStringFunc(s, func(v string) string { return n.id("id", v) })
}

// render writes a story's messages as a transcript: one block a message,
// topic, QoS, retain, user properties, Correlation Data and Response Topic,
// then the payload.
func render(story string, msgs []demo.Message) string {
	n := &normalizer{ids: map[string]string{}}
	if story == "05" {
		// Which pool member takes the task is up to the broker: name the
		// chosen one A and the other B.
		for _, m := range msgs {
			for _, p := range m.Props {
				if p[0] == mqttbind.PropResponderAgentID && strings.HasPrefix(p[1], "worker-") {
					other := "worker-1"
					if p[1] == "worker-1" {
						other = "worker-2"
					}
					n.repl = []string{p[1], "worker-A", other, "worker-B"}
				}
			}
			if n.repl != nil {
				break
			}
		}
	}
	// Discovery messages come from other publishers than the exchanges and
	// may reach the transcript before or after them: list them after the
	// exchanges, grouped by topic (each topic keeps its own order).
	var exchanges, discovery []demo.Message
	for _, m := range msgs {
		if strings.HasPrefix(m.Topic, "$a2a/v1/discovery/") {
			discovery = append(discovery, m)
		} else {
			exchanges = append(exchanges, m)
		}
	}
	slices.SortStableFunc(discovery, func(a, b demo.Message) int { return strings.Compare(n.text(a.Topic), n.text(b.Topic)) })
	msgs = append(causal(exchanges), discovery...)
	var blocks []string
	for _, m := range msgs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s qos=%d", n.text(m.Topic), m.QoS)
		if m.Retain {
			b.WriteString(" retain")
		}
		for _, p := range m.Props {
			v := n.text(p[1])
			if p[0] == mqttbind.PropAuthorization {
				// A bearer token made for the run: no golden value, and
				// none to keep in a file.
				v = "Bearer <token>"
			}
			fmt.Fprintf(&b, " %s=%s", p[0], v)
		}
		if len(m.Corr) > 0 {
			fmt.Fprintf(&b, " corr=%s", n.id("corr", string(m.Corr)))
		}
		if m.Reply != "" {
			fmt.Fprintf(&b, " reply=%s", n.text(m.Reply))
		}
		payload := n.text(string(m.Payload))
		if payload == "" {
			payload = "(empty)"
		}
		fmt.Fprintf(&b, "\n  %s\n", payload)
		blocks = append(blocks, b.String())
	}
	return strings.Join(blocks, "")
}

// renderHTTP writes a story's HTTP exchanges as a transcript: the request
// line with the binding's headers and the body, then the status, the
// media type and the answer, one line per Server-Sent Event of a stream.
// The exchanges of one requester are sequential, so their order is the
// story's.
func renderHTTP(xs []demo.Exchange) string {
	n := &normalizer{ids: map[string]string{}}
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "%s %s", x.Method, x.Path)
		for _, h := range x.Header {
			fmt.Fprintf(&b, " %s=%s", h[0], h[1])
		}
		if len(x.Body) > 0 {
			fmt.Fprintf(&b, "\n  %s", n.text(string(x.Body)))
		}
		if x.Err != nil {
			fmt.Fprintf(&b, "\nno answer: %s\n", n.text(x.Err.Error()))
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(fmt.Sprintf("%d %s", x.Status, x.ContentType)))
		if x.Events != nil {
			for _, e := range x.Events {
				fmt.Fprintf(&b, "  data: %s\n", n.text(string(e)))
			}
			continue
		}
		if len(x.Reply) > 0 { // a push's 204 has none
			fmt.Fprintf(&b, "  %s\n", n.text(string(x.Reply)))
		}
	}
	return b.String()
}

// causal lists each request followed by its replies (the messages that
// carry its Correlation Data). A broker fans a message out to its
// subscribers one by one, so the transcript's subscription can see a reply
// before its request, or after the next request that the reply caused.
func causal(msgs []demo.Message) []demo.Message {
	out := make([]demo.Message, 0, len(msgs))
	done := make([]bool, len(msgs))
	exchange := func(corr string) {
		for j, r := range msgs {
			if !done[j] && r.Reply != "" && string(r.Corr) == corr {
				out = append(out, r)
				done[j] = true
			}
		}
		for j, r := range msgs {
			if !done[j] && r.Reply == "" && string(r.Corr) == corr {
				out = append(out, r)
				done[j] = true
			}
		}
	}
	for i, m := range msgs {
		if done[i] {
			continue
		}
		if len(m.Corr) > 0 {
			exchange(string(m.Corr))
			continue
		}
		out = append(out, m)
		done[i] = true
	}
	return out
}

// notGiven are the stories the default run (no Config.PG) skips, with
// the reason their SKIP line gives: they have no golden transcript.
var notGiven = map[string]string{"F01": "no PostgreSQL given: --pg DSN"}

// TestStoryTranscripts runs the demo's stories on the embedded brokers
// (S11 on the secured one) and over HTTP, and compares what crossed the broker or the HTTP connection,
// normalised, with testdata/transcripts. The stories the run is not given
// what they need for (notGiven) must be skipped with their reason, and
// nothing cross the broker.
// Refresh with go test ./cmd/a2a/internal/demo -run TestStoryTranscripts -update.
func TestStoryTranscripts(t *testing.T) {
	got := map[string]string{}
	results, err := demo.Run(context.Background(), demo.Config{Out: io.Discard,
		Record:     func(story string, msgs []demo.Message) { got[story] = render(story, msgs) },
		RecordHTTP: func(story string, xs []demo.Exchange) { got[story] = renderHTTP(xs) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range demo.Stories {
		if reason, ok := notGiven[s.ID]; ok {
			t.Run(s.ID, func(t *testing.T) {
				i := slices.IndexFunc(results, func(r demo.Result) bool { return r.ID == s.ID })
				if i < 0 {
					t.Fatalf("story %s did not run", s.ID)
				}
				var ng *demo.NotGivenError
				if r := results[i]; !r.Skipped || !errors.As(r.Err, &ng) || ng.Reason != reason || got[s.ID] != "" {
					t.Fatalf("story %s: want it skipped (%q) with nothing on the broker; result %+v, transcript %q", s.ID, reason, r, got[s.ID])
				}
			})
			continue
		}
		t.Run(s.ID, func(t *testing.T) {
			path := filepath.Join("testdata", "transcripts", s.ID+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got[s.ID]), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("updated %s", path)
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(want) != got[s.ID] {
				t.Errorf("transcript of story %s differs from %s:\n%s", s.ID, path, lineDiff(string(want), got[s.ID]))
			}
		})
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d\n want: %s\n  got: %s", i+1, wl, gl)
		}
	}
	return ""
}
