package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOfflineQueueSurvivesKill9DuringABurst: 64 concurrent senders, 8
// peers, a sleeping agent killed with SIGKILL in the middle of the burst.
// After the restart and the wake (docs/protocol.md §7.7, §7.10): every
// message answered 503 queued:true was on disk before the answer and is
// delivered exactly once, as the task it was given; none answered
// asleep_queue_full is delivered; one that got no answer (the kill cut
// it) is delivered at most once; and the bounds held (§7.3, §7.4) for
// what was answered queued and for what was delivered.
func TestOfflineQueueSurvivesKill9DuringABurst(t *testing.T) {
	const (
		maxMessages, maxPerPeer = 150, 30
		total, senders, killAt  = 400, 64, 150
	)
	peers := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	args := []string{"--http", "127.0.0.1:0", "--id", "burst", "--reachability", "sleep", "--data", t.TempDir(),
		"--queue-dir", t.TempDir(), "--tokens", offTokens(t, append(peers, "prober")...),
		"--queue-max-messages", fmt.Sprint(maxMessages), "--queue-max-per-peer", fmt.Sprint(maxPerPeer), "--log-level", "info"}
	c := offlineClient(t)
	first := startOffAgent(t, args...)

	// p0 sends half the messages, so that it passes its own bound while
	// the others are still queued.
	type outcome struct {
		peer, text string
		answer     offAnswer
		err        error
	}
	outcomes := make([]outcome, total)
	jobs := make(chan int)
	var answered atomic.Int64
	killNow := make(chan struct{})
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				o := &outcomes[i]
				o.answer, o.err = offSend(c, first.endpoint, "tok-"+o.peer, fmt.Sprintf("burst-%03d", i), o.text)
				if o.err == nil && answered.Add(1) == killAt {
					close(killNow)
				}
			}
		}()
	}
	killed := make(chan struct{})
	go func() {
		<-killNow
		first.p.cmd.Process.Kill()
		close(killed)
	}()
	for i := range total {
		peer := peers[1+i%7]
		if i%2 == 0 {
			peer = peers[0]
		}
		outcomes[i].peer, outcomes[i].text = peer, fmt.Sprintf("order %03d from %s", i, peer)
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the whole burst was answered (%d answers) before the kill", answered.Load())
	}
	<-first.p.done

	queued := map[string]outcome{} // messageId → outcome
	taskTokens := map[string]string{}
	var full, noAnswer []string
	queuedPerPeer := map[string]int{}
	for i, o := range outcomes {
		id := fmt.Sprintf("burst-%03d", i)
		switch {
		case o.err != nil:
			noAnswer = append(noAnswer, id)
		case o.answer.queued():
			if _, dup := taskTokens[o.answer.TaskID]; dup {
				t.Fatalf("%s queued as task %s, already given to another message", id, o.answer.TaskID)
			}
			queued[id] = o
			taskTokens[o.answer.TaskID] = "tok-" + o.peer
			queuedPerPeer[o.peer]++
		case o.answer.full("messages"), o.answer.full("peer"):
			full = append(full, id)
		default:
			t.Fatalf("%s: neither queued nor asleep_queue_full: %v", id, o.answer)
		}
	}
	t.Logf("%d answered queued, %d asleep_queue_full, %d without an answer", len(queued), len(full), len(noAnswer))
	if len(queued) == 0 || len(full) == 0 || len(noAnswer) == 0 {
		t.Fatalf("the burst did not exercise every outcome: %d queued, %d full, %d without an answer", len(queued), len(full), len(noAnswer))
	}
	if len(queued) > maxMessages {
		t.Fatalf("%d messages answered queued, more than --queue-max-messages %d", len(queued), maxMessages)
	}
	for p, k := range queuedPerPeer {
		if k > maxPerPeer {
			t.Fatalf("%s had %d messages answered queued, more than --queue-max-per-peer %d", p, k, maxPerPeer)
		}
	}

	second := startOffAgent(t, args...)
	second.wake(t)
	for tid, v := range offWaitEnded(t, c, second.endpoint, taskTokens) {
		if v.Status.State != "TASK_STATE_COMPLETED" {
			t.Errorf("queued task %s ended %s: %s", tid, v.Status.State, v.reason())
		}
	}
	second.drainQueue(t, c, "tok-prober", "probe-burst")

	d := offReadDeliveries(first.p.output(), second.p.output())
	if n := len(offReadDeliveries(first.p.output()).count); n != 0 {
		t.Errorf("the agent delivered %d messages while asleep", n)
	}
	for id, o := range queued {
		tid := o.answer.TaskID
		if d.count[id] != 1 || d.tasks[id][0] != tid || d.peers[id] != o.peer {
			t.Errorf("%s, answered queued as task %s of %s: delivered %d times, as %v, from %q", id, tid, o.peer, d.count[id], d.tasks[id], d.peers[id])
			continue
		}
		v, found, err := offGetTask(c, second.endpoint, "tok-"+o.peer, tid)
		if err != nil || !found || v.Status.State != "TASK_STATE_COMPLETED" || !strings.Contains(v.artifactText(), "echo: "+o.text) {
			t.Errorf("%s: task %s is %s (found %v, err %v) %q", id, tid, v.Status.State, found, err, v.artifactText())
		}
	}
	for _, id := range full {
		if d.count[id] != 0 {
			t.Errorf("%s was answered asleep_queue_full and delivered %d times", id, d.count[id])
		}
	}
	stored := 0
	for _, id := range noAnswer {
		switch d.count[id] {
		case 0:
		case 1:
			stored++
		default:
			t.Errorf("%s, which got no answer, was delivered %d times", id, d.count[id])
		}
	}
	deliveredPerPeer := map[string]int{}
	deliveredTotal := 0
	for id, k := range d.count {
		if id == "probe-burst" {
			continue
		}
		if !strings.HasPrefix(id, "burst-") {
			t.Errorf("delivered %s, never sent", id)
		}
		deliveredTotal += k
		deliveredPerPeer[d.peers[id]] += k
	}
	if deliveredTotal > maxMessages {
		t.Errorf("%d messages delivered from a queue bounded to %d", deliveredTotal, maxMessages)
	}
	for p, k := range deliveredPerPeer {
		if k > maxPerPeer {
			t.Errorf("%d messages of %s delivered from a queue bounded to %d per peer", k, p, maxPerPeer)
		}
	}
	t.Logf("%d delivered: %d answered queued, %d stored before the kill cut their answer", deliveredTotal, len(queued), stored)
	if t.Failed() {
		t.Logf("after the restart:\n%s", second.p.output())
	}
}

