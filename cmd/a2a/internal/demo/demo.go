// Package demo runs the user stories of the A2A-over-MQTT profile (02, 03,
// 05, 07, 08, 09) against a broker with the reference agent, three of them
// (H02, H03, H08) against the reference agent served over HTTP on a
// loopback port, an agent that sleeps (O01) and push notifications (P01)
// over HTTP too, story S11, an intruder refused by an embedded broker
// secured as docs/protocol.md §13 describes, and story F01, an agent fleet
// on PostgreSQL with pool failover (skipped unless Config.PG names a
// database), printing a transcript of what crosses the broker or the HTTP
// connection and a verdict per story. It is the main job of the a2a
// command and feeds the golden wire transcripts.
package demo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/presence"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// demo holds what the stories share.
type demo struct {
	out       io.Writer
	brokerURL string
	// root is the topic root of every MQTT story (Config.Root).
	root      mqttbind.Root
	org, unit string
	client    *a2amqtt.Client
	sniff     *sniffer
	log       *slog.Logger
	// conn is the connection to brokerURL: its TLS and credentials.
	conn a2amqtt.Connection
	// statusBroker is a broker with broker-managed status, for story 09's
	// last phase ("" when the demo runs on a broker given with --broker).
	statusBroker string
	// http is the requester of the HTTP stories, bound to the reference
	// agent served over HTTP; wire records what it sends and receives.
	http *a2ahttp.Client
	wire *wire
	// secured is story S11's broker and parties (nil unless it runs).
	secured *secured
	// transcript receives the transcript (io.Discard with Transcript
	// false).
	transcript io.Writer
	// pg is the PostgreSQL database of story F01 (Config.PG).
	pg string
}

// sniffOut is where a story writes lines of its own transcript.
func (d *demo) sniffOut() io.Writer { return d.transcript }

// agentConfig configures a reference agent on the demo's broker: agent
// id, in pool when one is given.
func (d *demo) agentConfig(id string, pool ...string) refagent.Config {
	c := refagent.Config{Broker: d.brokerURL, Root: d.root, Org: d.org, Unit: d.unit, ID: id, Log: d.log,
		TLS: d.conn.TLS, Username: d.conn.Username, Password: d.conn.Password}
	if len(pool) > 0 {
		c.Pool = pool[0]
	}
	return c
}

// Story is one user story of the A2A-over-MQTT profile, told over MQTT, or
// over HTTP (the A2A JSON-RPC binding).
type Story struct {
	ID, Title string
	// HTTP marks a story told over HTTP: its transcript is the HTTP
	// requests and answers (Config.RecordHTTP), not MQTT messages.
	HTTP bool
	// Secured marks a story told on the demo's own secured embedded broker
	// (a password file and authorization, docs/protocol.md §13), whatever
	// Config.BrokerURL says: Config.Record receives what crossed that
	// broker.
	Secured bool
	run     func(ctx context.Context, d *demo) (string, error)
}

// Config configures Run.
type Config struct {
	// BrokerURL is the broker to run on; empty starts embedded brokers (one
	// plain, one with broker-managed status for story 09's last phase).
	// Story S11 always runs on an embedded broker of its own, secured.
	BrokerURL string
	// TLS, Username and Password are the TLS configuration and the
	// credentials of every connection to BrokerURL (optional).
	TLS      *tls.Config
	Username string
	Password []byte
	// Root is the topic root of every MQTT story, on BrokerURL and on the
	// embedded brokers alike, the secured one included (the zero Root is
	// the profile's $a2a/v1; another is a deployment choice outside the
	// profile, docs/protocol.md §1.5).
	Root mqttbind.Root
	// Out receives the transcript and the verdicts; Transcript false prints
	// the verdicts only.
	Out        io.Writer
	Transcript bool
	// Log receives what the agents cannot answer on a reply path.
	Log *slog.Logger
	// Stories selects stories by id ("02", "03", …); nil runs them all.
	Stories []string
	// Record, when set, receives every message that crossed the main broker
	// (for story S11, the secured one) during each MQTT story (for golden
	// transcripts).
	Record func(story string, msgs []Message)
	// RecordHTTP, when set, receives every HTTP exchange of each HTTP
	// story (for golden transcripts).
	RecordHTTP func(story string, xs []Exchange)
	// PG is the DSN of a PostgreSQL database for story F01, the agent
	// fleet: the story creates a schema of its own there and drops it at
	// the end. Empty, the story is skipped (a *NotGivenError).
	PG string
	// OnResult, when set, is called with each story's verdict as the story
	// ends, after its verdict line on Out.
	OnResult func(Result)
	// OnSummary, when set, is called with the summary once every story
	// ran, after the summary's last line on Out.
	OnSummary func(Summary)
}

