package jsonsize

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// slack is how far above the encoded length n an estimate may be: 1/32 of
// it and 512 bytes.
func slack(n int) int { return n/32 + 512 }

// prose is n bytes of text with a newline every 100 bytes or so.
func prose(n int) string {
	const line = "The warehouse in Lyon reports 40 pallets of SKU 4711-22 ready for transfer to the depot at Turin.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// embedded is n bytes of JSON quoted in a text: a quote every 6 bytes or
// so, and a backslash now and then.
func embedded(n int) string {
	const obj = `{"sku":"4711-22","qty":40,"to":"Turin","note":"a \\ b"},` + "\n"
	return strings.Repeat(obj, n/len(obj)+1)[:n]
}

func textMessage(id string, parts ...a2a.Part) a2a.Message {
	return a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: parts}
}

func text(s string) a2a.Part { return a2a.Part{Content: a2a.PartText(s)} }

// TestEstimateCoversTheEncoding checks that Task's estimate is at or above
// the length of the task's AppendJSON, by at most slack, for tasks of
// every kind of member and text: plain and escaped, short and long, raw
// and data parts, metadata, several messages and artifacts.
func TestEstimateCoversTheEncoding(t *testing.T) {
	raw := make([]byte, 300_001)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	meta := map[string]any{"k": "<v>\n", "n": 1.5, "list": []any{true, nil, "x", map[string]any{"deep": 3.0}}}
	status := &a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2026-12-01T10:00:00.123Z"}
	task := func(history []a2a.Message, artifacts []a2a.Artifact, md map[string]any) a2a.Task {
		return a2a.Task{ID: "3f1c9a52-0d7e-4b8f-9a61-2c5d8e7f4a10", ContextID: "c1", Status: status,
			History: history, Artifacts: artifacts, Metadata: md}
	}
	cases := []struct {
		name string
		task a2a.Task
	}{
		{"no history", task(nil, nil, nil)},
		{"empty history", task([]a2a.Message{}, nil, nil)},
		{"short text", task([]a2a.Message{textMessage("m1", text("hello"))}, nil, nil)},
		{"short text, every escape", task([]a2a.Message{textMessage("m1", text("q\" b\\ n\n r\r t\t c\x01 \u2028\u2029 é \xff"))}, nil, nil)},
		{"1 MB of prose", task([]a2a.Message{textMessage("m1", text(prose(1_000_000)))}, nil, nil)},
		{"1 MB of JSON in a text", task([]a2a.Message{textMessage("m1", text(embedded(1_000_000)))}, nil, nil)},
		{"1 MB of newlines", task([]a2a.Message{textMessage("m1", text(strings.Repeat("\n", 1_000_000)))}, nil, nil)},
		{"1 MB of control bytes", task([]a2a.Message{textMessage("m1", text(strings.Repeat("\x01", 1_000_000)))}, nil, nil)},
		{"1 MB of accented text", task([]a2a.Message{textMessage("m1", text(strings.Repeat("déjà vu, ", 111_112)))}, nil, nil)},
		{"raw part of 300 KB", task([]a2a.Message{textMessage("m1", a2a.Part{Content: a2a.PartRaw(raw), MediaType: "application/octet-stream", Filename: "a.bin"})}, nil, nil)},
		{"url and data parts", task([]a2a.Message{textMessage("m1",
			a2a.Part{Content: a2a.PartURL("https://example.com/a?b=c")},
			a2a.Part{Content: a2a.PartData{Value: meta}, Metadata: meta})}, nil, nil)},
		{"several messages, artifacts and metadata", task(
			[]a2a.Message{textMessage("m1", text(prose(200_000))), textMessage("m2", text("ok")), textMessage("m3", text(embedded(50_000)))},
			[]a2a.Artifact{{ArtifactID: "a1", Name: "echo", Description: "the text", Parts: []a2a.Part{text(prose(100_000))}, Extensions: []string{"x"}},
				{ArtifactID: "a2", Parts: []a2a.Part{text("")}, Metadata: meta}},
			meta)},
		{"status message", a2a.Task{ID: "t", Status: &a2a.TaskStatus{State: a2a.TaskStateInputRequired,
			Message: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{text("which one?")},
				Extensions: []string{"e"}, ReferenceTaskIDs: []string{"r1", "r2"}, ContextID: "c", TaskID: "t"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkEstimate(t, Task(&tc.task), &tc.task)
		})
	}
}

// checkEstimate checks est against the encoding of v.
func checkEstimate(t *testing.T, est int, v interface{ AppendJSON([]byte) ([]byte, error) }) {
	t.Helper()
	b, err := v.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimate %d for %d bytes (%+d)", est, len(b), est-len(b))
	if est < len(b) {
		t.Errorf("estimate %d below the encoding's %d bytes", est, len(b))
	}
	if est > len(b)+slack(len(b)) {
		t.Errorf("estimate %d above the encoding's %d bytes by more than %d", est, len(b), slack(len(b)))
	}
}

// TestEstimateCoversTheCorpus checks the estimates of the valid tasks,
// messages and parts of golden/payloads.
func TestEstimateCoversTheCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "golden", "payloads")
	n := 0
	for _, kind := range []string{"Task", "Message", "Part"} {
		files, err := filepath.Glob(filepath.Join(root, kind, "valid", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n++
			t.Run(kind+"/"+filepath.Base(f), func(t *testing.T) {
				switch kind {
				case "Task":
					var v a2a.Task
					if err := v.UnmarshalJSON(data); err != nil {
						t.Fatal(err)
					}
					checkEstimate(t, Task(&v), &v)
				case "Message":
					var v a2a.Message
					if err := v.UnmarshalJSON(data); err != nil {
						t.Fatal(err)
					}
					checkEstimate(t, Message(&v), &v)
				case "Part":
					var v a2a.Part
					if err := v.UnmarshalJSON(data); err != nil {
						t.Fatal(err)
					}
					checkEstimate(t, Part(&v), &v)
				}
			})
		}
	}
	if n < 20 {
		t.Fatalf("%d payloads found under %s", n, root)
	}
}

