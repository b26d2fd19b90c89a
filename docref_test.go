package a2abind_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The comments, strings and documents of this repository point readers to
// sections of its docs: "docs/protocol.md §8.5" or `docs/guide.md, "Secrets
// at rest"`. TestDocReferencesExist fails when a pointed-to section does not
// exist, so renumbering or renaming a section means fixing what cites it.

var (
	// sectionRef is "docs/protocol.md §8.5", optionally followed by more
	// sections: "§7.1, §7.2 and §7.4".
	sectionRef = regexp.MustCompile(`docs/([a-z]+)\.md,?\s+(§\d+(?:\.\d+)*(?:(?:\s*,\s*|\s+and\s+|\s+or\s+|,\s+and\s+)§\d+(?:\.\d+)*)*)`)
	sectionNum = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	// headingRef is `docs/guide.md, "Secrets at rest"`.
	headingRef = regexp.MustCompile(`docs/([a-z]+)\.md,\s+"([^"]+)"`)
	// rowRef is `§11, "retry, follow-up or error?"`: a row of the table of
	// docs/protocol.md §11, cited by its topic.
	rowRef = regexp.MustCompile(`§11,?\s+\(?"([^"]+)"`)
	// numbered is the number of a numbered heading: "## 8. Push", "### 8.5 The".
	numbered = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?\s`)
)

// docSections returns the numbers of the numbered headings of a Markdown
// document and the text of every heading (numbers removed).
func docSections(md string) (nums map[string]bool, titles []string) {
	nums = map[string]bool{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		if m := numbered.FindStringSubmatch(title); m != nil {
			nums[m[1]] = true
			title = strings.TrimSpace(title[len(m[0]):])
		}
		titles = append(titles, title)
	}
	return nums, titles
}

// disagreements returns the topics of the table of docs/protocol.md §11,
// backquotes removed.
func disagreements(protocol string) []string {
	var topics []string
	in := false
	for _, line := range strings.Split(protocol, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## 11.")
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") {
			continue
		}
		cell := strings.TrimSpace(strings.Split(line[1:], "|")[0])
		topics = append(topics, strings.ReplaceAll(cell, "`", ""))
	}
	return topics
}

// brokenRef is a citation of a section that does not exist.
type brokenRef struct {
	line     int
	citation string
}

// brokenRefs returns the citations in text (the lines of one file) of
// sections that docs (document name to its Markdown) lacks. Lines are joined
// first, with comment markers and indentation dropped, so that a citation
// wrapped across comment lines is found.
func brokenRefs(text string, docs map[string]string) []brokenRef {
	var joined strings.Builder
	var starts []int // offset in joined of each line
	for _, line := range strings.Split(text, "\n") {
		starts = append(starts, joined.Len())
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		joined.WriteString(line)
		joined.WriteByte(' ')
	}
	s := joined.String()
	lineOf := func(off int) int { return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) }
	var out []brokenRef
	for _, m := range sectionRef.FindAllStringSubmatchIndex(s, -1) {
		doc, ok := docs[s[m[2]:m[3]]]
		if !ok {
			out = append(out, brokenRef{lineOf(m[0]), s[m[0]:m[1]] + " (no such document)"})
			continue
		}
		nums, _ := docSections(doc)
		for _, n := range sectionNum.FindAllStringSubmatch(s[m[4]:m[5]], -1) {
			if !nums[n[1]] {
				out = append(out, brokenRef{lineOf(m[0]), s[m[0]:m[1]] + " (no section " + n[1] + ")"})
			}
		}
	}
	for _, m := range headingRef.FindAllStringSubmatchIndex(s, -1) {
		doc, ok := docs[s[m[2]:m[3]]]
		if !ok {
			out = append(out, brokenRef{lineOf(m[0]), s[m[0]:m[1]] + " (no such document)"})
			continue
		}
		_, titles := docSections(doc)
		want := s[m[4]:m[5]]
		found := false
		for _, t := range titles {
			found = found || strings.HasPrefix(t, want)
		}
		if !found {
			out = append(out, brokenRef{lineOf(m[0]), s[m[0]:m[1]] + " (no such heading)"})
		}
	}
	topics := disagreements(docs["protocol"])
	for _, m := range rowRef.FindAllStringSubmatchIndex(s, -1) {
		want := strings.ReplaceAll(s[m[2]:m[3]], "`", "")
		found := false
		for _, t := range topics {
			found = found || strings.HasPrefix(t, want)
		}
		if !found {
			out = append(out, brokenRef{lineOf(m[0]), s[m[0]:m[1]] + " (no such row in docs/protocol.md §11)"})
		}
	}
	return out
}

// TestDocReferenceChecker shows that the checker finds what it must.
func TestDocReferenceChecker(t *testing.T) {
	docs := map[string]string{
		"protocol": "# Title\n## 1. Topics\n### 1.5 Topic root\n```\n## 9. in a fence\n```\n" +
			"## 11. Disagreements\n\n| topic | what |\n| --- | --- |\n| who makes `Task.id` | the server |\n## 12. Next\n| not a row | x |\n",
		"guide": "# Guide\n## 3. Serving it\n### Secrets at rest\n",
	}
	cases := []struct {
		name, text string
		broken     int
	}{
		{"a section that exists", "// see docs/protocol.md §1.5.", 0},
		{"a chapter that exists", "// docs/protocol.md §1: topics", 0},
		{"a missing section", "// see docs/protocol.md §1.6", 1},
		{"a citation wrapped across comment lines", "// see docs/protocol.md\n\t// §2.1 for that", 1},
		{"every section of a list", "// docs/protocol.md §1.5, §1.7 and §4", 2},
		{"a heading inside a code fence is no section", "// docs/protocol.md §9", 1},
		{"a quoted heading that exists", `// docs/guide.md, "Secrets at rest"`, 0},
		{"a quoted numbered heading, number left out", `// docs/guide.md, "Serving it"`, 0},
		{"a quoted heading that does not exist", `// docs/guide.md, "Secrets in transit"`, 1},
		{"a document that does not exist", "// docs/digest.md §10", 1},
		{"a row of the §11 table, backquotes aside", `// docs/protocol.md §11, "who makes Task.id"`, 0},
		{"a row cited after another section", `// (docs/protocol.md §1; §11, "who makes ` + "`Task.id`" + `")`, 0},
		{"a row that is not in the §11 table", `// docs/protocol.md §11, "not a row"`, 1},
		{"another specification's section is not checked", "// MQTT v5 §3.1.4, A2A v1.0 §3.5", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := brokenRefs(tc.text, docs); len(got) != tc.broken {
				t.Fatalf("%d broken references, want %d: %+v", len(got), tc.broken, got)
			}
		})
	}
}

// TestDocReferencesExist checks every citation of a section of docs/*.md in
// the Go, Markdown and JSON files of the repository.
func TestDocReferencesExist(t *testing.T) {
	docs := map[string]string{}
	mds, err := filepath.Glob("docs/*.md")
	if err != nil || len(mds) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	for _, p := range mds {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[strings.TrimSuffix(filepath.Base(p), ".md")] = string(b)
	}
	checked := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json":
		default:
			return nil
		}
		if path == "docref_test.go" { // its cases cite missing sections on purpose
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "docs/") {
			return nil
		}
		checked++
		for _, r := range brokenRefs(string(b), docs) {
			t.Errorf("%s:%d: %s", path, r.line, r.citation)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d files cite docs/: the walk is not reading the repository", checked)
	}
}
