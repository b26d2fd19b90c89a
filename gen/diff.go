package gen

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// UnifiedDiff compares files with what dir holds and returns, for every file
// Write would add, change or remove, a unified diff (three lines of context)
// from the file in dir (a/) to the generated one (b/), files sorted by path.
// It is empty when dir is up to date.
func UnifiedDiff(dir string, files []File) (string, error) {
	have, err := existing(dir)
	if err != nil {
		return "", err
	}
	want := map[string][]byte{}
	for _, f := range files {
		want[f.Path] = f.Content
	}
	paths := map[string]bool{}
	for p := range have {
		paths[p] = true
	}
	for p := range want {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, p := range sorted {
		old, inDir := have[p]
		content, generated := want[p]
		if inDir && generated && bytes.Equal(old, content) {
			continue
		}
		from, to := "a/"+p, "b/"+p
		if !inDir {
			from = "/dev/null"
		}
		if !generated {
			to = "/dev/null"
		}
		b.WriteString(diffText(from, to, string(old), string(content)))
	}
	return b.String(), nil
}

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxDiffCells bounds the table the line matching uses (lines of the old
// text times lines of the new, once common leading and trailing lines are
// set aside); past it the differing middle is shown as removed whole, then
// added whole.
const maxDiffCells = 4 << 20

// diffText is the unified diff of two texts, or "" when they are equal.
func diffText(from, to, a, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	ops := diffLines(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	// Group the changes into hunks with their context.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// A run of unchanged lines longer than twice the context ends
			// the hunk.
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		writeHunk(&out, ops, start, end)
		i = end
	}
	return out.String()
}

type diffOp struct {
	kind       byte // ' ', '-' or '+'
	text       string
	aLine, bLn int // 1-based line numbers in the old and new text
}

func writeHunk(out *strings.Builder, ops []diffOp, start, end int) {
	aStart, bStart, aN, bN := 0, 0, 0, 0
	for _, op := range ops[start:end] {
		if op.kind != '+' {
			if aN == 0 {
				aStart = op.aLine
			}
			aN++
		}
		if op.kind != '-' {
			if bN == 0 {
				bStart = op.bLn
			}
			bN++
		}
	}
	if aN == 0 {
		aStart = ops[start].aLine - 1 // an insertion: the line before it
	}
	if bN == 0 {
		bStart = ops[start].bLn - 1
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
	for _, op := range ops[start:end] {
		out.WriteByte(op.kind)
		out.WriteString(op.text)
		if !strings.HasSuffix(op.text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// splitLines splits s after each newline, keeping them.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines is an edit script from x to y: a longest common subsequence of
// lines, found by dynamic programming on what lies between the common
// leading and trailing lines.
func diffLines(x, y []string) []diffOp {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	var ops []diffOp
	ai, bi := 1, 1
	keep := func(s string) { ops = append(ops, diffOp{' ', s, ai, bi}); ai++; bi++ }
	del := func(s string) { ops = append(ops, diffOp{'-', s, ai, bi}); ai++ }
	add := func(s string) { ops = append(ops, diffOp{'+', s, ai, bi}); bi++ }
	for _, s := range x[:pre] {
		keep(s)
	}
	n, m := len(mx), len(my)
	if n*m > maxDiffCells {
		for _, s := range mx {
			del(s)
		}
		for _, s := range my {
			add(s)
		}
	} else {
		// lcs[i][j] is the length of the LCS of mx[i:] and my[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && mx[i] == my[j]:
				keep(mx[i])
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				del(mx[i])
				i++
			default:
				add(my[j])
				j++
			}
		}
	}
	for _, s := range x[len(x)-suf:] {
		keep(s)
	}
	return ops
}
