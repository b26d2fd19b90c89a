package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const okSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/pet.json","$defs":{"Pet":{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"]}}}`

func TestGenerateCheckAndBrokenSchema(t *testing.T) {
	dir := t.TempDir()
	schema, out := filepath.Join(dir, "schema"), filepath.Join(dir, "out")
	writeFile(t, filepath.Join(schema, "pet.json"), okSchema)

	if code := run([]string{"-schema", schema, "-out", out, "-check"}); code != 1 {
		t.Fatalf("-check on an empty output: exit %d, want 1", code)
	}
	if code := run([]string{"-schema", schema, "-out", out, "-package", "pets"}); code != 0 {
		t.Fatalf("generate: exit %d", code)
	}
	if code := run([]string{"-schema", schema, "-out", out, "-package", "pets", "-check"}); code != 0 {
		t.Fatalf("-check right after generating: exit %d", code)
	}
	before, err := os.ReadFile(filepath.Join(out, "pet.go"))
	if err != nil {
		t.Fatal(err)
	}

	// A stray file in the output is reported by -check and removed by a run.
	writeFile(t, filepath.Join(out, "stale.go"), "package pets\n")
	var stdout, stderr bytes.Buffer
	if code := runTo([]string{"-schema", schema, "-out", out, "-package", "pets", "-check"}, &stdout, &stderr); code != 1 {
		t.Fatalf("-check with a stale file: exit %d, want 1", code)
	}
	if want := "--- a/stale.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package pets\n"; stdout.String() != want {
		t.Fatalf("-check printed\n%s\nwant the unified diff\n%s", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "is stale (1 files); run make generate") {
		t.Fatalf("-check said %q", stderr.String())
	}

	// A changed file is shown as a diff of its lines.
	if err := os.Remove(filepath.Join(out, "stale.go")); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(before), "JSON: \"name\"", "JSON: \"nom\"", 1)
	writeFile(t, filepath.Join(out, "pet.go"), changed)
	stdout.Reset()
	if code := runTo([]string{"-schema", schema, "-out", out, "-package", "pets", "-check"}, &stdout, io.Discard); code != 1 {
		t.Fatalf("-check with a changed file: exit %d, want 1", code)
	}
	if d := stdout.String(); !strings.HasPrefix(d, "--- a/pet.go\n+++ b/pet.go\n@@ ") || !strings.Contains(d, "\n-\t// JSON: \"nom\"") || !strings.Contains(d, "\n+\t// JSON: \"name\"") {
		t.Fatalf("-check printed\n%s", d)
	}
	writeFile(t, filepath.Join(out, "pet.go"), string(before))
	writeFile(t, filepath.Join(out, "stale.go"), "package pets\n")

	// A broken schema fails and leaves the output as it was.
	writeFile(t, filepath.Join(schema, "pet.json"), `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/pet.json","$defs":{"Pet":{"type":"object","properties":{"name":{"$ref":"#/$defs/Nope"}}}}}`)
	if code := run([]string{"-schema", schema, "-out", out, "-package", "pets"}); code != 1 {
		t.Fatalf("broken schema: exit %d, want 1", code)
	}
	after, err := os.ReadFile(filepath.Join(out, "pet.go"))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("a failed run changed the previous output")
	}
	if _, err := os.Stat(filepath.Join(out, "stale.go")); err != nil {
		t.Fatal("a failed run removed files")
	}

	writeFile(t, filepath.Join(schema, "pet.json"), okSchema)
	if code := run([]string{"-schema", schema, "-out", out, "-package", "pets"}); code != 0 {
		t.Fatalf("regenerate: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(out, "stale.go")); !os.IsNotExist(err) {
		t.Fatal("a file the generator no longer produces was kept")
	}
}

func TestFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, 0},
		{"unknown flag", []string{"-nope"}, 2},
		{"stray argument", []string{"x"}, 2},
		{"missing schema directory", []string{"-schema", filepath.Join(t.TempDir(), "none"), "-out", t.TempDir()}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code := run(tc.args); code != tc.want {
				t.Fatalf("exit %d, want %d", code, tc.want)
			}
		})
	}
}

func TestImportPathFromGoMod(t *testing.T) {
	cases := []struct {
		name, gomod, out, want string
	}{
		{"plain module line", "module example.test/m\n\ngo 1.26\n", "gen/out", "example.test/m/gen/out"},
		{"quoted with a comment", "// a module\nmodule \"example.test/q\" // the path\n", "out", "example.test/q/out"},
		{"output at the module root", "module example.test/r\n", ".", "example.test/r"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "go.mod"), tc.gomod)
			if got := moduleImportPath(filepath.Join(dir, tc.out)); got != tc.want {
				t.Fatalf("import path %q, want %q", got, tc.want)
			}
		})
	}
}
