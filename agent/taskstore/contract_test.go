package taskstore_test

import (
	"path/filepath"
	"testing"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/storetest"
	"github.com/a2abind/a2abind/internal/sealtest"
)

// The contract of every store (agent/taskstore/storetest) on the stores of
// this package, a Bolt store sealing the secrets among them; at the end of
// every case, the store's counters (tasks, bytes, the finished ones') are
// checked against what it holds.
func TestContract(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	bolt := func(opts ...taskstore.Option) storetest.Opener {
		return func(t *testing.T, c storetest.Config) taskstore.Store {
			return openBoltAt(t, filepath.Join(t.TempDir(), "tasks.db"), c.Now, append(c.Options(), opts...)...)
		}
	}
	for _, store := range []struct {
		name string
		open storetest.Opener
	}{
		{"memory", func(t *testing.T, c storetest.Config) taskstore.Store {
			return taskstore.NewMemory(c.Now, c.Options()...)
		}},
		{"bolt", bolt()},
		{"bolt sealing", bolt(taskstore.SealSecrets(keys))},
	} {
		t.Run(store.name, func(t *testing.T) { storetest.Run(t, store.open, storetest.WithCheck(taskstore.CheckCounters)) })
	}
}