// Summary is what the summary of a run says.
type Summary struct {
	// Passed counts the stories that passed.
	Passed int
	// Failed are the ids of the stories that failed.
	Failed []string
	// Skipped are the stories skipped, each with what the summary line
	// says of it.
	Skipped []Skip
	// NotRunAfterRefusal counts the stories not run because the broker
	// refused what an earlier one needed (the run stopped there).
	NotRunAfterRefusal int
	// Duration is how long the run took.
	Duration time.Duration
	// Line is the summary's last line, as printed on Out.
	Line string
}

// Skip is a story skipped and why, in a few words.
type Skip struct{ ID, Reason string }

// Result is the verdict of one story.
type Result struct {
	ID, Title, Detail string
	Err               error
	// Skipped says the story was not told: the broker does not offer a
	// capability that only an Extended conformance feature needs (shared
	// subscriptions, for the pools of stories 05 and F01: docs/protocol.md
	// §4.6, §10), and Err is the *a2amqtt.CapabilityError that says so;
	// or the run was not given what the story needs (story F01 without
	// Config.PG), and Err is a *NotGivenError. A skipped story is not a
	// failure.
	Skipped bool
}

// Reason says why a story was skipped (what its SKIP line says) or why it
// failed; "" for a story that passed.
func (r Result) Reason() string {
	if line, _, ok := skipReason(r.Err); ok {
		return line
	}
	if r.Err != nil {
		return r.Err.Error()
	}
	return ""
}

// ErrFailed is returned by Run when a story failed. A story that failed
// on a refusal by the broker (a2amqtt.IsRefusal: a publish or a
// subscription refused, a capability its CONNACK does not offer) stops the
// run: the error wraps the refusal too. A story skipped for an optional
// capability (Result.Skipped) neither fails nor stops the run.
var ErrFailed = errors.New("demo: a story failed")

// optionalCapabilities are the capabilities (a2amqtt.CapabilityError's
// Capability) that only an Extended conformance feature needs, with what
// the SKIP line says of it.
var optionalCapabilities = map[string]string{
	"shared subscriptions": "shared pools are Extended conformance: docs/protocol.md §4.6, §10",
}

// UnservedError says that the broker cannot serve a story in a way its
// CONNACK does not tell: mosquitto 2.0.11 offers shared subscriptions but
// never delivers a topic beginning with $ to them, so a pool under
// $a2a/v1 gets no request (docs/protocol.md §12). The story is skipped,
// not failed (Result.Skipped): Reason is what its SKIP line says, Summary
// what the summary line says.
type UnservedError struct{ Reason, Summary string }

func (e *UnservedError) Error() string { return e.Reason }

// NotRun are the profile's user stories the demo does not tell, for want
// of what they need in the library: OAuth token acquisition (01), native
// binary artifacts (04) and the untrusted-broker security profile ubsp-v1
// (06; docs/protocol.md §2, §11).
var NotRun = []struct{ ID, What string }{{"01", "OAuth"}, {"04", "binary artifacts"}, {"06", "ubsp-v1"}}

// notRunLine is the line that lists NotRun.
func notRunLine() string {
	var parts []string
	for _, s := range NotRun {
		parts = append(parts, s.ID+" ("+s.What+")")
	}
	return "not run here: " + strings.Join(parts, ", ")
}

// skipReason says why a story that ended with err is skipped: line is
// what its SKIP line says, summary what the summary line says; ok is
// false for a story that is not skipped (optionalCapability,
// NotGivenError, UnservedError).
func skipReason(err error) (line, summary string, ok bool) {
	var ng *NotGivenError
	if errors.As(err, &ng) {
		return ng.Reason, ng.Reason, true
	}
	var ue *UnservedError
	if errors.As(err, &ue) {
		return ue.Reason, ue.Summary, true
	}
	capability, why, ok := optionalCapability(err)
	if !ok {
		return "", "", false
	}
	return fmt.Sprintf("%v (%s)", err, why), "the broker does not offer " + capability, true
}

