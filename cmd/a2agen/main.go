// Command a2agen generates Go types, validators, constants and state tables
// from a directory of JSON Schemas and data documents.
//
// Usage:
//
//	a2agen -schema DIR -out DIR [-package NAME] [-check]
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
// The schemas are compiled with a JSON Schema engine first: a broken schema,
// an unresolved $ref or an unsupported keyword ends with a non-zero exit and
// a message naming the file and JSON pointer, and -out is left untouched.
// Output is gofmt-clean and byte-for-byte deterministic; only changed files
// are rewritten and files no longer produced are removed.
//
// With -check nothing is written: a2agen lists what would change and exits
// with status 1 if anything would. In this repository:
//
//	go generate ./...          # or: make generate
//	make check-generated       # CI: fails when generated/ is stale
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/a2abind/a2abind/gen"
	"github.com/a2abind/a2abind/gen/load"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("a2agen", flag.ContinueOnError)
	schemaDir := fs.String("schema", "schema", "directory of JSON Schemas and data documents")
	outDir := fs.String("out", "generated", "output directory (owned by a2agen)")
	pkg := fs.String("package", "", "package name for files at the top of -schema (default: base name of -out)")
	check := fs.Bool("check", false, "write nothing; list what would change and exit 1 if anything would")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: a2agen -schema DIR -out DIR [-package NAME] [-check]\n\nexample:\n  a2agen -schema schema -out generated\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "a2agen: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	name := *pkg
	if name == "" {
		name = filepath.Base(filepath.Clean(*outDir))
	}
	m, err := load.Load(os.DirFS(*schemaDir), filepath.ToSlash(*schemaDir), name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "a2agen: %v\n", err)
		return 1
	}
	files, err := gen.Generate(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "a2agen: %v\n", err)
		return 1
	}
	if *check {
		diff, err := gen.Diff(*outDir, files)
		if err != nil {
			fmt.Fprintf(os.Stderr, "a2agen: %v\n", err)
			return 1
		}
		for _, d := range diff {
			fmt.Println(d)
		}
		if len(diff) > 0 {
			fmt.Fprintf(os.Stderr, "a2agen: %s is stale (%d files); run make generate\n", *outDir, len(diff))
			return 1
		}
		return 0
	}
	if err := gen.Write(*outDir, files); err != nil {
		fmt.Fprintf(os.Stderr, "a2agen: %v\n", err)
		return 1
	}
	return 0
}
