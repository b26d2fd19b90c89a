package inbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/offline"
)

// An offline queue on a file: a record is on disk when Enqueue returns,
// bounds refuse what does not fit, and Take removes records for delivery
// with their replay keys.
func Example() {
	dir, _ := os.MkdirTemp("", "inbox-example-")
	defer os.RemoveAll(dir)
	q, rec, err := inbox.OpenBolt(filepath.Join(dir, "queue.db"), inbox.BoltOptions{})
	if err != nil {
		panic(err)
	}
	defer q.Close()
	fmt.Println("damaged:", rec.Damaged)

	ctx := context.Background()
	now := time.Now()
	bounds := offline.QueueBounds{MaxMessages: 500, MaxBytes: 2 << 20, MaxPerPeer: 1, RecordTTL: time.Hour}
	for _, id := range []string{"m-1", "m-2"} {
		r := inbox.Record{Peer: "alice", MessageID: id, TaskID: "task-" + id, Payload: []byte(`{"message":{}}`),
			Enqueued: now, Expires: now.Add(time.Hour)}
		stored, _, full, err := q.Enqueue(ctx, r, bounds)
		fmt.Println(id, stored.Seq, full, err)
	}
	next, _ := q.Next(ctx, 0, 10)
	replayed, _, _ := q.Take(ctx, []inbox.Taken{{Seq: next[0].Seq, ReplayKey: "msg:alice/m-1", Until: now.Add(time.Hour)}})
	fmt.Println("taken, replay:", replayed[0])
	// Output:
	// damaged: false
	// m-1 1  <nil>
	// m-2 0 peer <nil>
	// taken, replay: false
}
