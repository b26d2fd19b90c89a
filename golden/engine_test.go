package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// moduleRoot is the directory holding go.mod, found from this file's path so
// that the tests work from any working directory.
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ".."
	}
	return filepath.Dir(filepath.Dir(file))
}

// engine validates instances with santhosh-tekuri/jsonschema/v6, compiled
// from the same schema files as the generator reads. It is the reference the
// generated validators are compared with.
type engine struct {
	// schemas holds one compiled schema per named type ($defs member).
	schemas map[string]*jsonschema.Schema
}

var (
	engineOnce   sync.Once
	sharedEngine *engine
	engineErr    error
)

// loadEngine compiles the schemas once per test binary.
func loadEngine(tb testing.TB) *engine {
	tb.Helper()
	engineOnce.Do(func() {
		sharedEngine, engineErr = compileEngine(filepath.Join(moduleRoot(), "schema"))
	})
	if engineErr != nil {
		tb.Fatalf("compile schemas: %v", engineErr)
	}
	return sharedEngine
}

// compileEngine adds every schema file that has an $id as a resource under
// that $id, and compiles each member of the $defs of the type schemas (those
// outside meta/, which describes the data documents instead).
func compileEngine(dir string) (*engine, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()

	locations := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		obj, _ := doc.(map[string]any)
		id, _ := obj["$id"].(string)
		if id == "" {
			return nil // a data document, not a schema
		}
		if err := c.AddResource(id, doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if rel, _ := filepath.Rel(dir, path); strings.HasPrefix(rel, "meta"+string(filepath.Separator)) {
			return nil
		}
		defs, _ := obj["$defs"].(map[string]any)
		for name := range defs {
			if prev, dup := locations[name]; dup {
				return fmt.Errorf("type %s is defined in %s and %s", name, prev, id)
			}
			locations[name] = id + "#/$defs/" + name
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e := &engine{schemas: map[string]*jsonschema.Schema{}}
	for name, loc := range locations {
		sch, err := c.Compile(loc)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", loc, err)
		}
		e.schemas[name] = sch
	}
	return e, nil
}

// typeNames lists the types the engine knows, sorted.
func (e *engine) typeNames() []string {
	names := make([]string, 0, len(e.schemas))
	for n := range e.schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// isObjectType reports whether a type is an object with properties (a Go
// struct), as opposed to a free object such as Struct.
func (e *engine) isObjectType(name string) bool {
	sch := e.schemas[name]
	return sch != nil && sch.Types != nil && strings.Contains(sch.Types.String(), "object") && sch.Properties != nil
}

// verdict is what one validator says about one payload.
type verdict struct {
	// valid is true when the payload satisfies the schema.
	valid bool
	// syntax is true when the payload is not a single JSON value.
	syntax bool
	// detail explains an invalid verdict, for failure messages.
	detail string
}

func (v verdict) String() string {
	switch {
	case v.valid:
		return "valid"
	case v.syntax:
		return "not JSON (" + v.detail + ")"
	}
	return "invalid (" + v.detail + ")"
}

// check validates data as an instance of the named type. An instance that
// does not parse (jsonschema.UnmarshalJSON fails: bad syntax, trailing data,
// empty input, nesting deeper than encoding/json allows) is invalid.
func (e *engine) check(typeName string, data []byte) verdict {
	sch := e.schemas[typeName]
	if sch == nil {
		return verdict{detail: "no schema for type " + typeName}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return verdict{syntax: true, detail: err.Error()}
	}
	if dup, err := hasDuplicateKey(json.NewDecoder(bytes.NewReader(data))); err == nil && dup {
		return verdict{detail: "a member appears twice in one object"}
	}
	if why := protoJSON(sch, inst); why != "" {
		return verdict{detail: why}
	}
	if err := sch.Validate(inst); err != nil {
		return verdict{detail: oneLine(err.Error())}
	}
	return verdict{valid: true}
}

// The engine reads instances the way a JSON Schema engine does; the rules
// below add what ProtoJSON (https://protobuf.dev/programming-guides/json/)
// says about the same bytes, which JSON Schema cannot express, so that the
// reference judges payloads as the A2A specification's ProtoJSON binding
// does.

// hasDuplicateKey reports whether a member appears twice in one object of
// the next JSON value of dec (after decoding its name, as encoding/json
// does): ProtoJSON parsers refuse such a document, where JSON Schema engines
// keep the last occurrence.
func hasDuplicateKey(dec *json.Decoder) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false, err
			}
			key, _ := k.(string)
			if seen[key] {
				return true, nil
			}
			seen[key] = true
			if dup, err := hasDuplicateKey(dec); dup || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token()
		return false, err
	case json.Delim('['):
		for dec.More() {
			if dup, err := hasDuplicateKey(dec); dup || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token()
		return false, err
	}
	return false, nil
}

