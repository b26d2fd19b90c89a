package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

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
