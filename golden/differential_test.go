package golden

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDifferential checks every checkable payload with the generated
// validator and with the schema engine: both must give the same verdict, and
// it must be the one the corpus records.
func TestDifferential(t *testing.T) {
	eng := loadEngine(t)
	for _, p := range loadCorpus(t) {
		t.Run(p.name, func(t *testing.T) {
			if p.typeName == "" {
				t.Skip("not checkable: " + p.reason)
			}
			gen := agree(t, eng, p.typeName, p.data)
			if gen.valid != p.valid {
				t.Errorf("verdict %s, corpus says valid=%v", gen, p.valid)
			}
		})
	}
}

// agree checks data with both validators, reports any disagreement and
// returns the generated verdict.
func agree(tb testing.TB, eng *engine, typeName string, data []byte) verdict {
	tb.Helper()
	gen, err := checkGenerated(typeName, data)
	if err != nil {
		tb.Fatalf("Validate%sJSON: %v", typeName, err)
	}
	ref := eng.check(typeName, data)
	if gen.valid != ref.valid {
		tb.Errorf("Validate%sJSON and the schema engine disagree on %q:\n  generated: %s\n  engine:    %s", typeName, clip(data), gen, ref)
	} else if gen.syntax != ref.syntax {
		tb.Errorf("Validate%sJSON and the schema engine disagree on whether %q is JSON:\n  generated: %s\n  engine:    %s", typeName, clip(data), gen, ref)
	}
	return gen
}

// TestRoundTrip decodes every valid payload into its generated type, encodes
// it and decodes it again: the two decoded values must be equal and the
// re-encoded bytes valid.
func TestRoundTrip(t *testing.T) {
	eng := loadEngine(t)
	for _, p := range loadCorpus(t) {
		if p.typeName == "" || !p.valid {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			out := goTypes[p.typeName].roundTrip(t, p.data)
			if v := agree(t, eng, p.typeName, out); !v.valid {
				t.Errorf("re-encoded payload is %s: %s", v, out)
			}
		})
	}
}

// TestDispatchTableComplete checks that goTypes lists exactly the object
// types the schema defines.
func TestDispatchTableComplete(t *testing.T) {
	eng := loadEngine(t)
	for _, name := range eng.typeNames() {
		_, ok := goTypes[name]
		if eng.isObjectType(name) && !ok {
			t.Errorf("object type %s is missing from goTypes", name)
		}
	}
	for name := range goTypes {
		if !eng.isObjectType(name) {
			t.Errorf("goTypes lists %s, which is not an object type of the schema", name)
		}
	}
}

// TestCorpusCoverage checks that the hand-made corpus keeps at least one
// valid and one invalid payload for each type the suite promises to cover.
func TestCorpusCoverage(t *testing.T) {
	want := []string{
		"AgentCard", "Message", "Part", "Task", "TaskStatusUpdateEvent",
		"TaskArtifactUpdateEvent", "StreamResponse", "SendMessageResponse",
		"SendMessageRequest", "JSONRPCRequest", "JSONRPCResponse",
		"ListTasksRequest", "TaskPushNotificationConfig", "SecurityScheme",
		"OAuthFlows", "SecurityRequirement", "AsleepResponse", "QueueFullResponse",
	}
	count := map[string][2]int{}
	for _, p := range loadCorpus(t) {
		c := count[p.typeName]
		if p.valid {
			c[0]++
		} else {
			c[1]++
		}
		count[p.typeName] = c
	}
	for _, name := range want {
		if c := count[name]; c[0] == 0 || c[1] == 0 {
			t.Errorf("%s: %d valid and %d invalid payloads; want at least one of each", name, c[0], c[1])
		}
	}
}

// clip shortens a payload for failure messages.
func clip(data []byte) string {
	const max = 300
	if len(data) <= max {
		return string(data)
	}
	return string(data[:max]) + "…"
}

// knownDivergences are inputs on which the generated code and the engine are
// known to disagree, with the reason. TestKnownDivergences fails as soon as
// one of them agrees, so that the case moves into the corpus.
var knownDivergences = []struct {
	name, typeName, data, why string
}{
	// None: unbounded integers, the last divergence found, are now refused
	// by the generator, and the schemas give every integer its bounds.
}

