package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Helpers of the offline store-and-forward tests (docs/protocol.md §7):
// a2a agent --reachability sleep run as a real process, spoken to with
// plain net/http POSTs of JSON-RPC, as any A2A v1.0 client would.

// offlineDeadline bounds every wait of these tests.
const offlineDeadline = 60 * time.Second

// offAgent is a running a2a agent --reachability sleep.
type offAgent struct {
	p        *process
	endpoint string
}

// startOffAgent runs a2a agent with args and waits until it has printed
// its queue line (docs/protocol.md §7.10), the last line of its start.
func startOffAgent(t *testing.T, args ...string) *offAgent {
	t.Helper()
	return startOffAgentEnv(t, nil, args...)
}

// startOffAgentEnv is startOffAgent with variables added to the
// environment.
func startOffAgentEnv(t *testing.T, env []string, args ...string) *offAgent {
	t.Helper()
	p := startEnv(t, env, append([]string{"agent"}, args...)...)
	offWaitOutput(t, p, "agent is sleep: offline queue ")
	m := endpointRE.FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no endpoint in:\n%s", p.output())
	}
	return &offAgent{p: p, endpoint: m[1]}
}

// offWaitOutput waits until p's output contains s, or p exits.
func offWaitOutput(t *testing.T, p *process, s string) {
	t.Helper()
	deadline := time.Now().Add(offlineDeadline)
	for !strings.Contains(p.output(), s) {
		select {
		case <-p.done:
			if strings.Contains(p.output(), s) {
				return
			}
			t.Fatalf("the agent exited (%v) before printing %q:\n%s", p.cmd.ProcessState, s, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in output:\n%s", s, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill9 kills the agent with SIGKILL, as a crash or a power cut would,
// and waits for it to be gone.
func (s *offAgent) kill9(t *testing.T) {
	t.Helper()
	if err := s.p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	<-s.p.done
}

// signal sends sig and waits until the agent prints line once more than
// before. The agent hooks SIGUSR1 and SIGUSR2 only after its start lines,
// so a signal sent at once may find them not yet hooked (it is then
// ignored): it is sent again every second until the line appears.
func (s *offAgent) signal(t *testing.T, sig syscall.Signal, line string) {
	t.Helper()
	before := strings.Count(s.p.output(), line)
	deadline := time.Now().Add(offlineDeadline)
	for {
		if err := s.p.cmd.Process.Signal(sig); err != nil {
			t.Fatalf("%v: %v\n%s", sig, err, s.p.output())
		}
		resend := time.Now().Add(time.Second)
		for time.Now().Before(resend) {
			if strings.Count(s.p.output(), line) > before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %v:\n%s", line, sig, s.p.output())
		}
	}
}

// wake sends SIGUSR1: the agent delivers its queue and serves live.
func (s *offAgent) wake(t *testing.T) { t.Helper(); s.signal(t, syscall.SIGUSR1, "agent awake\n") }

// sleep sends SIGUSR2: the agent queues again.
func (s *offAgent) sleep(t *testing.T) { t.Helper(); s.signal(t, syscall.SIGUSR2, "agent asleep\n") }

// offlineClient is an HTTP client that keeps a connection for each of
// up to 128 concurrent senders, closed when the test ends.
func offlineClient(t *testing.T) *http.Client {
	c := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// offAnswer is an answer to SendMessage: the HTTP status and the body
// of the offline profile (docs/protocol.md §7.2, §7.4), or a JSON-RPC
// response.
type offAnswer struct {
	Status    int
	Raw       string
	Error     string `json:"error"`
	Message   string `json:"message"`
	Queued    *bool  `json:"queued"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Kind      string `json:"kind"`
}

// queued reports whether the answer is 503 agent_asleep, queued true, with
// the task to poll.
func (a offAnswer) queued() bool {
	return a.Status == http.StatusServiceUnavailable && a.Error == "agent_asleep" && a.Queued != nil && *a.Queued && a.TaskID != ""
}

// full reports whether the answer is asleep_queue_full, queued false, of
// the given kind, with its status (507, or 429 for kind peer).
func (a offAnswer) full(kind string) bool {
	status := http.StatusInsufficientStorage
	if kind == "peer" {
		status = http.StatusTooManyRequests
	}
	return a.Status == status && a.Error == "asleep_queue_full" && a.Queued != nil && !*a.Queued && a.Kind == kind
}

func (a offAnswer) String() string { return fmt.Sprintf("HTTP %d %s", a.Status, a.Raw) }

// rpc posts one JSON-RPC request with the A2A v1.0 headers and the bearer
// token (none when token is "").
func offRPC(c *http.Client, endpoint, token, method string, params any) (int, []byte, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// offSend posts SendMessage of a new task with one text part. err is
// set when no answer arrived (the connection failed).
func offSend(c *http.Client, endpoint, token, messageID, text string) (offAnswer, error) {
	msg := map[string]any{"messageId": messageID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	status, b, err := offRPC(c, endpoint, token, "SendMessage", map[string]any{"message": msg})
	if err != nil {
		return offAnswer{}, err
	}
	a := offAnswer{Status: status, Raw: string(b)}
	if status != http.StatusOK {
		if err := json.Unmarshal(b, &a); err != nil {
			return a, fmt.Errorf("HTTP %d with a body that is not JSON: %q", status, b)
		}
		a.Status, a.Raw = status, string(b)
	}
	return a, nil
}

// offQueue sends a message that must be answered 503 queued:true and
// returns its task id.
func offQueue(t *testing.T, c *http.Client, endpoint, token, messageID, text string) string {
	t.Helper()
	a, err := offSend(c, endpoint, token, messageID, text)
	if err != nil || !a.queued() {
		t.Fatalf("SendMessage %s: want 503 agent_asleep queued:true with a taskId, got %v (err %v)", messageID, a, err)
	}
	return a.TaskID
}

// offTask is what these tests read of a Task answered by GetTask.
type offTask struct {
	ID     string `json:"id"`
	Status struct {
		State   string `json:"state"`
		Message *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// reason is the text of the task's status message.
func (v offTask) reason() string {
	if v.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range v.Status.Message.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// artifactText is the text of the task's artifacts, chunks joined.
func (v offTask) artifactText() string {
	var b strings.Builder
	for _, a := range v.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// offGetTask asks GetTask; found is false for task_not_found.
func offGetTask(c *http.Client, endpoint, token, id string) (v offTask, found bool, err error) {
	status, b, err := offRPC(c, endpoint, token, "GetTask", map[string]any{"id": id})
	if err != nil {
		return v, false, err
	}
	var resp struct {
		Result *offTask `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || status != http.StatusOK {
		return v, false, fmt.Errorf("GetTask %s: HTTP %d %q", id, status, b)
	}
	if resp.Error != nil {
		if resp.Error.Code == -32001 {
			return v, false, nil
		}
		return v, false, fmt.Errorf("GetTask %s: %s", id, b)
	}
	if resp.Result == nil || resp.Result.ID != id {
		return v, false, fmt.Errorf("GetTask %s: %s", id, b)
	}
	return *resp.Result, true, nil
}

// offTerminal are the states a queued task ends in.
var offTerminal = map[string]bool{"TASK_STATE_COMPLETED": true, "TASK_STATE_FAILED": true,
	"TASK_STATE_REJECTED": true, "TASK_STATE_CANCELED": true}

// offWaitEnded polls GetTask until every task (id → token) is in a
// terminal state, and returns them. While it waits a task may be
// SUBMITTED (queued), WORKING, or unknown (task_not_found: a record taken
// from the queue for delivery is, until its turn starts, neither queued
// nor stored); a task lost for good shows as not ended at the deadline.
func offWaitEnded(t *testing.T, c *http.Client, endpoint string, tasks map[string]string) map[string]offTask {
	t.Helper()
	out := map[string]offTask{}
	deadline := time.Now().Add(offlineDeadline)
	for {
		var pending []string
		for id, token := range tasks {
			if _, ok := out[id]; ok {
				continue
			}
			v, found, err := offGetTask(c, endpoint, token, id)
			if err != nil {
				t.Fatal(err)
			}
			if found && offTerminal[v.Status.State] {
				out[id] = v
				continue
			}
			pending = append(pending, fmt.Sprintf("%s (%s, found %v)", id, v.Status.State, found))
		}
		if len(pending) == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks have not ended: %s", len(pending), strings.Join(pending[:min(len(pending), 5)], ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drainQueue returns once every record queued before the call was taken
// from the queue: it puts the agent to sleep, queues a probe, wakes the
// agent and waits until the probe was delivered. Delivery is in queue
// order, one turn after the other (docs/protocol.md §7.10), so the records
// before it were delivered or drained, and their log lines written.
func (s *offAgent) drainQueue(t *testing.T, c *http.Client, token, probeID string) {
	t.Helper()
	s.sleep(t)
	id := offQueue(t, c, s.endpoint, token, probeID, "probe "+probeID)
	s.wake(t)
	v := offWaitEnded(t, c, s.endpoint, map[string]string{id: token})[id]
	if v.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("probe %s ended %s: %s", probeID, v.Status.State, v.reason())
	}
	offWaitOutput(t, s.p, " message="+probeID+" ")
}

// offDeliveredRE is the info line of a delivered queued message.
var offDeliveredRE = regexp.MustCompile(`msg="agent: offline queue: delivered" task=(\S+) peer=(\S+) message=(\S+) `)

// offDeliveries counts the delivered lines by messageId, over the outputs
// of every run of an agent; tasks maps the messageId to the task ids it
// was delivered as, peers to the peer.
type offDeliveries struct {
	count map[string]int
	tasks map[string][]string
	peers map[string]string
}

func offReadDeliveries(outputs ...string) offDeliveries {
	d := offDeliveries{count: map[string]int{}, tasks: map[string][]string{}, peers: map[string]string{}}
	for _, out := range outputs {
		for _, m := range offDeliveredRE.FindAllStringSubmatch(out, -1) {
			d.count[m[3]]++
			d.tasks[m[3]] = append(d.tasks[m[3]], m[1])
			d.peers[m[3]] = m[2]
		}
	}
	return d
}

// offTokens writes a --tokens file with the token "tok-SUBJECT" for
// each subject, and returns its path.
func offTokens(t *testing.T, subjects ...string) string {
	t.Helper()
	var b strings.Builder
	for _, s := range subjects {
		fmt.Fprintf(&b, "tok-%s %s\n", s, s)
	}
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
