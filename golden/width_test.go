package golden

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxColumns is the widest line generated code may have outside string
// literals, a tab counting four columns.
const maxColumns = 100

// TestGeneratedLinesFit checks every generated Go file: no line is wider
// than maxColumns once the contents of its string literals are left out
// (a long message or pattern is one literal and is not wrapped).
func TestGeneratedLinesFit(t *testing.T) {
	for _, root := range []string{"../generated", "cases"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			if root == "cases" && !strings.Contains(filepath.ToSlash(path), "/want/") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, w := range wideLines(src) {
				t.Errorf("%s:%d is %d columns wide outside string literals (at most %d)", path, w.line, w.width, maxColumns)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

type wide struct{ line, width int }

// wideLines lists the lines of src wider than maxColumns, string literal
// contents left out.
func wideLines(src []byte) []wide {
	lines := strings.Split(string(src), "\n")
	literal := make([]int, len(lines)) // literal columns per line
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.STRING {
			continue
		}
		p := fset.Position(pos)
		for i, part := range strings.Split(lit, "\n") {
			literal[p.Line-1+i] += len(part)
		}
	}
	var out []wide
	for i, l := range lines {
		width := len(strings.ReplaceAll(l, "\t", "    ")) - literal[i]
		if width > maxColumns {
			out = append(out, wide{i + 1, width})
		}
	}
	return out
}

func TestWideLinesCountsOutsideStringLiterals(t *testing.T) {
	long := strings.Repeat("x", 120)
	cases := []struct {
		name string
		src  string
		want int // wide lines
	}{
		{"a long string literal", "package p\n\nvar s = \"" + long + "\"\n", 0},
		{"a long raw string", "package p\n\nvar s = `" + long + "\n" + long + "`\n", 0},
		{"a long comment", "package p\n\n// " + long + "\n", 1},
		{"a long identifier line", "package p\n\nvar " + long + " = 1\n", 1},
		{"tabs count four columns", "package p\n\nfunc f() {\n" + strings.Repeat("\t", 20) + "_ = 1234567890123456789\n}\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(wideLines([]byte(tc.src))); got != tc.want {
				t.Fatalf("%d wide lines, want %d", got, tc.want)
			}
		})
	}
}