// TestReplayIsRefusedAfterRestart: a message delivered from the queue
// enters the replay cache, which survives a restart with the queue
// (docs/protocol.md §7.6, §7.7): the very same message (same sender, same
// messageId) queued again, with a crash before the next wake, is drained
// REJECTED as a replay and never reaches the handler a second time.
func TestReplayIsRefusedAfterRestart(t *testing.T) {
	data, queue := t.TempDir(), t.TempDir()
	args := []string{"--http", "127.0.0.1:0", "--id", "replayed", "--reachability", "sleep", "--data", data,
		"--queue-dir", queue, "--tokens", offTokens(t, "alice"), "--log-level", "info"}
	const token, msgID = "tok-alice", "pay-invoice-7"
	c := offlineClient(t)

	first := startOffAgent(t, args...)
	t1 := offQueue(t, c, first.endpoint, token, msgID, "pay invoice 7")
	// A naive retry while the first is pending stores nothing and
	// answers with the first's task (docs/protocol.md §7.10).
	if again := offQueue(t, c, first.endpoint, token, msgID, "pay invoice 7"); again != t1 {
		t.Fatalf("a retry of a pending message was queued as task %s, not as the pending %s", again, t1)
	}
	first.wake(t)
	if v := offWaitEnded(t, c, first.endpoint, map[string]string{t1: token})[t1]; v.Status.State != "TASK_STATE_COMPLETED" ||
		!strings.Contains(v.artifactText(), "echo: pay invoice 7") {
		t.Fatalf("first delivery: task %s ended %s %q %q", t1, v.Status.State, v.reason(), v.artifactText())
	}
	offWaitOutput(t, first.p, " message="+msgID+" ")

	first.sleep(t)
	t2 := offQueue(t, c, first.endpoint, token, msgID, "pay invoice 7")
	if t2 == t1 {
		t.Fatalf("the resent message was queued under the delivered task %s", t1)
	}
	first.kill9(t)

	second := startOffAgent(t, args...)
	second.wake(t)
	v := offWaitEnded(t, c, second.endpoint, map[string]string{t2: token})[t2]
	if v.Status.State != "TASK_STATE_REJECTED" || !strings.Contains(strings.ToLower(v.reason()), "replay") {
		t.Fatalf("the replayed task %s ended %s %q, want REJECTED mentioning replay", t2, v.Status.State, v.reason())
	}
	second.drainQueue(t, c, token, "probe-replay")
	d := offReadDeliveries(first.p.output(), second.p.output())
	if d.count[msgID] != 1 || d.tasks[msgID][0] != t1 {
		t.Fatalf("%s delivered %d times (tasks %v), want once as %s\n%s%s", msgID, d.count[msgID], d.tasks[msgID], t1,
			first.p.output(), second.p.output())
	}
	// The first task is still the one completed.
	if v := offWaitEnded(t, c, second.endpoint, map[string]string{t1: token})[t1]; v.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("after the restart task %s is %s", t1, v.Status.State)
	}
}