// optionalCapability returns what a story skipped says when err is a
// broker's lack of a capability that only an Extended conformance feature
// needs (optionalCapabilities); ok is false for any other error.
func optionalCapability(err error) (capability, why string, ok bool) {
	var ce *a2amqtt.CapabilityError
	if !errors.As(err, &ce) {
		return "", "", false
	}
	why, ok = optionalCapabilities[ce.Capability]
	return ce.Capability, why, ok
}

// Run runs the user stories and reports each verdict on cfg.Out.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	stdout := cfg.Out
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := &demo{out: stdout, root: cfg.Root, org: "demo", unit: "lab-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:6], log: cfg.Log, pg: cfg.PG}
	if !d.root.IsDefault() {
		fmt.Fprintf(stdout, "topic root: %s, not the profile's %s (docs/protocol.md §1.5)\n", d.root, mqttbind.DefaultRoot)
	}
	if cfg.BrokerURL == "" {
		plain, err := broker.Start(ctx, broker.Config{Root: d.root, Logger: d.log})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer plain.Close()
		managed, err := broker.Start(ctx, broker.Config{Status: true, Root: d.root, Logger: d.log})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer managed.Close()
		d.brokerURL, d.statusBroker = plain.URL(), managed.URL()
		fmt.Fprintf(stdout, "embedded brokers: %s, and %s with broker-managed status\n", plain.URL(), managed.URL())
	} else {
		d.brokerURL = cfg.BrokerURL
	}
	d.conn = a2amqtt.Connection{Broker: d.brokerURL, TLS: cfg.TLS, Username: cfg.Username, Password: cfg.Password}
	var transcript io.Writer = stdout
	if !cfg.Transcript {
		transcript = io.Discard
	}
	d.transcript = transcript
	fmt.Fprintf(stdout, "the profile's user stories run as 02, 03, 05, 07, 08, 09; %s\n", notRunLine())
	io.WriteString(transcript, Legend(d.root, d.org, d.unit))
	var err error
	d.sniff, err = startSniffer(ctx, d.conn, d.root, d.org+"/"+d.unit+"/transcript", transcript)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", d.brokerURL, err)
	}
	defer d.sniff.close()
	d.client, err = a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: d.conn, Root: d.root, Org: d.org, Unit: d.unit, ID: "requester", Requester: requester.Config{Logger: d.log}})
	if err != nil {
		return nil, err
	}
	defer d.client.Close(context.Background())

	main, err := refagent.Start(ctx, d.agentConfig("echo"))
	if err != nil {
		return nil, fmt.Errorf("starting the reference agent: %w", err)
	}
	defer main.Close(context.Background())
	if err := d.sniff.seen(ctx, d.discovery("echo"), mqttbind.StatusOnline, ""); err != nil {
		return nil, err
	}
	if err := d.sniff.sync(ctx); err != nil {
		return nil, err
	}
	d.sniff.takeMessages()

	var stories []Story
	for _, s := range Stories {
		if cfg.Stories == nil || slices.Contains(cfg.Stories, s.ID) {
			stories = append(stories, s)
		}
	}
	if slices.ContainsFunc(stories, func(s Story) bool { return s.HTTP }) {
		stop, err := d.startHTTP(ctx, transcript)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if slices.ContainsFunc(stories, func(s Story) bool { return s.Secured }) {
		stop, err := d.startSecured(ctx, transcript)
		if err != nil {
			return nil, err
		}
		defer stop()
	}

	var results []Result
	var refused error // the broker's refusal that stopped the stories
	for _, s := range stories {
		fmt.Fprintf(stdout, "\n== story %s: %s\n", s.ID, s.Title)
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		detail, err := s.run(sctx, d)
		sniff := d.sniff
		if s.Secured {
			sniff = d.secured.sniff
		}
		if !s.HTTP {
			// Let the transcript catch up before the verdict.
			if serr := sniff.sync(sctx); err == nil && serr != nil {
				err = serr
			}
		}
		scancel()
		switch {
		case s.HTTP && cfg.RecordHTTP != nil:
			cfg.RecordHTTP(s.ID, d.wire.take())
		case s.HTTP:
			d.wire.take()
		case cfg.Record != nil:
			cfg.Record(s.ID, sniff.takeMessages())
		}
		why, _, skip := skipReason(err)
		r := Result{ID: s.ID, Title: s.Title, Detail: detail, Err: err, Skipped: skip}
		results = append(results, r)
		switch {
		case r.Skipped:
			fmt.Fprintf(stdout, "   SKIP: %s\n", why)
		case err != nil:
			fmt.Fprintf(stdout, "   FAIL: %v\n", err)
		default:
			fmt.Fprintf(stdout, "   pass: %s\n", detail)
		}
		if cfg.OnResult != nil {
			cfg.OnResult(r)
		}
		if r.Skipped {
			continue
		}
		if a2amqtt.IsRefusal(err) {
			// The broker refuses what the stories need (an ACL, a
			// capability, a size): the next stories would meet the same
			// refusal, or wait for their timeouts.
			refused = fmt.Errorf("story %s: %w", s.ID, err)
			fmt.Fprintf(stdout, "   stopped: the broker refused; %d more stories not run\n", len(stories)-len(results))
			break
		}
	}
	d.sniff.mute()
	if d.secured != nil {
		d.secured.sniff.mute()
	}
	var skipped, failed []string
	sum := Summary{Duration: time.Since(started)}
	fmt.Fprintf(stdout, "\n== summary (%.1fs)\n", sum.Duration.Seconds())
	for _, r := range results {
		verdict := "pass"
		switch {
		case r.Skipped:
			verdict = "SKIP"
			_, why, _ := skipReason(r.Err)
			skipped = append(skipped, r.ID+": "+why)
			sum.Skipped = append(sum.Skipped, Skip{r.ID, why})
		case r.Err != nil:
			verdict = "FAIL"
			failed = append(failed, r.ID)
		}
		fmt.Fprintf(stdout, "  %s  %-3s  %s\n", verdict, r.ID, r.Title)
	}
	fmt.Fprintf(stdout, "  %s\n", notRunLine())
	// The last line: nothing is printed after it.
	last := fmt.Sprintf("%d passed", len(results)-len(skipped)-len(failed))
	if len(failed) > 0 {
		last += fmt.Sprintf(", %d failed (%s)", len(failed), strings.Join(failed, ", "))
	}
	if len(skipped) > 0 {
		last += fmt.Sprintf(", %d skipped (%s)", len(skipped), strings.Join(skipped, "; "))
	}
	if n := len(Stories) - len(results); refused != nil && n > 0 {
		last += fmt.Sprintf(", %d not run after the broker's refusal", n)
		sum.NotRunAfterRefusal = n
	}
	if len(failed) == 0 && len(skipped) == 0 && refused == nil {
		last = fmt.Sprintf("all %d stories passed", len(results))
	}
	fmt.Fprintln(stdout, last)
	sum.Passed, sum.Failed, sum.Line = len(results)-len(skipped)-len(failed), failed, last
	if cfg.OnSummary != nil {
		cfg.OnSummary(sum)
	}
	if refused != nil {
		return results, fmt.Errorf("%w: stopped at the broker's refusal: %w", ErrFailed, refused)
	}
	if len(failed) > 0 {
		return results, fmt.Errorf("%w: %d of %d", ErrFailed, len(failed), len(results))
	}
	return results, nil
}

