package pushbind_test

import (
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/pushbind"
)

// A client that owns a push receiver keeps one Binding per task. Here the
// receiver is rotated (410) when the task fails; the binding asks for an
// audit poll at once, and the poll finds the terminal state in time.
func ExampleBinding_Receiver() {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	b := pushbind.New("6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10", pushbind.DefaultConfig(), t0)

	show := func(d pushbind.Decision, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%v -> %v %v\n", d.From, d.To, d.Outputs.List())
	}
	show(b.CapabilityRead(pushbind.Capability{PushNotifications: true, Receiver: true}, t0)) // permission only
	show(b.Registered(false, t0))                                                            // config sent with the message
	show(b.Receiver(200, a2a.TaskStateWorking, t0.Add(5*time.Second)))                       // first push acknowledged
	show(b.Receiver(410, a2a.TaskStateFailed, t0.Add(30*time.Second)))                       // receiver rotated
	show(b.Polled(a2a.TaskStateFailed, t0.Add(30*time.Second), t0.Add(31*time.Second)))      // the audit poll
	fmt.Println("orphan:", b.Err())
	// Output:
	// Unbound -> Unbound [RegisterWithSend PollPrimary]
	// Unbound -> Registered [KeepWebhookPrimary]
	// Registered -> Acknowledged [KeepWebhookPrimary]
	// Acknowledged -> Dead [PollPrimary PollNow ReRegister RaiseBindingDead]
	// Dead -> Settled [Release]
	// orphan: <nil>
}
