package golden

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	sample "github.com/a2abind/a2abind/golden/cases/sample/want"
	"github.com/a2abind/a2abind/golden/cases/sample/want/frames"
)

// The golden output is not only diffed: these tests exercise it.

const goodShape = `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{"w":3},"count":0,"label":"hi"}`

func TestSampleShapeVerdicts(t *testing.T) {
	cases := []struct {
		name  string
		json  string
		rules []string // rules of the violations, sorted by pointer; nil = valid
	}{
		{"minimal valid shape", goodShape, nil},
		{"every optional member set", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_DEEP_BLUE","mode":"sleep","tags":["ab"],"sizes":{},"count":7,` +
			`"layers":[{"name":"l","opaque":true}],"named":{"x":{"name":"n"}},"depth":2,"ratio":0.5,"solid":true,"blob":"AAE=","at":"2026-01-01T00:00:00Z","side":"left","meta":{"k":[1,{}]},"circle":{"radius":1}}`, nil},
		{"required members missing", `{"label":"x"}`, []string{"required", "required", "required", "required", "required"}},
		{"unspecified enum refused", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_UNSPECIFIED","tags":["a"],"sizes":{},"count":0,"label":"x"}`, []string{"not"}},
		{"unknown enum value", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"red","tags":["a"],"sizes":{},"count":0,"label":"x"}`, []string{"enum"}},
		{"no body member", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{},"count":0}`, []string{"oneOf"}},
		{"two body members", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{},"count":0,"label":"x","note":null}`, []string{"oneOf"}},
		{"constraints inside arrays and maps", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["A"],"sizes":{"w":101},"count":0,"label":"x","layers":[{"name":"","opaque":false}]}`,
			[]string{"minLength", "const", "maximum", "pattern"}},
		{"optional zero values still checked", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{},"count":0,"label":"x","at":"","side":"","mode":""}`,
			[]string{"pattern", "format", "enum", "enum"}},
		{"wrong JSON types", `{"id":1,"color":"COLOR_RED","tags":"a","sizes":{},"count":"0","label":"x"}`, []string{"type", "type", "type"}},
		{"int32 bounds", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{"a":100},"count":2147483648,"label":"x","depth":1}`,
			[]string{"maximum"}},
		{"whole numbers with a fraction or an exponent are not integers", `{"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","color":"COLOR_RED","tags":["a"],"sizes":{"a":1e2,"b":1.5},"count":2,"label":"x","depth":1.0}`,
			[]string{"type", "type", "type"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sample.ValidateShapeJSON([]byte(tc.json))
			var got []string
			var verr *sample.ValidationError
			if errors.As(err, &verr) {
				for _, v := range verr.Violations {
					got = append(got, v.Rule)
				}
			} else if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if len(got) != len(tc.rules) {
				t.Fatalf("rules %v, want %v (%v)", got, tc.rules, err)
			}
			for i := range got {
				if got[i] != tc.rules[i] {
					t.Fatalf("rules %v, want %v (%v)", got, tc.rules, err)
				}
			}
		})
	}
}