// Stories are the user stories the demo runs, in order: over MQTT, over
// HTTP, on the secured broker, then the agent fleet on PostgreSQL.
var Stories = []Story{
	{"02", "single request, single reply", false, false, story02},
	{"03", "streaming reply", false, false, story03},
	{"05", "shared pool dispatch", false, false, story05},
	{"07", "task handover", false, false, story07},
	{"08", "multi-turn conversation", false, false, story08},
	{"09", "presence lifecycle", false, false, story09},
	{"H02", "single request, single reply over HTTP", true, false, storyH02},
	{"H03", "streaming reply over HTTP (Server-Sent Events)", true, false, storyH03},
	{"H08", "multi-turn conversation over HTTP", true, false, storyH08},
	{"O01", "offline store-and-forward over HTTP: asleep, queued, queue full, wake, delivered once, replay refused", true, false, storyO01},
	{"P01", "push notifications over HTTP: bind, deliver, receiver killed, the poll settles it", true, false, storyP01},
	{"S11", "an intruder is refused (secured broker)", false, true, storyS11},
	{"F01", "agent fleet on PostgreSQL: three pool members share a store, the one holding an INPUT_REQUIRED task is killed, " +
		"the follow-up fails over to the pool and completes on another, once", false, false, storyF01},
}

// startHTTP serves the reference agent "echo" over HTTP alone on a
// loopback port (no broker: a store and a runtime of its own) and makes
// the HTTP stories' requester, which resolves the endpoint from the card.
// The card's fetch is not part of any story's transcript.
func (d *demo) startHTTP(ctx context.Context, transcript io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the HTTP agent: %w", err)
	}
	ra, err := refagent.Start(ctx, refagent.Config{ID: "echo", HTTP: ln, Log: d.log})
	if err != nil {
		return nil, fmt.Errorf("starting the reference agent over HTTP: %w", err)
	}
	base := strings.TrimSuffix(ra.HTTPURL(), refagent.HTTPPath)
	fmt.Fprintf(d.out, "HTTP agent: echo at %s (card at %s%s), no broker\n", ra.HTTPURL(), base, a2ahttp.WellKnownCardPath)
	d.wire = newWire(transcript)
	d.http, err = a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base, HTTPClient: &http.Client{Transport: d.wire},
		Requester: requester.Config{Logger: d.log}})
	if err != nil {
		ra.Close(context.Background())
		return nil, fmt.Errorf("reading the HTTP agent's card: %w", err)
	}
	d.wire.take()
	return func() {
		d.http.Close(context.Background())
		ra.Close(context.Background())
	}, nil
}

