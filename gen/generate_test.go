package gen

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/gen/load"
	"github.com/a2abind/a2abind/gen/model"
)

func loadDir(t *testing.T, dir, pkg, importPath string) *model.Model {
	t.Helper()
	m, err := load.Load(os.DirFS(dir), dir, pkg, importPath)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGenerateIsReentrant runs Generate on two schema sets at once, several
// times, under the race detector in CI: every output must equal the one of a
// run alone (the generator keeps no state between or across runs).
func TestGenerateIsReentrant(t *testing.T) {
	models := []*model.Model{
		loadDir(t, "../schema", "generated", "github.com/a2abind/a2abind/generated"),
		loadDir(t, "../golden/cases/sample/schema", "sample", "github.com/a2abind/a2abind/golden/cases/sample/want"),
	}
	var alone [][]File
	for _, m := range models {
		files, err := Generate(m)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, files)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			files, err := Generate(models[k%2])
			if err != nil {
				errs <- err
				return
			}
			want := alone[k%2]
			if len(files) != len(want) {
				errs <- fmt.Errorf("run %d: %d files, alone %d", k, len(files), len(want))
				return
			}
			for j := range files {
				if files[j].Path != want[j].Path || !bytes.Equal(files[j].Content, want[j].Content) {
					errs <- fmt.Errorf("run %d: %s differs from a run alone", k, files[j].Path)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGenerateRefusesWhatItCannotEmit(t *testing.T) {
	var fields []*model.Field
	for i := 0; i < 65; i++ {
		fields = append(fields, &model.Field{JSON: fmt.Sprintf("f%d", i), GoName: fmt.Sprintf("F%d", i), Ref: &model.Ref{Kind: model.KindString}})
	}
	big := &model.Type{Name: "Big", Source: "big.json", Kind: model.KindObject, Fields: fields}
	m := &model.Model{Packages: []*model.Package{{Name: "p", Sources: []string{"big.json"}, Types: []*model.Type{big}}}}
	_, err := Generate(m)
	if err == nil || !strings.Contains(err.Error(), "type Big has 65 properties; a2agen supports at most 64") {
		t.Fatalf("error %v, want one naming the type and the limit", err)
	}
}

// A model the loader would never build (an unknown kind, a named reference
// without its type, an array without its element) is an error naming the
// member, not a panic in an emitter.
func TestGenerateRefusesAnInconsistentModel(t *testing.T) {
	cases := []struct {
		name string
		ref  *model.Ref
		want string
	}{
		{"unknown kind", &model.Ref{Kind: model.Kind(99)}, "type kind 99 has no Go type"},
		{"object without its type", &model.Ref{Kind: model.KindObject}, "a named type reference without its type"},
		{"array without its element", &model.Ref{Kind: model.KindArray}, "an array or map without its element type"},
		{"map of an unknown kind", &model.Ref{Kind: model.KindMap, Elem: &model.Ref{Kind: model.Kind(42)}}, "type kind 42 has no Go type"},
		{"no type at all", nil, "no type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := &model.Type{Name: "T", Source: "t.json", Kind: model.KindObject,
				Fields: []*model.Field{{JSON: "f", GoName: "F", Ref: c.ref}}}
			m := &model.Model{Packages: []*model.Package{{Name: "p", Sources: []string{"t.json"}, Types: []*model.Type{typ}}}}
			_, err := Generate(m)
			if err == nil || !strings.Contains(err.Error(), "t.json: T.f: "+c.want) {
				t.Fatalf("error %v, want one naming t.json: T.f and %q", err, c.want)
			}
		})
	}
}
