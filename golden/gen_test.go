package golden

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/a2abind/a2abind/gen"
	"github.com/a2abind/a2abind/gen/load"
)

var update = flag.Bool("update", false, "rewrite golden files and generated/ instead of comparing")

// module is this module's path, under which generated packages are imported.
const module = "github.com/a2abind/a2abind"

// generate loads a schema directory and generates it in memory, for output
// imported as importPath.
func generate(t *testing.T, dir, pkg, importPath string) []gen.File {
	t.Helper()
	m, err := load.Load(os.DirFS(dir), dir, pkg, importPath)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	files, err := gen.Generate(m)
	if err != nil {
		t.Fatalf("generate %s: %v", dir, err)
	}
	return files
}

// compare checks files against dir, or rewrites dir under -update.
func compare(t *testing.T, dir string, files []gen.File) {
	t.Helper()
	if *update {
		if err := gen.Write(dir, files); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", dir)
		return
	}
	diff, err := gen.Diff(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diff {
		t.Errorf("%s: %s (run go test ./golden -update, or make generate)", dir, d)
	}
}

// TestGeneratedUpToDate regenerates generated/ from schema/ in memory and
// fails on any difference, so a plain go test notices stale output.
func TestGeneratedUpToDate(t *testing.T) {
	compare(t, "../generated", generate(t, "../schema", "generated", module+"/generated"))
}

// TestGoldenCases generates each schema set under cases/ and compares it with
// its committed output.
func TestGoldenCases(t *testing.T) {
	dirs, err := filepath.Glob("cases/*/schema")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir))
		t.Run(name, func(t *testing.T) {
			compare(t, filepath.Join("cases", name, "want"), generate(t, dir, name, module+"/golden/cases/"+name+"/want"))
		})
	}
}

func TestOutputIsDeterministicAndMarked(t *testing.T) {
	a := generate(t, "../schema", "generated", module+"/generated")
	b := generate(t, "../schema", "generated", module+"/generated")
	if len(a) != len(b) {
		t.Fatalf("two runs gave %d and %d files", len(a), len(b))
	}
	for i := range a {
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Content, b[i].Content) {
			t.Errorf("%s differs between two runs", a[i].Path)
		}
		first, _, _ := bytes.Cut(a[i].Content, []byte("\n"))
		mark := "// " + gen.Header
		if strings.HasSuffix(a[i].Path, ".md") {
			mark = "<!-- " + gen.Header + " -->"
		}
		if string(first) != mark {
			t.Errorf("%s starts with %q", a[i].Path, first)
		}
	}
}

const meta = "https://a2abind.dev/schema/meta/"

func typeFile(defs string) string {
	return `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/t.json","$defs":` + defs + `}`
}

func TestBrokenSchemasAreRefusedWithFileAndPointer(t *testing.T) {
	fsmMeta, err := os.ReadFile("../schema/meta/fsm.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files map[string]string
		want  string // substring of the error: file#pointer and what is wrong
	}{
		{"not JSON", map[string]string{"t.json": `{"$defs": `}, "s/t.json: not JSON"},
		{"unsupported keyword", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"x":{"type":"string","uniqueItems":true}}}}`)},
			`s/t.json#/$defs/A/properties/x/uniqueItems: keyword "uniqueItems" is not supported`},
		{"unresolved ref", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"x":{"$ref":"#/$defs/Missing"}}}}`)},
			"s/t.json: invalid schema"},
		{"ref to unknown file", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"x":{"$ref":"other.json#/$defs/B"}}}}`)},
			"s/t.json: invalid schema"},
		{"invalid schema", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"x":{"type":5}}}}`)},
			"s/t.json: invalid schema"},
		{"inline object", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"x":{"type":"object","properties":{}}}}}`)},
			`s/t.json#/$defs/A/properties/x/properties: keyword "properties" belongs on a named definition`},
		{"unbounded integer", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}}`)},
			"s/t.json#/$defs/A/properties/n: an integer needs a minimum and a maximum within int64"},
		{"closed object", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{},"additionalProperties":false}}`)},
			"s/t.json#/$defs/A/additionalProperties"},
		{"oneOf without group name", map[string]string{"t.json": typeFile(`{"A":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}}`)},
			"s/t.json#/$defs/A/oneOf: a oneOf on an object must name its group with x-oneof"},
		{"missing $schema", map[string]string{"t.json": `{"$id":"https://x.test/t.json","$defs":{}}`}, "s/t.json: missing $schema"},
		{"unknown data kind", map[string]string{"t.json": `{"$schema":"https://x.test/nope.json"}`}, "s/t.json#/$schema: unknown $schema"},
		{"fsm with an undeclared state", map[string]string{
			"meta/fsm.json": string(fsmMeta),
			"m.json": `{"$schema":"` + meta + `fsm.json","name":"M","description":"d","initial":"A","states":[{"name":"A","description":"a"}],` +
				`"events":[{"name":"E","description":"e"}],"transitions":[{"from":["A"],"event":"E","to":"B"}]}`},
			`s/m.json#/transitions/0/to: state "B" is not declared`},
		{"fsm leaving a terminal state", map[string]string{
			"meta/fsm.json": string(fsmMeta),
			"m.json": `{"$schema":"` + meta + `fsm.json","name":"M","description":"d","initial":"A","states":[{"name":"A","description":"a","terminal":true}],` +
				`"events":[{"name":"E","description":"e"}],"transitions":[{"from":["A"],"event":"E","to":"A"}]}`},
			`s/m.json#/transitions/0/from/0: state "A" is terminal`},
		{"data document breaking its meta-schema", map[string]string{
			"meta/fsm.json": string(fsmMeta),
			"m.json":        `{"$schema":"` + meta + `fsm.json","name":"lower"}`},
			"s/m.json: does not satisfy s/meta/fsm.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, content := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(content)}
			}
			_, err := load.Load(fsys, "s", "p", "")
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
			var le *load.Error
			if !errors.As(err, &le) || le.File == "" {
				t.Fatalf("error %T does not name the file", err)
			}
		})
	}
}

// TestCrossPackageReferencesRefused: a $ref to another package's type needs
// the import path of the output, and may not make packages import each
// other.
func TestCrossPackageReferencesRefused(t *testing.T) {
	cases := []struct {
		name       string
		files      map[string]string
		want       string // substring of the error: file#pointer and what is wrong
		importPath string // of the output; "" when not known
	}{
		{"reference across packages without an import path", map[string]string{
			"t.json":     typeFile(`{"A":{"type":"object","properties":{"x":{"type":"string"}}}}`),
			"sub/u.json": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/sub/u.json","$defs":{"B":{"type":"object","properties":{"a":{"$ref":"../t.json#/$defs/A"}}}}}`},
			`s/sub/u.json#/$defs/B/properties/a/$ref: "../t.json#/$defs/A" is in another package; a reference across packages needs the import path`, ""},
		{"packages importing each other", map[string]string{
			"a/a.json": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/a/a.json","$defs":{"A":{"type":"object","properties":{"b":{"$ref":"../b/b.json#/$defs/B"}}}}}`,
			"b/b.json": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/b/b.json","$defs":{"B":{"type":"object","properties":{"a":{"$ref":"../a/a.json#/$defs/A"}}}}}`},
			"makes the generated packages import each other (a -> b -> a)", "example.test/out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, content := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(content)}
			}
			_, err := load.Load(fsys, "s", "p", tc.importPath)
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