func TestSampleOneofRoundTripsAndRefusesTwoMembers(t *testing.T) {
	var s sample.Shape
	if err := json.Unmarshal([]byte(goodShape), &s); err != nil {
		t.Fatal(err)
	}
	if l, ok := s.Body.(sample.ShapeLabel); !ok || l != "hi" {
		t.Fatalf("body %#v", s.Body)
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != goodShape {
		t.Fatalf("round trip\n got %s\nwant %s", out, goodShape)
	}
	if err := json.Unmarshal([]byte(`{"label":"a","circle":{"radius":1}}`), &s); err == nil {
		t.Fatal("two members of a oneof group decoded without error")
	}
	s.Body = &sample.Circle{Radius: -1}
	if err := s.Validate(); err == nil {
		t.Fatal("negative radius validated")
	}
}

func TestSampleDiscriminatedArgs(t *testing.T) {
	cases := []struct {
		name  string
		json  string
		valid bool
	}{
		{"draw with a valid shape", `{"op":"draw","id":1,"args":` + goodShape + `}`, true},
		{"draw with an invalid shape", `{"op":"draw","args":{"id":"x"}}`, false},
		{"draw without args", `{"op":"draw"}`, false},
		{"erase may omit args", `{"op":"erase","id":null}`, true},
		{"erase with a bad layer", `{"op":"erase","args":{"name":""}}`, false},
		{"id of a kind not allowed", `{"op":"erase","id":true}`, false},
		{"args not an object", `{"op":"erase","args":[]}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sample.ValidateCallJSON([]byte(tc.json))
			if (err == nil) != tc.valid {
				t.Fatalf("valid=%v, err=%v", tc.valid, err)
			}
		})
	}
}

func TestSampleMachineStepsByTheTable(t *testing.T) {
	key := sample.DoorGuardSet(0).With(sample.DoorGuardHasKey)
	cases := []struct {
		name  string
		from  sample.DoorState
		ev    sample.DoorEvent
		held  sample.DoorGuardSet
		to    sample.DoorState
		outs  []sample.DoorOutput
		undef bool
	}{
		{"push opens with a creak", sample.DoorStateClosed, sample.DoorEventPush, 0, sample.DoorStateOpen, []sample.DoorOutput{sample.DoorOutputCreak}, false},
		{"key locks", sample.DoorStateClosed, sample.DoorEventTurn, key, sample.DoorStateLocked, nil, false},
		{"no key: guarded row skipped", sample.DoorStateLocked, sample.DoorEventTurn, 0, sample.DoorStateLocked, nil, false},
		{"kick breaks", sample.DoorStateOpen, sample.DoorEventKick, 0, sample.DoorStateBroken, []sample.DoorOutput{sample.DoorOutputCreak, sample.DoorOutputAlarm}, false},
		{"turning an open door is undefined", sample.DoorStateOpen, sample.DoorEventTurn, key, 0, nil, true},
		{"a terminal state absorbs", sample.DoorStateBroken, sample.DoorEventPush, 0, 0, nil, true},
		{"an invalid event is undefined", sample.DoorStateClosed, sample.DoorEvent(99), 0, 0, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := sample.DoorStep(tc.from, tc.ev, tc.held)
			if tc.undef {
				var te *sample.TransitionError
				if !errors.As(err, &te) {
					t.Fatalf("got %v, %v; want a *TransitionError", tr, err)
				}
				return
			}
			if err != nil || tr.To != tc.to {
				t.Fatalf("got %v, %v; want %v", tr.To, err, tc.to)
			}
			outs := tr.Outputs.List()
			if len(outs) != len(tc.outs) {
				t.Fatalf("outputs %v, want %v", outs, tc.outs)
			}
			for i := range outs {
				if outs[i] != tc.outs[i] {
					t.Fatalf("outputs %v, want %v", outs, tc.outs)
				}
			}
		})
	}
	if w := sample.DoorStateClosed.Wire(); w != "DOOR_CLOSED" {
		t.Errorf("wire %q", w)
	}
	if !sample.DoorStateLocked.IsShut() || sample.DoorStateOpen.IsShut() || !sample.DoorStateBroken.Terminal() {
		t.Error("tags or terminal wrong")
	}
}

func TestSampleErrorsAreIdentifiedByToken(t *testing.T) {
	stuck, bad := sample.ErrDoorStuck, sample.ErrBadKey
	if stuck.Code != bad.Code {
		t.Fatalf("test premise: the two tokens share a code")
	}
	if errors.Is(stuck, sample.ErrBadKey) || !errors.Is(sample.NewError(sample.TokenDoorStuck, "jammed"), sample.ErrDoorStuck) {
		t.Fatal("errors compare by token")
	}
	if !stuck.Retryable() || bad.Retryable() || stuck.HTTPStatus != 409 {
		t.Fatal("table data lost")
	}
}

func TestSampleCloneSharesNothing(t *testing.T) {
	depth := int32(3)
	orig := &sample.Shape{ID: "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10", Color: sample.ColorRed, Tags: []string{"a"},
		Sizes: map[string]int32{"w": 1}, Layers: []sample.Layer{{Name: "l"}}, Named: map[string]sample.Layer{"n": {Name: "n"}},
		Depth: &depth, Blob: []byte{1, 2}, Meta: map[string]any{"k": []any{map[string]any{"deep": "v"}}},
		Body: sample.ShapeNote{Value: map[string]any{"x": []any{1.0}}}}
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatal("the clone differs")
	}
	c.Tags[0] = "changed"
	c.Sizes["w"] = 9
	c.Layers[0].Name = "changed"
	c.Named["n"] = sample.Layer{Name: "changed"}
	*c.Depth = 9
	c.Blob[0] = 9
	c.Meta["k"].([]any)[0].(map[string]any)["deep"] = "changed"
	c.Body.(sample.ShapeNote).Value.(map[string]any)["x"].([]any)[0] = 9.0
	want := &sample.Shape{ID: "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10", Color: sample.ColorRed, Tags: []string{"a"},
		Sizes: map[string]int32{"w": 1}, Layers: []sample.Layer{{Name: "l"}}, Named: map[string]sample.Layer{"n": {Name: "n"}},
		Depth: &depth, Blob: []byte{1, 2}, Meta: map[string]any{"k": []any{map[string]any{"deep": "v"}}},
		Body: sample.ShapeNote{Value: map[string]any{"x": []any{1.0}}}}
	*want.Depth = 3
	if !reflect.DeepEqual(orig, want) {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
	if (*sample.Shape)(nil).Clone() != nil {
		t.Fatal("nil clone")
	}
}

// TestCrossPackageReference exercises package frames, whose schema refers to
// the sample package's types with $ref: the generated code imports the
// other package and decodes, validates, encodes and clones through it, with
// violations reported at pointers that cross the package boundary.
func TestCrossPackageReference(t *testing.T) {
	good := `{"shape":` + goodShape + `,"more":[` + goodShape + `],"tint":"COLOR_RED","byName":{"a":{"name":"n"}}}`
	cases := []struct {
		name     string
		json     string
		pointers []string // of the violations, sorted; nil = valid
	}{
		{"valid frame", good, nil},
		{"missing shape", `{"tint":"COLOR_RED"}`, []string{"/shape"}},
		{"violations inside the other package's types",
			`{"shape":{"id":"x","color":"COLOR_RED","tags":["a"],"sizes":{},"count":0,"label":"x"},"more":[{"label":"x"}],"tint":"red","byName":{"a":{"name":""}}}`,
			[]string{"/byName/a/name", "/more/0/color", "/more/0/count", "/more/0/id", "/more/0/sizes", "/more/0/tags", "/shape/id", "/tint"}},
		{"wrong JSON type for the other package's object", `{"shape":[]}`, []string{"/shape"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := frames.ValidateFrameJSON([]byte(tc.json))
			var got []string
			var verr *frames.ValidationError
			if errors.As(err, &verr) {
				for _, v := range verr.Violations {
					got = append(got, v.Pointer)
				}
			} else if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !reflect.DeepEqual(got, tc.pointers) {
				t.Fatalf("pointers %q, want %q (%v)", got, tc.pointers, err)
			}
		})
	}

	f, err := frames.ParseFrameJSON([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tint != sample.ColorRed || f.Shape.Color != sample.ColorRed || f.ByName["a"].Name != "n" {
		t.Fatalf("decoded %+v", f)
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(good), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip:\n got %s\nwant %s", out, good)
	}
	c := f.Clone()
	c.Shape.Tags[0] = "changed"
	c.More[0].Tags[0] = "changed"
	if f.Shape.Tags[0] != "a" || f.More[0].Tags[0] != "a" {
		t.Fatal("Clone shares the other package's values with the original")
	}
}