// TestExpiredRecordsAreNeverDelivered: a record that outlived --queue-ttl
// while the agent was down is purged, never delivered, and its task ends
// FAILED saying it expired (docs/protocol.md §7.3, §7.6, §7.10), so that
// the sender polling GetTask learns it.
func TestExpiredRecordsAreNeverDelivered(t *testing.T) {
	const ttl = 2 * time.Second
	args := []string{"--http", "127.0.0.1:0", "--id", "expiring", "--reachability", "sleep", "--data", t.TempDir(),
		"--queue-dir", t.TempDir(), "--tokens", offTokens(t, "bob"), "--queue-ttl", ttl.String(), "--log-level", "info"}
	const token = "tok-bob"
	c := offlineClient(t)

	first := startOffAgent(t, args...)
	tasks := map[string]string{}
	msgIDs := map[string]bool{}
	for i := range 4 {
		id := fmt.Sprintf("stale-%d", i)
		tasks[offQueue(t, c, first.endpoint, token, id, "stale news "+id)] = token
		msgIDs[id] = true
	}
	queuedBy := time.Now()
	first.kill9(t)
	// Down for longer than the TTL: wait on the clock, not on the agent.
	for time.Since(queuedBy) <= ttl+500*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
	}

	second := startOffAgent(t, args...)
	second.wake(t)
	for id, v := range offWaitEnded(t, c, second.endpoint, tasks) {
		if v.Status.State != "TASK_STATE_FAILED" || !strings.Contains(v.reason(), "expired") {
			t.Errorf("task %s ended %s %q, want FAILED mentioning expired", id, v.Status.State, v.reason())
		}
		if v.artifactText() != "" {
			t.Errorf("task %s has artifacts %q: it was run", id, v.artifactText())
		}
	}
	second.drainQueue(t, c, token, "probe-expired")
	d := offReadDeliveries(first.p.output(), second.p.output())
	for id := range msgIDs {
		if d.count[id] != 0 {
			t.Errorf("expired message %s was delivered %d times", id, d.count[id])
		}
	}
	if t.Failed() {
		t.Logf("first run:\n%s\nsecond run:\n%s", first.p.output(), second.p.output())
	}
}

