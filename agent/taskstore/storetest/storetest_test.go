package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c storetest.Config) taskstore.Store {
		return taskstore.NewMemory(c.Now, c.Options()...)
	})
}

func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c storetest.Config) taskstore.Store {
		s, err := taskstore.OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), c.Now, 0, c.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// The suite has a case for each thing it shows, each named once.
func TestCasesAreNamedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range storetest.Cases() {
		if c.Name == "" || seen[c.Name] {
			t.Fatalf("case name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
	}
	if len(seen) < 20 {
		t.Fatalf("%d cases", len(seen))
	}
}