func (d *demo) discovery(agentID string) string {
	t, _ := d.root.DiscoveryTopic(d.org, d.unit, agentID)
	return t
}

func text(s string) *a2a.Message {
	return &a2a.Message{ContextID: uuid.NewString(), Parts: []a2a.Part{{Content: a2a.PartText(s)}}}
}

func artifactText(t *a2a.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		b.WriteString(PartsText(a.Parts))
	}
	return b.String()
}

func story02(ctx context.Context, d *demo) (string, error) {
	res, err := d.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: text("hello, agent")}, requester.To(requester.Target{Agent: "echo"}))
	if err != nil {
		return "", err
	}
	if res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 || !strings.Contains(artifactText(res.Task), "hello, agent") {
		return "", fmt.Errorf("got %s with %d artifacts", res.Task.Status.State, len(res.Task.Artifacts))
	}
	return "one reply, task " + short(res.Task.ID) + " COMPLETED with the echo", nil
}

func story03(ctx context.Context, d *demo) (string, error) {
	return streamStory(d.client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: text("stream this")}, requester.To(requester.Target{Agent: "echo"})))
}

// streamStory checks a stream of the reference agent's reply: the task
// first, at least two artifact chunks, COMPLETED last. It returns the
// sequence of items.
func streamStory(items iter.Seq2[requester.Item, error]) (string, error) {
	var kinds []string
	artifacts := 0
	for it, err := range items {
		if err != nil {
			return "", err
		}
		k := describeItem(it.StreamResponse)
		if _, ok := it.Payload.(*a2a.TaskArtifactUpdateEvent); ok {
			artifacts++
			k = "artifact"
		}
		kinds = append(kinds, strings.Fields(k)[0]+stateSuffix(it))
	}
	seq := strings.Join(kinds, " > ")
	if len(kinds) < 4 || kinds[0] != "task" || kinds[len(kinds)-1] != "status:TASK_STATE_COMPLETED" || artifacts < 2 {
		return "", fmt.Errorf("stream was %s", seq)
	}
	return seq, nil
}

func stateSuffix(it requester.Item) string {
	if s, ok := it.Payload.(*a2a.TaskStatusUpdateEvent); ok {
		return ":" + StateOf(s.Status)
	}
	return ""
}

