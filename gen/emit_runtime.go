package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/a2abind/a2abind/gen/runtime"
)

var packageClause = regexp.MustCompile(`(?m)^package runtime$`)

// copyRuntime writes the support code of gen/runtime into the package, with
// its package clause replaced.
func (g *pkgGen) copyRuntime() error {
	entries, err := runtime.Source.ReadDir(".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "doc.go" || name == "embed.go" {
			continue
		}
		src, err := runtime.Source.ReadFile(name)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "// %s\n// source: gen/runtime/%s\n\n", Header, name)
		buf.Write(packageClause.ReplaceAll(src, []byte("package "+g.p.Name)))
		out, err := format.Source(buf.Bytes())
		if err != nil {
			return fmt.Errorf("formatting runtime %s: %w", name, err)
		}
		g.files = append(g.files, File{Path: path.Join(g.p.Dir, "runtime_"+name), Content: out})
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }
