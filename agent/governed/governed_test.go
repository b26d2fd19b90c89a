package governed

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

func testKey(t *testing.T, seed byte) ed25519.PrivateKey {
	t.Helper()
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed
	}
	return ed25519.NewKeyFromSeed(s)
}

// wire sends m through the generated encoder and decoder, as a queue does.
func wire(t *testing.T, m *a2a.Message) *a2a.Message {
	t.Helper()
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out a2a.Message
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestValidatorChecksAtDequeue(t *testing.T) {
	key, other := testKey(t, 1), testKey(t, 2)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := Validator{Keys: map[string]ed25519.PublicKey{"k1": key.Public().(ed25519.PublicKey)}, Purposes: []string{"order.place"}}
	newMsg := func() *a2a.Message {
		return &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser, Parts: []a2a.Part{
			{Content: a2a.PartText("two boxes")},
			{Content: a2a.PartData{Value: map[string]any{"qty": 2.0, "sku": "B-7", "nested": map[string]any{"b": true, "a": nil}}}},
		}}
	}
	cases := []struct {
		name    string
		prepare func(m *a2a.Message) *a2a.Message
		at      time.Time
		wantErr string
	}{
		{"a signed message passes and its id is the replay key", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k1", key))
			return m
		}, now, ""},
		{"an object expired at dequeue is refused, though valid when queued", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k1", key))
			return m
		}, now.Add(2 * time.Hour), "expired"},
		{"parts changed after signing are refused", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k1", key))
			m.Parts[0].Content = a2a.PartText("two hundred boxes")
			return m
		}, now, "parts are not the ones signed"},
		{"an object moved to another message is refused", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k1", key))
			m.MessageID = "m-2"
			return m
		}, now, "signed for message"},
		{"a purpose the agent does not serve is refused", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "payment.capture", now.Add(time.Hour), "k1", key))
			return m
		}, now, "purpose"},
		{"a key the agent does not trust is refused", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k2", other))
			return m
		}, now, "unknown key"},
		{"a signature by another key under a trusted id is refused", func(m *a2a.Message) *a2a.Message {
			must(t, Sign(m, "obj-1", "order.place", now.Add(time.Hour), "k1", other))
			return m
		}, now, "bad signature"},
		{"a message without an object is refused", func(m *a2a.Message) *a2a.Message { return m }, now, "no governed object"},
		{"an envelope that is not an object is refused", func(m *a2a.Message) *a2a.Message {
			m.Metadata = map[string]any{MetadataKey: "x"}
			return m
		}, now, "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := wire(t, c.prepare(newMsg()))
			key, until, err := v.Validate(context.Background(), agent.QueuedMessage{Message: m}, c.at)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if key != "obj:obj-1" || !until.Equal(now.Add(time.Hour)) {
					t.Errorf("replay key %q until %v", key, until)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
