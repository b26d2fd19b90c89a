package pginbox_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/generated/offline"
)

// An instance of an agent on a queue it shares with others: it enqueues
// what it is sent while asleep, and wakes on the records any instance
// enqueues (Notify) to take them; each record is taken by one instance.
func Example() {
	ctx := context.Background()
	q, err := pginbox.Open(ctx, os.Getenv("A2A_QUEUE_DSN"), pginbox.Options{Migrate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	now := time.Now()
	r := inbox.Record{Peer: "alice", MessageID: "m-1", TaskID: "task-1", Payload: []byte(`{"message":{}}`), Expires: now.Add(time.Hour)}
	if _, _, full, err := q.Enqueue(ctx, r, offline.DefaultQueueBounds()); err != nil || full != "" {
		log.Fatal(full, err)
	}

	for range q.Notify() {
		// Woken: take the queue until it is empty, then wait again.
		for {
			recs, err := q.Next(ctx, 0, 64)
			if err != nil {
				log.Fatal(err)
			}
			if len(recs) == 0 {
				break
			}
			var takes []inbox.Taken
			for _, r := range recs {
				takes = append(takes, inbox.Taken{Seq: r.Seq, ReplayKey: r.Peer + "/" + r.MessageID, Until: r.Expires})
			}
			replayed, missing, err := q.Take(ctx, takes)
			if err != nil {
				log.Fatal(err)
			}
			for i, r := range recs {
				switch {
				case missing[i]: // another instance took it
				case replayed[i]:
					log.Printf("refuse %s: a replay", r.TaskID)
				default:
					log.Printf("deliver %s", r.TaskID)
				}
			}
		}
	}
}