func story05(ctx context.Context, d *demo) (string, error) {
	// The members first: a broker whose CONNACK offers no shared
	// subscriptions refuses the first one at once (*a2amqtt.CapabilityError,
	// and the story is skipped); then the probe, for a broker that offers
	// them but does not deliver the pool's topics.
	ids := []string{"worker-1", "worker-2"}
	var members []*refagent.Agent
	stopped := false
	// stop closes the members started and waits for their offline cards.
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		for _, m := range members {
			m.Close(context.Background())
		}
		for _, id := range ids[:len(members)] {
			if err := d.sniff.seen(ctx, d.discovery(id), mqttbind.StatusOffline, ""); err != nil {
				return err
			}
		}
		return nil
	}
	defer stop()
	for _, id := range ids {
		m, err := refagent.Start(ctx, d.agentConfig(id, "workers"))
		if err != nil {
			return "", err
		}
		members = append(members, m)
	}
	if err := d.sniff.probeShared(ctx); err != nil {
		return "", err
	}
	for _, id := range ids {
		if err := d.sniff.seen(ctx, d.discovery(id), mqttbind.StatusOnline, ""); err != nil {
			return "", err
		}
	}
	res, err := d.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: text("ask the pool")}, requester.To(requester.Target{Pool: "workers"}))
	if err != nil {
		if errors.Is(err, requester.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("no pool member answered: %v (brokers that do not deliver the pool's topics to $share subscriptions cannot carry pools: mosquitto 2.0.11 under a root beginning with $)", err)
		}
		return "", err
	}
	if res.Responder != "worker-1" && res.Responder != "worker-2" {
		return "", fmt.Errorf("pooled reply names responder %q", res.Responder)
	}
	if err := d.sniff.sync(ctx); err != nil {
		return "", err
	}
	d.sniff.take()
	done, err := d.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: res.Task.ID, ContextID: res.Task.ContextID,
		Parts: []a2a.Part{{Content: a2a.PartText("option 2")}}}}, requester.To(requester.Target{Pool: "workers"}))
	if err != nil {
		return "", err
	}
	if done.Task.Status.State != a2a.TaskStateCompleted {
		return "", fmt.Errorf("follow-up ended %s", done.Task.Status.State)
	}
	direct := "request/" + res.Responder + " "
	if err := d.sniff.sync(ctx); err != nil {
		return "", err
	}
	if !anyHas(d.sniff.take(), direct) {
		return "", fmt.Errorf("the follow-up did not go to %s's direct topic", res.Responder)
	}
	if err := stop(); err != nil {
		return "", err
	}
	return res.Responder + " took the task from the pool; the follow-up went to its direct topic", nil
}

func anyHas(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func story07(ctx context.Context, d *demo) (string, error) {
	conv := d.client.NewConversation(requester.Target{Agent: "echo"})
	res, err := conv.Turn(ctx, "handover to a specialist")
	if err != nil {
		return "", err
	}
	if res.Responder != "echo-c1" || res.Task.Status.State != a2a.TaskStateInputRequired {
		return "", fmt.Errorf("reply from %q in %s", res.Responder, res.Task.Status.State)
	}
	if err := d.sniff.sync(ctx); err != nil {
		return "", err
	}
	d.sniff.take()
	done, err := conv.Resume(ctx, res.Task.ID, "size M")
	if err != nil {
		return "", err
	}
	if done.Task.Status.State != a2a.TaskStateCompleted || done.Task.ID != res.Task.ID {
		return "", fmt.Errorf("follow-up ended %s", done.Task.Status.State)
	}
	if err := d.sniff.sync(ctx); err != nil {
		return "", err
	}
	if !anyHas(d.sniff.take(), "request/echo-c1 ") {
		return "", errors.New("the follow-up did not go to echo-c1's direct topic")
	}
	got, err := d.client.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		return "", fmt.Errorf("GetTask from echo-c1: %w", err)
	}
	return "echo handed task " + short(res.Task.ID) + " to echo-c1, which answered the follow-up and GetTask", nil
}

func story08(ctx context.Context, d *demo) (string, error) {
	return multiTurn(ctx, d.client.Client, requester.Target{Agent: "echo"})
}

// multiTurn runs a conversation with the reference agent through c: a turn
// that asks for input, resumed with the same taskId; a second turn that
// sees the first in its context; a follow-up with a wrong contextId,
// refused with -32602.
func multiTurn(ctx context.Context, c *requester.Client, to requester.Target) (string, error) {
	conv := c.NewConversation(to)
	first, err := conv.Turn(ctx, "ask me something")
	if err != nil {
		return "", err
	}
	if first.Task.Status.State != a2a.TaskStateInputRequired {
		return "", fmt.Errorf("first turn ended %s", first.Task.Status.State)
	}
	resumed, err := conv.Resume(ctx, first.Task.ID, "option 1")
	if err != nil {
		return "", err
	}
	if resumed.Task.ID != first.Task.ID || resumed.Task.Status.State != a2a.TaskStateCompleted {
		return "", fmt.Errorf("resume ended %s", resumed.Task.Status.State)
	}
	next, err := conv.Turn(ctx, "and a follow-up")
	if err != nil {
		return "", err
	}
	if next.Task.ID == first.Task.ID || !strings.Contains(artifactText(next.Task), "earlier tasks in this context: 1") {
		return "", fmt.Errorf("follow-up turn: %q", artifactText(next.Task))
	}
	_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: next.Task.ID, ContextID: uuid.NewString(),
		Parts: []a2a.Part{{Content: a2a.PartText("wrong context")}}}}, requester.To(to))
	var e *a2a.Error
	if !errors.As(err, &e) || e.Code != -32602 {
		return "", fmt.Errorf("a mismatched contextId was answered with %v", err)
	}
	return "resumed after INPUT_REQUIRED, a second turn saw the first, a wrong contextId got -32602", nil
}

