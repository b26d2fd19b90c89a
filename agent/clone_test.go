package agent

import (
	"reflect"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// TestCloneTaskIsTaskClone checks that cloneTask makes what a2a.Task.Clone
// makes, and that the copy shares nothing that, changed, changes the task.
func TestCloneTaskIsTaskClone(t *testing.T) {
	full := func() a2a.Task {
		meta := func() map[string]any {
			return map[string]any{"k": "v", "nested": map[string]any{"list": []any{"a", map[string]any{"b": 1.0}}}}
		}
		parts := func() []a2a.Part {
			return []a2a.Part{
				{Content: a2a.PartText("text"), Metadata: meta(), Filename: "f.txt", MediaType: "text/plain"},
				{Content: a2a.PartRaw([]byte{1, 2, 3})},
				{Content: a2a.PartURL("https://example.com/f")},
				{Content: a2a.PartData{Value: meta()}},
				{Content: a2a.PartData{Value: []any{"x", map[string]any{"y": "z"}}}},
			}
		}
		msg := func(id string) a2a.Message {
			return a2a.Message{MessageID: id, ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser, Parts: parts(),
				Metadata: meta(), Extensions: []string{"https://example.com/ext"}, ReferenceTaskIDs: []string{"t0"}}
		}
		status := msg("m-status")
		return a2a.Task{ID: "t1", ContextID: "c1",
			Status:    &a2a.TaskStatus{State: a2a.TaskStateWorking, Message: &status, Timestamp: "2026-01-02T03:04:05Z"},
			Artifacts: []a2a.Artifact{{ArtifactID: "a1", Name: "n", Description: "d", Parts: parts(), Metadata: meta(), Extensions: []string{"e"}}},
			History:   []a2a.Message{msg("m1"), msg("m2")}, Metadata: meta()}
	}
	cases := []struct {
		name string
		task func() a2a.Task
	}{
		{"a new task: one message of one text part", func() a2a.Task {
			return a2a.Task{ID: "t1", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: "2026-01-02T03:04:05Z"},
				History: []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hello")}}}}}
		}},
		{"every member set, parts of every kind", full},
		{"the zero task", func() a2a.Task { return a2a.Task{} }},
		{"empty lists stay empty lists, not absent ones", func() a2a.Task {
			return a2a.Task{ID: "t1", Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{}, Extensions: []string{}}},
				History:  []a2a.Message{{MessageID: "m1", Parts: []a2a.Part{}, Extensions: []string{}, ReferenceTaskIDs: []string{}}},
				Metadata: map[string]any{}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := tc.task()
			want := *task.Clone()
			got := cloneTask(task)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("cloneTask differs from Task.Clone:\n got %#v\nwant %#v", got, want)
			}
			scribble(reflect.ValueOf(&got).Elem())
			if !reflect.DeepEqual(task, want) {
				t.Fatal("changing the copy changed the task")
			}
		})
	}
}

// TestCloneTaskKnowsEveryMember fails when a type cloneTask copies gains
// or loses a member: agent/clone.go must then be checked against the
// type's generated Clone.
func TestCloneTaskKnowsEveryMember(t *testing.T) {
	types := []struct {
		name string
		typ  reflect.Type
		n    int
	}{
		{"Task", reflect.TypeFor[a2a.Task](), 6},
		{"TaskStatus", reflect.TypeFor[a2a.TaskStatus](), 3},
		{"Message", reflect.TypeFor[a2a.Message](), 8},
		{"Artifact", reflect.TypeFor[a2a.Artifact](), 6},
		{"Part", reflect.TypeFor[a2a.Part](), 4},
	}
	for _, tc := range types {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.typ.NumField(); got != tc.n {
				t.Fatalf("a2a.%s has %d members, agent/clone.go knows %d: update it after the generated Clone", tc.name, got, tc.n)
			}
		})
	}
}

// scribble changes everything reachable from v that a copy could share
// with its original: the elements of slices and maps, and what pointers
// and interfaces hold.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			scribble(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			e := v.Index(i)
			switch e.Kind() {
			case reflect.String:
				e.SetString("scribbled")
			case reflect.Uint8:
				e.SetUint(0xff)
			case reflect.Interface:
				if e.IsNil() || e.Elem().Kind() == reflect.String || e.Elem().Kind() == reflect.Float64 {
					e.Set(reflect.ValueOf("scribbled"))
					continue
				}
				scribble(e)
			default:
				scribble(e)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			scribble(v.MapIndex(k))
		}
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.Interface {
			v.SetMapIndex(reflect.ValueOf("scribbled"), reflect.ValueOf("scribbled"))
		}
	}
}
