package taskstore

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// withPush is a task record created with a push-notification config and a
// delivery report, as the runtime creates one from a SendMessage carrying a
// config.
func withPush(id string) Record {
	r := task(id, "c1", a2a.TaskStateSubmitted)
	r.PushConfigs = []a2a.TaskPushNotificationConfig{{ID: "cfg-1", TaskID: id, URL: "https://hooks.example/a2a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}}
	r.PushDeliveries = []PushDelivery{{ConfigID: "cfg-1", State: "failing", Status: 503, Reason: "HTTP 503", Dropped: 2,
		At: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}}
	return r
}

func samePush(t *testing.T, what string, got, want Record) {
	t.Helper()
	if !reflect.DeepEqual(got.PushConfigs, want.PushConfigs) {
		t.Fatalf("%s: configs %+v, want %+v", what, got.PushConfigs, want.PushConfigs)
	}
	if len(got.PushDeliveries) != len(want.PushDeliveries) {
		t.Fatalf("%s: reports %+v, want %+v", what, got.PushDeliveries, want.PushDeliveries)
	}
	for i := range got.PushDeliveries {
		g, w := got.PushDeliveries[i], want.PushDeliveries[i]
		if !g.At.Equal(w.At) {
			t.Fatalf("%s: report at %v, want %v", what, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		if g != w {
			t.Fatalf("%s: report %+v, want %+v", what, g, w)
		}
	}
}

// The push-notification configs of a task live in its record: created with
// it, kept by the events of a turn (ReplaceTask), changed by Update, and
// returned as copies.
func TestPushConfigsLiveInTheTaskRecord(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			s := open(t, newClock().now)
			want := withPush("t1")
			created, err := s.Create(ctx, want)
			if err != nil {
				t.Fatal(err)
			}
			samePush(t, "create", created, want)
			got, err := s.Get(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			samePush(t, "get", got, want)

			got.PushConfigs[0].URL = "https://changed.example/"
			got.PushConfigs[0].Authentication.Credentials = "changed"
			if again, _ := s.Get(ctx, "t1"); again.PushConfigs[0].URL != want.PushConfigs[0].URL ||
				again.PushConfigs[0].Authentication.Credentials != "secret" {
				t.Fatal("changing a returned record changed its stored configs")
			}

			next := got.Task
			next.Status = &a2a.TaskStatus{State: a2a.TaskStateWorking}
			if err := ReplaceTask(ctx, s, next); err != nil {
				t.Fatal(err)
			}
			got, _ = s.Get(ctx, "t1")
			samePush(t, "after a turn's event", got, want)

			if _, err := s.Update(ctx, "t1", func(r *Record) error {
				r.PushConfigs = nil
				r.PushDeliveries = nil
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, _ = s.Get(ctx, "t1")
			samePush(t, "after deleting them", got, Record{})
			if got.Task.Status.State != a2a.TaskStateWorking {
				t.Fatalf("the task lost its state: %+v", got.Task.Status)
			}
		})
	}
}

// A Bolt store's records decode as they were written, configs and reports
// included, after the file is closed and opened again.
func TestBoltKeepsPushConfigsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := OpenBolt(path, newClock().now, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := withPush("t1")
	if _, err := s.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenBolt(path, newClock().now, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	samePush(t, "reopened", got, want)
}

// Configs and reports count against MaxBytes like the task: a task whose
// configs pass the bound is refused, and so is an Update adding them.
func TestPushConfigsCountAgainstTheByteBound(t *testing.T) {
	ctx := context.Background()
	bigHook := func(id string) []a2a.TaskPushNotificationConfig {
		return []a2a.TaskPushNotificationConfig{{ID: "c", TaskID: id, URL: "https://hooks.example/" + strings.Repeat("x", 4000)}}
	}
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t, newManual().now, MaxBytes(3000))
			r := task("a", "c1", a2a.TaskStateSubmitted)
			r.PushConfigs = bigHook("a")
			if _, err := s.Create(ctx, r); !errors.Is(err, ErrFull) {
				t.Fatalf("a task with 4 kB of configs in a 3 kB store: %v", err)
			}
			if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the refused task was kept: %v", err)
			}
			if _, err := s.Create(ctx, task("b", "c1", a2a.TaskStateSubmitted)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Update(ctx, "b", func(r *Record) error {
				r.PushConfigs = bigHook("b")
				return nil
			})
			if !errors.Is(err, ErrFull) {
				t.Fatalf("an update adding 4 kB of configs: %v", err)
			}
			if got, _ := s.Get(ctx, "b"); len(got.PushConfigs) != 0 {
				t.Fatalf("a refused update was kept: %+v", got.PushConfigs)
			}
		})
	}
}