// TestOneFloodingPeerGets429WhileAnotherStillQueues: the per-peer bound
// is keyed by the verified caller, the bearer token's subject
// (docs/protocol.md §7.3-§7.5): a peer flooding with 64 concurrent senders
// gets exactly --queue-max-per-peer messages queued and then 429
// asleep_queue_full kind peer, while another peer's messages, sent during
// the flood, are still answered 503 queued:true.
func TestOneFloodingPeerGets429WhileAnotherStillQueues(t *testing.T) {
	const perPeer, senders, politeN, maxFlood = 20, 64, 10, 20000
	args := []string{"--http", "127.0.0.1:0", "--id", "flooded", "--reachability", "sleep", "--queue-dir", t.TempDir(),
		"--tokens", offTokens(t, "flooder", "polite"), "--queue-max-per-peer", fmt.Sprint(perPeer), "--queue-max-messages", "500"}
	ag := startOffAgent(t, args...)
	c := offlineClient(t)

	var (
		mu        sync.Mutex
		queued    = map[string]string{} // flooder's messageId → task id
		refused   int
		unwanted  []string
		next      atomic.Int64
		stop      atomic.Bool
		first429  = make(chan struct{})
		once429   sync.Once
		wg        sync.WaitGroup
		floodDone = make(chan struct{})
	)
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				n := next.Add(1)
				if n > maxFlood {
					return
				}
				id := fmt.Sprintf("flood-%05d", n)
				a, err := offSend(c, ag.endpoint, "tok-flooder", id, "buy now "+id)
				mu.Lock()
				switch {
				case err != nil:
					unwanted = append(unwanted, id+": "+err.Error())
				case a.queued():
					queued[id] = a.TaskID
				case a.full("peer"):
					refused++
					once429.Do(func() { close(first429) })
				default:
					unwanted = append(unwanted, id+": "+a.String())
				}
				mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(floodDone) }()
	t.Cleanup(func() { stop.Store(true); <-floodDone })

	select {
	case <-first429:
	case <-floodDone:
		t.Fatalf("the flood of %d messages ended without a 429; queued %d, unwanted %v", next.Load(), len(queued), unwanted)
	case <-time.After(offlineDeadline):
		t.Fatalf("no 429 after %v of flooding; queued %d", offlineDeadline, len(queued))
	}
	// The flood goes on while the other peer sends.
	politeTasks := map[string]string{}
	for i := range politeN {
		id := fmt.Sprintf("polite-%d", i)
		tid := offQueue(t, c, ag.endpoint, "tok-polite", id, "hello "+id)
		if _, dup := politeTasks[tid]; dup {
			t.Fatalf("two polite messages queued as task %s", tid)
		}
		politeTasks[tid] = "tok-polite"
	}
	stillFlooding := !stop.Load()
	select {
	case <-floodDone:
		stillFlooding = false
	default:
	}
	stop.Store(true)
	<-floodDone

	mu.Lock()
	defer mu.Unlock()
	if len(unwanted) > 0 {
		t.Fatalf("%d flooder answers neither queued nor 429 kind peer, e.g. %v", len(unwanted), unwanted[:min(len(unwanted), 5)])
	}
	if len(queued) != perPeer {
		t.Fatalf("the flooder got %d messages queued, want exactly --queue-max-per-peer %d (%d refused 429)", len(queued), perPeer, refused)
	}
	if !stillFlooding {
		t.Fatalf("the flood (%d messages) ended before the other peer was done: the test proves nothing", next.Load())
	}
	t.Logf("flooder: %d queued, %d refused 429 kind peer; the other peer: %d queued", len(queued), refused, len(politeTasks))
	// Every queued task, the flooder's and the other peer's, is pending.
	for mid, tid := range queued {
		if v, found, err := offGetTask(c, ag.endpoint, "tok-flooder", tid); err != nil || !found || v.Status.State != "TASK_STATE_SUBMITTED" {
			t.Fatalf("flooder's %s (task %s): %s found %v err %v", mid, tid, v.Status.State, found, err)
		}
	}
	for tid := range politeTasks {
		if v, found, err := offGetTask(c, ag.endpoint, "tok-polite", tid); err != nil || !found || v.Status.State != "TASK_STATE_SUBMITTED" {
			t.Fatalf("polite task %s: %s found %v err %v", tid, v.Status.State, found, err)
		}
	}
}

