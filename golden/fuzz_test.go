package golden

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// The fuzz targets check the generated code against the schema engine on
// arbitrary bytes. Their seed corpora, under testdata/fuzz/<FuzzName>/, are
// the corpus payloads of the target's type (TestFuzzSeedsUpToDate keeps them
// in step; -update rewrites them). Run one with, for example,
//
//	go test ./golden -run '^$' -fuzz '^FuzzValidatePartJSON$' -fuzztime 60s -parallel 1

// fuzzTargets maps each fuzz target to the type whose payloads seed it.
var fuzzTargets = map[string]string{
	"FuzzValidateAgentCardJSON":          "AgentCard",
	"FuzzValidateSendMessageRequestJSON": "SendMessageRequest",
	"FuzzValidateJSONRPCRequestJSON":     "JSONRPCRequest",
	"FuzzValidateTaskJSON":               "Task",
	"FuzzValidatePartJSON":               "Part",
	"FuzzUnmarshalMessage":               "Message",
}

func FuzzValidateAgentCardJSON(f *testing.F)          { fuzzAgreement(f, "AgentCard") }
func FuzzValidateSendMessageRequestJSON(f *testing.F) { fuzzAgreement(f, "SendMessageRequest") }
func FuzzValidateJSONRPCRequestJSON(f *testing.F)     { fuzzAgreement(f, "JSONRPCRequest") }
func FuzzValidateTaskJSON(f *testing.F)               { fuzzAgreement(f, "Task") }
func FuzzValidatePartJSON(f *testing.F)               { fuzzAgreement(f, "Part") }

// fuzzAgreement checks that ValidateXxxJSON never panics and gives the
// engine's verdict.
func fuzzAgreement(f *testing.F, typeName string) {
	eng := loadEngine(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, eng, typeName, data)
	})
}

// FuzzUnmarshalMessage checks Message.UnmarshalJSON on arbitrary bytes: it
// never panics, fails with *SyntaxError exactly when the bytes are not JSON,
// agrees with ValidateMessageJSON (decoding plus Validate accepts exactly
// what ValidateMessageJSON accepts, which the engine accepts too), and a
// message it accepts survives a round trip through json.Marshal.
func FuzzUnmarshalMessage(f *testing.F) {
	eng := loadEngine(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m a2a.Message
		err := m.UnmarshalJSON(data)
		got, cerr := classify(err)
		if cerr != nil {
			t.Fatalf("UnmarshalJSON: %v", cerr)
		}
		if got.syntax == json.Valid(data) {
			t.Fatalf("UnmarshalJSON syntax error %v, but json.Valid says %v, on %q", err, json.Valid(data), clip(data))
		}
		decodedValid := err == nil && m.Validate() == nil
		whole := agree(t, eng, "Message", data)
		if decodedValid != whole.valid {
			t.Fatalf("UnmarshalJSON+Validate says valid=%v (%v, %v), ValidateMessageJSON says %s, on %q", decodedValid, err, m.Validate(), whole, clip(data))
		}
		if !decodedValid {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var again a2a.Message
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("decoding the re-encoded message: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the message:\nfirst:  %#v\nsecond: %#v\nfrom %q via %s", m, again, clip(data), out)
		}
		if err := a2a.ValidateMessageJSON(out); err != nil {
			t.Fatalf("re-encoded message is invalid: %v\n%s", err, out)
		}
	})
}

// TestFuzzSeedsUpToDate checks that testdata/fuzz/<FuzzName>/ holds exactly
// one seed per corpus payload of the target's type, in Go's corpus file
// format; -update rewrites the seeds.
func TestFuzzSeedsUpToDate(t *testing.T) {
	for target, typeName := range fuzzTargets {
		dir := filepath.Join("testdata", "fuzz", target)
		want := map[string][]byte{}
		for _, p := range corpusOf(t, typeName) {
			name := strings.NewReplacer("/", "-", "#", "-").Replace(p.name)
			want[name] = []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", p.data))
		}
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range old {
				if !isFuzzFinding(e.Name()) {
					if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			}
			for name, data := range want {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, e := range entries {
			have[e.Name()] = true
			if _, ok := want[e.Name()]; !ok && !isFuzzFinding(e.Name()) {
				t.Errorf("%s/%s matches no corpus payload (run go test ./golden -run TestFuzzSeedsUpToDate -update)", dir, e.Name())
			}
		}
		for name, data := range want {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != string(data) {
				t.Errorf("%s/%s is missing or stale (run go test ./golden -run TestFuzzSeedsUpToDate -update)", dir, name)
			}
		}
	}
}

// isFuzzFinding reports whether a seed file was written by go test -fuzz
// (a failing input, named by its hash) rather than by -update.
func isFuzzFinding(name string) bool {
	if len(name) != 16 {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