func story09(ctx context.Context, d *demo) (string, error) {
	w, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: d.conn, Root: d.root, Org: d.org, Unit: d.unit})
	if err != nil {
		return "", err
	}
	defer w.Close(context.Background())
	expect := func(agentID string, status presence.Status, source presence.Source) error {
		for {
			select {
			case ch := <-w.Changes():
				if ch.Entry.Key.Agent != agentID {
					continue
				}
				if ch.Entry.Status() == status && ch.Entry.Source() == source {
					return nil
				}
			case <-ctx.Done():
				e, _ := w.Lookup(agentID)
				return fmt.Errorf("%s: want %s/%s, have %s/%s", agentID, status, source, e.Status(), e.Source())
			}
		}
	}
	cfg := d.agentConfig("presence")
	cfg.KeepAlive = 5 * time.Second
	a, err := refagent.Start(ctx, cfg)
	if err != nil {
		return "", err
	}
	if err := expect("presence", presence.StatusOnline, presence.SourceAgent); err != nil {
		return "", fmt.Errorf("online: %w", err)
	}
	if err := a.Close(ctx); err != nil {
		return "", err
	}
	if err := expect("presence", presence.StatusOffline, presence.SourceAgent); err != nil {
		return "", fmt.Errorf("graceful offline: %w", err)
	}
	if a, err = refagent.Start(ctx, cfg); err != nil {
		return "", err
	}
	if err := expect("presence", presence.StatusOnline, presence.SourceAgent); err != nil {
		return "", fmt.Errorf("reconnect: %w", err)
	}
	a.Kill()
	if err := expect("presence", presence.StatusOffline, presence.SourceLWT); err != nil {
		return "", fmt.Errorf("crash: %w", err)
	}
	if err := d.sniff.seen(ctx, d.discovery("presence"), mqttbind.StatusOffline, mqttbind.StatusSourceLWT); err != nil {
		return "", err
	}
	detail := "online, graceful offline, reconnect, crash with the Will"
	if d.statusBroker == "" {
		return detail + " (broker-managed status: not checked on an external broker)", nil
	}
	// Broker-managed status, on the embedded broker that offers it.
	mw, err := a2amqtt.Watch(ctx, a2amqtt.WatchConfig{Connection: a2amqtt.Connection{Broker: d.statusBroker}, Root: d.root, Org: d.org, Unit: d.unit})
	if err != nil {
		return "", err
	}
	defer mw.Close(context.Background())
	w.Close(context.Background())
	w = mw
	fmt.Fprintf(d.transcript, "   (broker-managed status on %s)\n", d.statusBroker)
	ms, err := startSnifferAt(ctx, a2amqtt.Connection{Broker: d.statusBroker}, d.root, d.org+"/"+d.unit+"/transcript2", d.transcript, d.sniff.start)
	if err != nil {
		return "", err
	}
	defer ms.close()
	cfg.Broker, cfg.TLS, cfg.Username, cfg.Password = d.statusBroker, nil, "", nil
	if a, err = refagent.Start(ctx, cfg); err != nil {
		return "", err
	}
	if err := expect("presence", presence.StatusOnline, presence.SourceBroker); err != nil {
		return "", fmt.Errorf("broker-managed online: %w", err)
	}
	a.Kill()
	if err := expect("presence", presence.StatusOffline, presence.SourceBroker); err != nil {
		return "", fmt.Errorf("broker-managed offline: %w", err)
	}
	// The broker's offline reaches the transcript before the verdict.
	if err := ms.seen(ctx, d.discovery("presence"), mqttbind.StatusOffline, mqttbind.StatusSourceBroker); err != nil {
		return "", err
	}
	if err := ms.sync(ctx); err != nil {
		return "", err
	}
	return detail + ", and broker-managed online / offline", nil
}