func TestKnownDivergences(t *testing.T) {
	eng := loadEngine(t)
	for _, c := range knownDivergences {
		t.Run(c.name, func(t *testing.T) {
			gen, err := checkGenerated(c.typeName, []byte(c.data))
			if err != nil {
				t.Fatal(err)
			}
			ref := eng.check(c.typeName, []byte(c.data))
			if gen.valid == ref.valid {
				t.Fatalf("no longer diverges (both say %s): move %s into the corpus", gen, c.data)
			}
			t.Logf("generated: %s; engine: %s; because %s", gen, ref, c.why)
		})
	}
}

// TestConformanceDocListsEveryListedPayload checks that docs/conformance.md
// has a row for every spec example and SDK payload.
func TestConformanceDocListsEveryListedPayload(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(), "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"spec", "a2a-go"} {
		for _, v := range readVerdicts(t, filepath.Join(payloadDir, source, "verdicts.json")) {
			if !strings.Contains(string(doc), "| `"+v.File+"` |") {
				t.Errorf("docs/conformance.md has no row for %s/%s", source, v.File)
			}
		}
	}
}

// Validate<Type>JSON checks as it reads and keeps no object; Parse<Type>JSON
// keeps the value and checks it afterwards. On every corpus payload, and on
// every payload with one member of it removed or changed to a wrong type,
// both must report the same violations (or the same syntax error).
func TestCheckingAgreesWithKeptValue(t *testing.T) {
	n := 0
	for _, p := range loadCorpus(t) {
		gt, ok := goTypes[p.typeName]
		if !ok {
			continue
		}
		for _, data := range append([][]byte{p.data}, mutations(p.data)...) {
			n++
			checked, err := classify(gt.validate(data))
			if err != nil {
				t.Fatalf("%s: Validate%sJSON: %v", p.name, p.typeName, err)
			}
			kept, err := classify(gt.parse(data))
			if err != nil {
				t.Fatalf("%s: Parse%sJSON: %v", p.name, p.typeName, err)
			}
			if checked != kept && !keptSubset(checked, kept) {
				t.Errorf("%s: on %s\n  Validate%sJSON: %s\n  Parse%sJSON:    %s", p.name, clip(data), p.typeName, checked, p.typeName, kept)
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d payloads compared", n)
	}
}

// keptSubset allows one difference: with two members of a oneof group set,
// the kept value holds (and Parse checks) only the last one, where the
// checking decoder checked both as it read them.
func keptSubset(checked, kept verdict) bool {
	if checked.valid || kept.valid || !strings.Contains(kept.detail, "more than one of") {
		return false
	}
	for _, v := range strings.Split(kept.detail, "; ") {
		if !strings.Contains(checked.detail, v) {
			return false
		}
	}
	return true
}

// mutations returns variants of a JSON object: each top-level member
// removed, and each member's value replaced by a number, by a string and by
// an object missing everything, nested one level down as well.
func mutations(data []byte) [][]byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var out [][]byte
	emit := func(m map[string]json.RawMessage) {
		b, err := json.Marshal(m)
		if err == nil {
			out = append(out, b)
		}
	}
	for k, v := range top {
		without := maps.Clone(top)
		delete(without, k)
		emit(without)
		for _, repl := range []string{`7`, `"x"`, `{}`, `[{}]`, `null`} {
			changed := maps.Clone(top)
			changed[k] = json.RawMessage(repl)
			emit(changed)
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) == nil {
			for ik := range inner {
				for _, repl := range []string{`7`, `{}`, `[]`} {
					changedInner := maps.Clone(inner)
					changedInner[ik] = json.RawMessage(repl)
					b, err := json.Marshal(changedInner)
					if err != nil {
						continue
					}
					changed := maps.Clone(top)
					changed[k] = b
					emit(changed)
				}
			}
		}
		var list []json.RawMessage
		if json.Unmarshal(v, &list) == nil && len(list) > 0 {
			var elem map[string]json.RawMessage
			if json.Unmarshal(list[0], &elem) == nil {
				for ek := range elem {
					e := maps.Clone(elem)
					delete(e, ek)
					b, _ := json.Marshal(e)
					l := slices.Clone(list)
					l[0] = b
					lb, _ := json.Marshal(l)
					changed := maps.Clone(top)
					changed[k] = lb
					emit(changed)
				}
			}
		}
	}
	return out
}