// TestStringIsExactWhenScannedWhole checks String against the encoder on
// short strings, where it scans every byte.
func TestStringIsExactWhenScannedWhole(t *testing.T) {
	for _, s := range []string{"", "a", `"`, `\`, "\n\r\t", "\x00\x1f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "\ufffd",
		strings.Repeat("é\"", 128), strings.Repeat("x", scanWhole)} {
		p := a2a.Part{Content: a2a.PartText(s)}
		b, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(b) - len(`{"text":}`); String(s) != want {
			t.Errorf("String(%q) = %d, want %d", s, String(s), want)
		}
	}
}

// TestStringIsExactWherePlainRunsAreSkipped checks String against the
// encoder on short strings whose bytes that need attention lie at every
// place of the 32- and eight-byte runs read at once, alone or twice: an
// escape, a control byte, a multi-byte rune (whole or cut by the end of a
// word), U+2028, invalid UTF-8, and 200 strings of random bytes.
func TestStringIsExactWherePlainRunsAreSkipped(t *testing.T) {
	specials := []struct {
		name string
		s    string
	}{
		{"quote", `"`}, {"backslash", `\`}, {"newline", "\n"}, {"control byte", "\x01"}, {"unit separator", "\x1f"},
		{"DEL", "\x7f"}, {"space", " "}, {"two-byte rune", "é"}, {"three-byte rune", "€"}, {"four-byte rune", "😀"},
		{"line separator", "\u2028"}, {"paragraph separator", "\u2029"}, {"invalid byte", "\xff"}, {"cut rune", "\xe2\x80"},
	}
	check := func(t *testing.T, s string) {
		t.Helper()
		p := a2a.Part{Content: a2a.PartText(s)}
		b, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(b) - len(`{"text":}`); String(s) != want {
			t.Errorf("String(%q) = %d, want %d", s, String(s), want)
		}
	}
	for _, sp := range specials {
		t.Run(sp.name, func(t *testing.T) {
			for before := range 41 {
				for _, after := range []int{0, 1, 7, 8, 9, 17} {
					check(t, strings.Repeat("a", before)+sp.s+strings.Repeat("b", after))
					check(t, strings.Repeat("a", before)+sp.s+strings.Repeat("b", after)+sp.s)
				}
			}
		})
	}
	t.Run("random bytes", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			b := make([]byte, rng.IntN(scanWhole))
			for i := range b {
				// Mostly plain text, with every kind of byte now and then.
				if rng.IntN(8) == 0 {
					b[i] = byte(rng.IntN(256))
				} else {
					b[i] = byte('a' + rng.IntN(26))
				}
			}
			check(t, string(b))
		}
	})
}

// TestSampledWindowsCountEveryASCIIEscape checks what a long string's
// sampled windows count (asciiEscapeExtra) against the escapes of their
// ASCII bytes counted one by one, on windows of random bytes.
func TestSampledWindowsCountEveryASCIIEscape(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		b := make([]byte, rng.IntN(2*sampleWindow))
		for i := range b {
			// Mostly plain text, with every kind of byte now and then.
			if rng.IntN(8) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = byte('a' + rng.IntN(26))
			}
		}
		want := 0
		for _, c := range b {
			want += asciiExtra(c)
		}
		if got := asciiEscapeExtra(string(b)); got != want {
			t.Fatalf("asciiEscapeExtra(%q) = %d, want %d", b, got, want)
		}
	}
}