// protoJSON removes from inst the object members whose value is null where
// the schema neither accepts null for the member nor requires it: ProtoJSON
// reads such a null as "not set". It returns why inst is not ProtoJSON: a
// number with a fraction or an exponent (10.0, 1e1) where the schema wants an
// integer, which JSON Schema accepts when its value is whole. It descends
// into members, map values and array items, following $ref, allOf and the
// if/then branches that apply.
func protoJSON(sch *jsonschema.Schema, inst any) (why string) {
	note := func(w string) {
		if why == "" {
			why = w
		}
	}
	switch v := inst.(type) {
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			for _, s := range applicable(sch, inst, nil) {
				if s.Types != nil && slices.Equal(s.Types.ToStrings(), []string{"integer"}) {
					return string(v) + " is not an integer"
				}
			}
		}
	case map[string]any:
		scopes := applicable(sch, inst, nil)
		for _, s := range scopes {
			if strings.HasSuffix(s.Location, "/jsonrpc.json#/$defs/JSONRPCError") {
				note(errorInfoRule(v))
			}
		}
		for k, val := range v {
			var props []*jsonschema.Schema
			required := false
			for _, s := range scopes {
				if p, ok := s.Properties[k]; ok {
					props = append(props, p)
				}
				required = required || slices.Contains(s.Required, k)
			}
			if val == nil && len(props) > 0 && !required && !acceptsNull(props) {
				delete(v, k)
				continue
			}
			for _, p := range props {
				note(protoJSON(p, val))
			}
			if len(props) == 0 {
				for _, s := range scopes {
					if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
						note(protoJSON(ap, val))
					}
				}
			}
		}
	case []any:
		for _, s := range applicable(sch, inst, nil) {
			if s.Items2020 != nil {
				for _, x := range v {
					note(protoJSON(s.Items2020, x))
				}
			}
		}
	}
	return why
}

// applicable lists sch and the schemas that apply to inst with it: its $ref
// target, its allOf members and the then branch of each if that inst meets.
func applicable(sch *jsonschema.Schema, inst any, out []*jsonschema.Schema) []*jsonschema.Schema {
	if sch == nil {
		return out
	}
	out = append(out, sch)
	out = applicable(sch.Ref, inst, out)
	for _, s := range sch.AllOf {
		out = applicable(s, inst, out)
	}
	if sch.If != nil && sch.Then != nil && sch.If.Validate(inst) == nil {
		out = applicable(sch.Then, inst, out)
	}
	return out
}

// acceptsNull reports whether every schema of a member accepts null.
func acceptsNull(props []*jsonschema.Schema) bool {
	for _, p := range props {
		if p.Validate(nil) != nil {
			return false
		}
	}
	return true
}

// oneLine squeezes a multi-line engine error into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// jsonMember returns the raw bytes of a top-level member of a JSON object,
// or nil.
func jsonMember(data []byte, key string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return m[key]
}

// errorInfoRule is the rule A2A v1.0 §9.5 sets on the data of a JSON-RPC
// error whose code claims an A2A error (-32001 to -32099), written apart
// from the generated code's: when data is an array (the JSON-RPC binding's
// form), one of its elements is a google.rpc.ErrorInfo (by its @type) and
// each such element has a reason among the upper-case tokens of the code in
// schema/a2a/errors.json (any non-empty reason for a code without a token),
// the domain a2a-protocol.org and metadata of string values.
func errorInfoRule(e map[string]any) string {
	n, ok := e["code"].(json.Number)
	if !ok {
		return ""
	}
	code, err := n.Int64()
	if err != nil || code > -32001 || code < -32099 {
		return ""
	}
	data, ok := e["data"].([]any)
	if !ok {
		return ""
	}
	reasons := errorReasons()[code]
	found := false
	for _, item := range data {
		m, ok := item.(map[string]any)
		if !ok || m["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" {
			continue
		}
		found = true
		reason, _ := m["reason"].(string)
		if reason == "" || (len(reasons) > 0 && !slices.Contains(reasons, reason)) {
			return fmt.Sprintf("ErrorInfo reason %v does not fit code %d", m["reason"], code)
		}
		if m["domain"] != "a2a-protocol.org" {
			return fmt.Sprintf("ErrorInfo domain %v", m["domain"])
		}
		if md, ok := m["metadata"]; ok && md != nil {
			obj, ok := md.(map[string]any)
			if !ok {
				return "ErrorInfo metadata is not an object"
			}
			for k, v := range obj {
				if _, ok := v.(string); !ok {
					return "ErrorInfo metadata " + k + " is not a string"
				}
			}
		}
	}
	if !found {
		return fmt.Sprintf("code %d without an ErrorInfo in its data array", code)
	}
	return ""
}

var (
	reasonsOnce sync.Once
	reasonsMap  map[int64][]string
)

// errorReasons reads the upper-case tokens of each code from
// schema/a2a/errors.json.
func errorReasons() map[int64][]string {
	reasonsOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join(moduleRoot(), "schema", "a2a", "errors.json"))
		if err != nil {
			panic(err)
		}
		var doc struct {
			Errors []struct {
				Token string `json:"token"`
				Code  int64  `json:"code"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			panic(err)
		}
		reasonsMap = map[int64][]string{}
		for _, e := range doc.Errors {
			reasonsMap[e.Code] = append(reasonsMap[e.Code], strings.ToUpper(e.Token))
		}
	})
	return reasonsMap
}
