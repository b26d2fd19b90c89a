// Command a2agen generates Go types, validators, constants and state tables
// from a directory of JSON Schemas and data documents.
//
// Usage:
//
//	a2agen -schema DIR -out DIR [-package NAME] [-import PATH] [-check]
//
// Every *.json file under -schema is read. Files at its top level form the
// package NAME (default: the base name of -out); each sub-directory forms a
// package named after it, written to the same sub-directory of -out. Type
// schemas (JSON Schema 2020-12) become Go types with Validate, MarshalJSON,
// UnmarshalJSON and Validate<Type>JSON; data documents (error tokens, user
// properties, topics, constants, state machine tables), recognised by the
// meta-schema their $schema names under -schema/meta/, become constants,
// tables and helpers. schema/README.md in this repository lists the JSON
// Schema subset understood.
//
// Generated packages import github.com/a2abind/a2abind/gen/runtime, and a
// $ref from one package's schema to another's makes the first import the
// second: -import is the import path of -out (by default it is worked out
// from the go.mod file above -out).
//
// The schemas are compiled with a JSON Schema engine first: a broken schema,
// an unresolved $ref or an unsupported keyword ends with a non-zero exit and
// a message naming the file and JSON pointer, and -out is left untouched.
// Output is gofmt-clean and byte-for-byte deterministic; only changed files
// are rewritten and files no longer produced are removed.
//
// With -check nothing is written: a2agen prints a unified diff of what would
// change (from the files in -out to the generated ones) and exits with status
// 1 if anything would. In this repository:
//
//	go generate ./...          # or: make generate
//	make check-generated       # CI: fails when generated/ is stale
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/a2abind/a2abind/gen"
	"github.com/a2abind/a2abind/gen/load"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int { return runTo(args, os.Stdout, os.Stderr) }

// runTo is a2agen writing its output (the -check diff) to stdout and its
// messages to stderr.
func runTo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("a2agen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	schemaDir := fs.String("schema", "schema", "directory of JSON Schemas and data documents")
	outDir := fs.String("out", "generated", "output directory (owned by a2agen)")
	pkg := fs.String("package", "", "package name for files at the top of -schema (default: base name of -out)")
	importPath := fs.String("import", "", "Go import path of -out (default: from the go.mod above -out)")
	check := fs.Bool("check", false, "write nothing; print a unified diff of what would change and exit 1 if anything would")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: a2agen -schema DIR -out DIR [-package NAME] [-import PATH] [-check]\n\nexample:\n  a2agen -schema schema -out generated\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "a2agen: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	name := *pkg
	if name == "" {
		name = filepath.Base(filepath.Clean(*outDir))
	}
	if *importPath == "" {
		*importPath = moduleImportPath(*outDir)
	}
	m, err := load.Load(os.DirFS(*schemaDir), filepath.ToSlash(*schemaDir), name, *importPath)
	if err != nil {
		fmt.Fprintf(stderr, "a2agen: %v\n", err)
		return 1
	}
	files, err := gen.Generate(m)
	if err != nil {
		fmt.Fprintf(stderr, "a2agen: %v\n", err)
		return 1
	}
	if *check {
		diff, err := gen.Diff(*outDir, files)
		if err != nil {
			fmt.Fprintf(stderr, "a2agen: %v\n", err)
			return 1
		}
		if len(diff) > 0 {
			patch, err := gen.UnifiedDiff(*outDir, files)
			if err != nil {
				fmt.Fprintf(stderr, "a2agen: %v\n", err)
				return 1
			}
			fmt.Fprint(stdout, patch)
			fmt.Fprintf(stderr, "a2agen: %s is stale (%d files); run make generate\n", *outDir, len(diff))
			return 1
		}
		return 0
	}
	if err := gen.Write(*outDir, files); err != nil {
		fmt.Fprintf(stderr, "a2agen: %v\n", err)
		return 1
	}
	return 0
}

// moduleImportPath works out the import path of dir from the go.mod file of
// the module holding it, or returns "" when there is none.
func moduleImportPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			mod := modulePath(data)
			if mod == "" {
				return ""
			}
			rel, err := filepath.Rel(d, abs)
			if err != nil {
				return ""
			}
			return path.Join(mod, filepath.ToSlash(rel))
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// modulePath reads the module directive of a go.mod file.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			rest = strings.TrimSpace(rest)
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = strings.TrimSpace(rest[:i])
			}
			if unq, err := strconv.Unquote(rest); err == nil {
				return unq
			}
			return rest
		}
	}
	return ""
}
