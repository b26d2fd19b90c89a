package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestDiffTextIsUnified(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"one line changed in the middle", numbered(1, 10), strings.Replace(numbered(1, 10), "line 5\n", "line five\n", 1),
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"},
		{"line added at the end", "a\nb\n", "a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		{"new file", "", "a\nb\n", "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"no newline at the end", "a\n", "a", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{"two distant changes make two hunks", numbered(1, 20), strings.Replace(strings.Replace(numbered(1, 20), "line 2\n", "two\n", 1), "line 19\n", "", 1),
			"--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n@@ -16,5 +16,4 @@\n line 16\n line 17\n line 18\n-line 19\n line 20\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := diffText("a/f", "b/f", tc.a, tc.b)
			if got != tc.want {
				t.Fatalf("diff:\n%s\nwant:\n%s", got, tc.want)
			}
			if got != "" {
				if back := applyDiff(t, tc.a, got); back != tc.b {
					t.Fatalf("applying the diff gives %q, want %q", back, tc.b)
				}
			}
		})
	}
}

// TestDiffTextAppliesBack diffs larger edits and applies the hunks to the
// old text, which must give the new one.
func TestDiffTextAppliesBack(t *testing.T) {
	old := numbered(1, 300)
	edits := []struct {
		name string
		new  string
	}{
		{"scattered replacements", strings.NewReplacer("line 7\n", "seven\n", "line 150\n", "", "line 299\n", "a\nb\nc\n").Replace(old)},
		{"everything replaced", numbered(1000, 1100)},
		{"file emptied", ""},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			d := diffText("a/f", "b/f", old, e.new)
			if back := applyDiff(t, old, d); back != e.new {
				t.Fatalf("applying the diff does not give the new text:\n%s", d)
			}
		})
	}
}

// applyDiff applies a unified diff made by diffText to a.
func applyDiff(t *testing.T, a, diff string) string {
	t.Helper()
	old := splitLines(a)
	var out []string
	next := 0 // index in old of the next line not yet copied
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@ -") {
			f := strings.Fields(l)
			start, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			n, err := strconv.Atoi(start)
			if err != nil {
				t.Fatalf("bad hunk header %q", l)
			}
			if n > 0 && !strings.HasSuffix(f[1], ",0") {
				n--
			}
			out = append(out, old[next:n]...)
			next = n
			continue
		}
		text := l[1:]
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			out = append(out, old[next])
			next++
		case '-':
			next++
		case '+':
			out = append(out, text)
		}
	}
	out = append(out, old[next:]...)
	return strings.Join(out, "")
}

func TestUnifiedDiffOfADirectory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"same.go": "x\n", "changed.go": "a\nb\n", "stale.go": "old\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []File{{Path: "same.go", Content: []byte("x\n")}, {Path: "changed.go", Content: []byte("a\nc\n")}, {Path: "sub/new.go", Content: []byte("n\n")}}
	got, err := UnifiedDiff(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/changed.go\n+++ b/changed.go\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n" +
		"--- a/stale.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n" +
		"--- /dev/null\n+++ b/sub/new.go\n@@ -0,0 +1 @@\n+n\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
}
