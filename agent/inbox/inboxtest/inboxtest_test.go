package inboxtest_test

import (
	"path/filepath"
	"testing"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/inboxtest"
	"github.com/a2abind/a2abind/agent/sealed"
)

// The contract on the bbolt store, a file of its own a case. (Package
// inbox's own tests cover the same ground and what is the file's alone:
// damaged files, formats, group commit.)
func TestBolt(t *testing.T) {
	inboxtest.Run(t, func(t *testing.T, c inboxtest.Config) func() inbox.Store {
		path := filepath.Join(t.TempDir(), "queue.db")
		return func() inbox.Store {
			s, _, err := inbox.OpenBolt(path, inbox.BoltOptions{Now: c.Now, MaxReplay: c.MaxReplay})
			if err != nil {
				t.Fatalf("OpenBolt: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// The contract on the bbolt store sealing the payloads with a key ring.
func TestBoltSealed(t *testing.T) {
	k, err := sealed.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := sealed.New(k)
	if err != nil {
		t.Fatal(err)
	}
	inboxtest.Run(t, func(t *testing.T, c inboxtest.Config) func() inbox.Store {
		path := filepath.Join(t.TempDir(), "queue.db")
		return func() inbox.Store {
			s, _, err := inbox.OpenBolt(path, inbox.BoltOptions{Now: c.Now, MaxReplay: c.MaxReplay, Keys: keys})
			if err != nil {
				t.Fatalf("OpenBolt: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// The suite has a case for each thing it shows, each named once.
func TestCasesAreNamedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range inboxtest.Cases() {
		if c.Name == "" || seen[c.Name] {
			t.Fatalf("case name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
	}
	if len(seen) < 25 {
		t.Fatalf("%d cases", len(seen))
	}
}