// TestDamagedQueueFileIsReportedAndTheAgentStarts: a queue file damaged
// while the agent was down (cut short, or overwritten) is moved aside
// untouched, what can be read is salvaged into a fresh file, the agent
// says what was salvaged and dropped and starts (docs/protocol.md §7.10);
// on the wake it delivers what was salvaged: only messages that were
// queued, each at most once, and no queued task is left pending forever.
func TestDamagedQueueFileIsReportedAndTheAgentStarts(t *testing.T) {
	cases := []struct {
		name string
		// damage damages the file and returns what it then holds.
		damage func(t *testing.T, path string, size int64) []byte
	}{
		{"truncated to half its size", func(t *testing.T, path string, size int64) []byte {
			if err := os.Truncate(path, size/2); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"overwritten with random bytes of the same size", func(t *testing.T, path string, size int64) []byte {
			b := make([]byte, size)
			r := rand.New(rand.NewPCG(7, 11))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return b
		}},
	}
	// Messages of 3 kB: their records span pages across the file, so
	// that cutting it loses some and leaves others to salvage.
	const n = 40
	pad := strings.Repeat("x", 3000)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			queueDir := t.TempDir()
			args := []string{"--http", "127.0.0.1:0", "--id", "damaged", "--reachability", "sleep", "--data", t.TempDir(),
				"--queue-dir", queueDir, "--tokens", offTokens(t, "carol"), "--log-level", "info"}
			const token = "tok-carol"
			c := offlineClient(t)

			first := startOffAgent(t, args...)
			queued := map[string]string{} // messageId → task id
			for i := range n {
				id := fmt.Sprintf("kept-%02d", i)
				queued[id] = offQueue(t, c, first.endpoint, token, id, "keep "+id+" "+pad)
			}
			first.kill9(t)
			path := filepath.Join(queueDir, "queue.db")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			left := tc.damage(t, path, fi.Size())

			second := startOffAgent(t, args...)
			out := second.p.output()
			m := damagedRE.FindStringSubmatch(out)
			if m == nil || m[1] != path {
				t.Fatalf("no line saying %s was damaged:\n%s", path, out)
			}
			salvaged, replay, unreadable := atoi(t, m[4]), atoi(t, m[5]), atoi(t, m[6])
			uncounted := m[7] != ""
			t.Logf("%d queued; %d records and %d replay keys salvaged, %d unreadable dropped, uncounted %v (%s)", n, salvaged, replay, unreadable, uncounted, m[2])
			if !uncounted && salvaged+unreadable != n {
				t.Errorf("the line accounts for %d salvaged + %d dropped of %d queued, and says the count is complete", salvaged, unreadable, n)
			}
			if salvaged > n || salvaged+unreadable > n || replay != 0 {
				t.Fatalf("%d records queued and none delivered, but the line says %d salvaged, %d replay keys, %d unreadable", n, salvaged, replay, unreadable)
			}
			// Moved aside as it was, beside a fresh file.
			moved := m[3]
			if filepath.Dir(moved) != queueDir || !strings.HasPrefix(filepath.Base(moved), "queue.db.corrupt-") {
				t.Fatalf("moved to %s, want %s/queue.db.corrupt-*", moved, queueDir)
			}
			if b, err := os.ReadFile(moved); err != nil || !bytes.Equal(b, left) {
				t.Fatalf("the file moved aside (%d bytes, err %v) is not the damaged file (%d bytes)", len(b), err, len(left))
			}
			entries, err := os.ReadDir(queueDir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if len(names) != 2 || !slices.Contains(names, "queue.db") || !slices.Contains(names, filepath.Base(moved)) {
				t.Fatalf("the queue directory holds %v, want queue.db and %s", names, filepath.Base(moved))
			}

			second.wake(t)
			second.drainQueue(t, c, token, "probe-damaged")
			d := offReadDeliveries(first.p.output(), second.p.output())
			delivered := 0
			for id, count := range d.count {
				if id == "probe-damaged" {
					continue
				}
				tid, ok := queued[id]
				switch {
				case !ok:
					t.Errorf("delivered %s, which was never queued", id)
				case count != 1:
					t.Errorf("%s delivered %d times", id, count)
				case d.tasks[id][0] != tid:
					t.Errorf("%s delivered as task %s, queued as %s", id, d.tasks[id][0], tid)
				}
				delivered++
			}
			if delivered != salvaged {
				t.Errorf("%d messages delivered, %d records salvaged", delivered, salvaged)
			}
			// Each queued task was delivered and completed, or is unknown:
			// none is left SUBMITTED.
			for id, tid := range queued {
				v, found, err := offGetTask(c, second.endpoint, token, tid)
				switch {
				case err != nil:
					t.Fatal(err)
				case d.count[id] == 1 && (!found || v.Status.State != "TASK_STATE_COMPLETED" || !strings.Contains(v.artifactText(), "echo: keep "+id)):
					t.Errorf("delivered %s: task %s is %s (found %v) %q", id, tid, v.Status.State, found, v.artifactText())
				case d.count[id] == 0 && found:
					t.Errorf("lost %s: task %s is %s", id, tid, v.Status.State)
				}
			}
			if t.Failed() {
				t.Logf("after the restart:\n%s", second.p.output())
			}
		})
	}
}

// damagedRE is a2a agent's line for a damaged queue file.
var damagedRE = regexp.MustCompile(`offline queue (\S+) was damaged \((.*)\): moved to (\S+); (\d+) records and (\d+) replay keys salvaged, (\d+) unreadable dropped( and an unknown number more)?[^\n]*\n`)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
