package governed_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/a2abind/a2abind/agent/governed"
	"github.com/a2abind/a2abind/generated/a2a"
)

// A sender signs a message for a purpose; the agent that dequeues it checks
// the signature, the purpose and the expiry at that moment.
func Example() {
	pub, priv, _ := ed25519.GenerateKey(nil)
	sent := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

	m := &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("open the valve")}}}
	if err := governed.Sign(m, "order-42", "valve.open", sent.Add(time.Hour), "ops-key", priv); err != nil {
		panic(err)
	}

	v := governed.Validator{Keys: map[string]ed25519.PublicKey{"ops-key": pub}, Purposes: []string{"valve.open"}}
	obj, err := v.Check(m, sent.Add(10*time.Minute))
	fmt.Println(obj.ID, obj.Purpose, err)
	_, err = v.Check(m, sent.Add(2*time.Hour))
	fmt.Println(err)
	// Output:
	// order-42 valve.open <nil>
	// governed object order-42 expired at 2026-12-01T10:00:00Z
}
