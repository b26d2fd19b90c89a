package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// Runs of a2a send that save routes at the same time lose none of them and
// leave no temporary file behind.
func TestConcurrentRouteSavesLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2a", "routes.json")
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			// A value of its own, as a separate process would have.
			f := fileRoutes{path: path}
			r := handover.Route{TaskID: fmt.Sprintf("task-%02d", i), State: fsm.HandoverStateCardAgent, CardAgent: "b"}
			if err := f.SaveRoute(r); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := fileRoutes{path: path}.LoadRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d of %d routes kept", len(got), n)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := (fileRoutes{path: path}).DeleteRoute("task-03"); err != nil {
		t.Fatal(err)
	}
	if got, _ := (fileRoutes{path: path}).LoadRoutes(); len(got) != n-1 {
		t.Fatalf("%d routes after a delete", len(got))
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

// writeRoutes writes a routes file of n fresh routes, saved a second apart
// (task-fresh-0 the most recent), and n stale ones saved before the expiry.
func writeRoutes(t testing.TB, path string, fresh, stale int) {
	t.Helper()
	now := time.Now()
	m := make(map[string]savedRoute, fresh+stale)
	add := func(id string, saved time.Time) {
		m[id] = savedRoute{Route: handover.Route{TaskID: id, State: fsm.HandoverStateCardAgent, CardAgent: "b"}, Saved: saved}
	}
	for i := range fresh {
		add(fmt.Sprintf("task-fresh-%d", i), now.Add(-time.Duration(i)*time.Second))
	}
	for i := range stale {
		add(fmt.Sprintf("task-stale-%d", i), now.Add(-savedRouteExpiry-time.Hour-time.Duration(i)*time.Second))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTheRoutesFileIsBoundedAcrossRuns(t *testing.T) {
	cases := []struct {
		name         string
		fresh, stale int
		kept         int
		oldestKept   string // the least recently saved route left
	}{
		{"stale routes are dropped", 10, 5, 11, "task-fresh-9"},
		{"a full file keeps the most recently saved", maxSavedRoutes, 0, maxSavedRoutes, "task-fresh-9998"},
		{"a hundred thousand routes are trimmed", 50_000, 50_000, maxSavedRoutes, "task-fresh-9998"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a2a", "routes.json")
			writeRoutes(t, path, tc.fresh, tc.stale)
			f := fileRoutes{path: path}
			// One run of a2a send: it reads the routes, then saves one.
			if _, err := f.LoadRoutes(); err != nil {
				t.Fatal(err)
			}
			if err := f.SaveRoute(handover.Route{TaskID: "task-new", State: fsm.HandoverStateCardAgent, CardAgent: "b"}); err != nil {
				t.Fatal(err)
			}
			var m map[string]savedRoute
			b, _ := os.ReadFile(path)
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if len(m) != tc.kept {
				t.Fatalf("%d routes in the file, want %d", len(m), tc.kept)
			}
			if _, ok := m["task-new"]; !ok {
				t.Fatal("the saved route is missing")
			}
			if _, ok := m[tc.oldestKept]; !ok {
				t.Fatalf("%s dropped", tc.oldestKept)
			}
			for id := range m {
				if strings.HasPrefix(id, "task-stale-") {
					t.Fatalf("%s kept past the expiry", id)
				}
			}
			if got, _ := f.LoadRoutes(); len(got) != tc.kept {
				t.Fatalf("%d routes loaded", len(got))
			}
		})
	}
}

// A file written before the bounds has no save times: its routes count as
// saved when the file was last written.
func TestAnOlderRoutesFileAgesByItsModificationTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		age  time.Duration
		kept int
	}{{"written yesterday", 24 * time.Hour, 1}, {"written before the expiry", savedRouteExpiry + time.Hour, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "routes.json")
			old := `{"task-1":{"TaskID":"task-1","State":` + fmt.Sprint(int(fsm.HandoverStateCardAgent)) + `,"CardAgent":"b","Pool":"","Responder":"","FellBack":false}}`
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			mtime := time.Now().Add(-tc.age)
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			got, err := fileRoutes{path: path}.LoadRoutes()
			if err != nil || len(got) != tc.kept {
				t.Fatalf("%d routes, %v", len(got), err)
			}
			if tc.kept == 1 && got[0].CardAgent != "b" {
				t.Fatalf("%+v", got[0])
			}
		})
	}
}

// BenchmarkSendWithAFullRoutesFile is what a run of a2a send costs the
// routes file (a load, then a save) when the file holds as many routes as
// it may.
func BenchmarkSendWithAFullRoutesFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "routes.json")
	writeRoutes(b, path, maxSavedRoutes, 0)
	f := fileRoutes{path: path}
	for i := 0; b.Loop(); i++ {
		if _, err := f.LoadRoutes(); err != nil {
			b.Fatal(err)
		}
		if err := f.SaveRoute(handover.Route{TaskID: fmt.Sprint("task-bench-", i), State: fsm.HandoverStateCardAgent, CardAgent: "b"}); err != nil {
			b.Fatal(err)
		}
	}
}
