package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// payloadDir holds the corpus: payloads/<Type>/{valid,invalid}/<name>.json
// for hand-made cases, and directories with a verdicts.json (spec/, a2a-go/)
// for payloads taken from elsewhere.
var payloadDir = filepath.Join(moduleRoot(), "golden", "payloads")

// payload is one corpus entry.
type payload struct {
	// name names the subtest: "<Type>/<valid|invalid>/<file>" or
	// "<source>/<file>" (without .json); "#<member>" is appended for a
	// member checked on its own.
	name string
	// typeName is the generated type the payload is checked as; empty when
	// the payload cannot be checked (a fragment), and then reason says why.
	typeName string
	data     []byte
	// valid is the expected verdict.
	valid  bool
	reason string
}

// verdictEntry is one element of a verdicts.json file.
type verdictEntry struct {
	File   string `json:"file"`
	Source string `json:"source,omitempty"`
	Type   string `json:"type"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
	// Member, when set, also checks one top-level member of the payload on
	// its own (the result of a JSON-RPC response, the status of a Task
	// fragment) as an instance of Member.Type.
	Member *struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Valid bool   `json:"valid"`
	} `json:"member,omitempty"`
}

// loadCorpus reads every payload, failing the test on a malformed corpus
// (unknown type directory, stray file, file without verdict or the reverse).
func loadCorpus(tb testing.TB) []payload {
	tb.Helper()
	dirs, err := os.ReadDir(payloadDir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []payload
	for _, d := range dirs {
		if !d.IsDir() {
			tb.Fatalf("stray file %s in %s", d.Name(), payloadDir)
		}
		dir := filepath.Join(payloadDir, d.Name())
		if _, err := os.Stat(filepath.Join(dir, "verdicts.json")); err == nil {
			out = append(out, loadListed(tb, d.Name())...)
		} else {
			out = append(out, loadTypeDir(tb, d.Name())...)
		}
	}
	return out
}

func loadTypeDir(tb testing.TB, typeName string) []payload {
	tb.Helper()
	if _, ok := goTypes[typeName]; !ok {
		tb.Fatalf("payloads/%s: no generated type of that name", typeName)
	}
	entries, err := os.ReadDir(filepath.Join(payloadDir, typeName))
	if err != nil {
		tb.Fatal(err)
	}
	var out []payload
	for _, e := range entries {
		if !e.IsDir() || (e.Name() != "valid" && e.Name() != "invalid") {
			tb.Fatalf("payloads/%s/%s: only valid/ and invalid/ belong here", typeName, e.Name())
		}
		files, err := os.ReadDir(filepath.Join(payloadDir, typeName, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				tb.Fatalf("payloads/%s/%s/%s: not a .json file", typeName, e.Name(), f.Name())
			}
			data, err := os.ReadFile(filepath.Join(payloadDir, typeName, e.Name(), f.Name()))
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, payload{
				name:     typeName + "/" + e.Name() + "/" + strings.TrimSuffix(f.Name(), ".json"),
				typeName: typeName,
				data:     data,
				valid:    e.Name() == "valid",
			})
		}
	}
	return out
}

func loadListed(tb testing.TB, source string) []payload {
	tb.Helper()
	dir := filepath.Join(payloadDir, source)
	entries := readVerdicts(tb, filepath.Join(dir, "verdicts.json"))
	listed := map[string]bool{}
	var out []payload
	for _, v := range entries {
		if listed[v.File] {
			tb.Fatalf("%s/verdicts.json lists %s twice", source, v.File)
		}
		listed[v.File] = true
		if v.Reason == "" {
			tb.Errorf("%s/verdicts.json: %s has no reason", source, v.File)
		}
		if v.Type != "" {
			if _, ok := goTypes[v.Type]; !ok {
				tb.Fatalf("%s/verdicts.json: %s: unknown type %q", source, v.File, v.Type)
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, v.File))
		if err != nil {
			tb.Fatalf("%s/verdicts.json: %v", source, err)
		}
		name := source + "/" + strings.TrimSuffix(v.File, ".json")
		out = append(out, payload{name: name, typeName: v.Type, data: data, valid: v.Valid, reason: v.Reason})
		if m := v.Member; m != nil {
			raw := jsonMember(data, m.Name)
			if raw == nil {
				tb.Fatalf("%s/verdicts.json: %s has no member %q to check", source, v.File, m.Name)
			}
			if _, ok := goTypes[m.Type]; !ok {
				tb.Fatalf("%s/verdicts.json: %s: unknown member type %q", source, v.File, m.Type)
			}
			out = append(out, payload{name: name + "#" + m.Name, typeName: m.Type, data: raw, valid: m.Valid, reason: v.Reason})
		}
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		if f.Name() != "verdicts.json" && !listed[f.Name()] {
			tb.Errorf("%s/%s has no entry in verdicts.json", source, f.Name())
		}
	}
	return out
}

func readVerdicts(tb testing.TB, path string) []verdictEntry {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var entries []verdictEntry
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].File < entries[j].File })
	return entries
}

// corpusOf returns the checkable payloads of one type, for fuzz seeds.
func corpusOf(tb testing.TB, typeName string) []payload {
	tb.Helper()
	var out []payload
	for _, p := range loadCorpus(tb) {
		if p.typeName == typeName {
			out = append(out, p)
		}
	}
	return out
}
