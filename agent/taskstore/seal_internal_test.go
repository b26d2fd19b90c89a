package taskstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Sealing what a file holds in clear changes the sizes of its records:
// Reseal and a delivery report that seals keep the byte counters, the
// finished tasks' among them, in line with the file.
func TestSealingKeepsTheCounters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	rec := func(id string, st a2a.TaskState) Record {
		return Record{Task: a2a.Task{ID: id, ContextID: "c", Status: &a2a.TaskStatus{State: st}},
			PushConfigs: []a2a.TaskPushNotificationConfig{{ID: "cfg", TaskID: id, URL: "https://hooks.example/", Token: "tok",
				Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "creds"}}}}
	}
	s, err := OpenBolt(path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{rec("done", a2a.TaskStateCompleted), rec("waiting", a2a.TaskStateInputRequired), rec("done2", a2a.TaskStateFailed)} {
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	k, err := sealed.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := sealed.New(k)
	if err != nil {
		t.Fatal(err)
	}
	s, err = OpenBolt(path, nil, 0, SealSecrets(keys))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.SetPushDelivery(ctx, "done2", PushDelivery{ConfigID: "cfg", State: "dead", At: time.Now()}); !ok || err != nil {
		t.Fatalf("SetPushDelivery: %v %v", ok, err)
	}
	checkCounters(t, s)
	if n, err := s.Reseal(ctx); n != 2 || err != nil {
		t.Fatalf("Reseal: %d %v", n, err)
	}
	checkCounters(t, s)
	for _, id := range []string{"done", "waiting", "done2"} {
		if r, err := s.Get(ctx, id); err != nil || r.PushConfigs[0].Token != "tok" || r.PushConfigs[0].Authentication.Credentials != "creds" {
			t.Fatalf("%s: %v %+v", id, err, r.PushConfigs)
		}
	}
}
