package agent

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// signedValidator is a stand-in for agent/governed's (which imports this
// package): it checks an Ed25519 signature over the message id, so that the
// benchmark pays for a signature check per record.
type signedValidator struct{ pub ed25519.PublicKey }

func (v signedValidator) Validate(_ context.Context, m QueuedMessage, _ time.Time) (string, time.Time, error) {
	s, _ := m.Message.Metadata["sig"].(string)
	sig, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !ed25519.Verify(v.pub, []byte(m.Message.MessageID), sig) {
		return "", time.Time{}, fmt.Errorf("bad signature")
	}
	return "obj:" + m.Message.MessageID, m.Expires, nil
}

// BenchmarkOfflineWake measures a wake: dequeue, validate and deliver
// (a turn that completes) of b.N queued records of about 1 KiB, in
// records/s.
func BenchmarkOfflineWake(b *testing.B) {
	for _, signed := range []bool{false, true} {
		name := "replay-by-message-id"
		if signed {
			name = "ed25519"
		}
		b.Run(name, func(b *testing.B) { benchWake(b, signed) })
	}
}

func benchWake(b *testing.B, signed bool) {
	q, _, err := inbox.OpenBolt(filepath.Join(b.TempDir(), "queue.db"), inbox.BoltOptions{MaxReplay: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	seed := make([]byte, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	cfg := OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q,
		Bounds: offline.QueueBounds{MaxMessages: b.N + 1, MaxBytes: 1 << 40, MaxPerPeer: b.N + 1}}
	if signed {
		cfg.Validator = signedValidator{key.Public().(ed25519.PublicKey)}
	}
	o, err := NewOffline(cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(HandlerFunc(func(ctx context.Context, t *Turn) error { return t.Complete(ctx, "ok") }), WithOffline(o),
		WithStore(taskstore.NewMemory(time.Now, taskstore.MaxTasks(0), taskstore.MaxBytes(0))))
	defer srv.Close(context.Background())
	ctx := context.Background()
	text := a2a.PartText(string(make([]byte, 1000)))
	// Fill the queue with concurrent senders, as a real burst would.
	work := make(chan int)
	errs := make(chan error, 64)
	for range 64 {
		go func() {
			for i := range work {
				m := &a2a.Message{MessageID: fmt.Sprint("m-", i), Role: a2a.RoleUser, Parts: []a2a.Part{{Content: text}}}
				if signed {
					m.Metadata = map[string]any{"sig": base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(m.MessageID)))}
				}
				var r firstReply
				req := &a2a.SendMessageRequest{Message: m}
				call := Call{Request: &jsonrpc.Request{Method: a2a.MethodSendMessage, Params: req}, IDs: tasklife.ResponderIDs, Caller: Caller{Subject: "peer"}}
				if err := srv.Serve(ctx, call, &r); err != nil || r.err == nil || r.err.Token != a2a.TokenAgentAsleep {
					errs <- fmt.Errorf("enqueue %d: %v %v", i, err, r.err)
				}
			}
			errs <- nil
		}()
	}
	for i := range b.N {
		work <- i
	}
	close(work)
	for range 64 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	o.SetAwake(true)
	for {
		st, err := o.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Delivered+st.Drained >= int64(b.N) {
			if st.Drained != 0 {
				b.Fatalf("%d drained", st.Drained)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}
