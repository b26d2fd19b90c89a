package inbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/sealtest/sealagent"
)

// The secrets and the message the test queues, each a string found
// nowhere else.
const (
	secretToken = "tok-d41c77a0-do-not-store-in-clear"
	secretCreds = "cred-0b9e33f2-do-not-store-in-clear"
	secretText  = "text-6a2f9e10-the-caller-wrote"
)

// A message queued while the agent sleeps, carrying a push config with a
// token and credentials, is stored sealed: the queue file holds neither
// the secrets nor the message; GetTaskPushNotificationConfig, answered
// from the queue, returns them intact. Without a ring the file holds them
// (the check finds what it looks for).
func TestAQueuedMessageIsSealedInTheFile(t *testing.T) {
	for _, sealing := range []bool{true, false} {
		t.Run(map[bool]string{true: "sealed", false: "in clear"}[sealing], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "queue.db")
			opts := inbox.BoltOptions{}
			if sealing {
				opts.Keys = sealtest.NewRing(t, "k1")
			}
			q, _, err := inbox.OpenBolt(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q.Close() })
			id := sealagent.Queue(t, q, secretToken, secretCreds, secretText)
			if st, _ := q.Stats(context.Background()); st.Messages != 1 {
				t.Fatalf("queued %+v", st)
			}
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sealing {
				sealtest.AssertAbsent(t, "the queue file", file, secretToken, secretCreds, secretText)
			} else {
				sealtest.AssertPresent(t, "a queue file written without a ring", file, secretToken, secretCreds, secretText)
			}
			if !bytes.Contains(file, []byte(id)) {
				t.Fatal("the file does not hold the task id: not the queue's file?")
			}
		})
	}
}
