package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestDecodeStringsLikeEncodingJSON(t *testing.T) {
	cases := []struct{ name, in string }{
		{"plain ASCII", `"hello"`},
		{"escapes", `"a\"b\\c\/d\b\f\n\r\t"`},
		{"unicode escape", `"\u00e9\u4e2d"`},
		{"surrogate pair", `"\ud83d\ude00"`},
		{"lone high surrogate", `"\ud83dx"`},
		{"lone low surrogate", `"\ude00"`},
		{"high surrogate then non-low escape", `"\ud83d\u0041"`},
		{"invalid UTF-8 byte", "\"a\xffb\""},
		{"truncated UTF-8", "\"a\xe2\x82\""},
		{"raw multibyte", `"日本語"`},
		{"long, no escape", `"` + strings.Repeat("abcdefgh", 300) + `"`},
		{"long, an escape every line (own buffer)", `"` + strings.Repeat(`line of text\n`, 200) + `"`},
		{"long, escaped quotes and backslashes at the end", `"` + strings.Repeat("x", 2000) + `\\\"\\"`},
		{"long, escapes and invalid UTF-8 growing it", "\"\\n" + strings.Repeat("\xff", 1500) + "\""},
		{"long, multibyte after an escape", `"\t` + strings.Repeat("é日", 400) + `"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want string
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatal(err)
			}
			var v Validator
			d := Decoder{data: []byte(tc.in), v: &v}
			got, ok := d.String(nil)
			d.end()
			if !ok || d.syntax != nil || got != want {
				t.Fatalf("got %q (ok=%v, err=%v), want %q", got, ok, d.syntax, want)
			}
		})
	}
}

// TestDecodeEncodedCasesBack decodes what encoding/json makes of each of
// encodeCases (an escape or a multibyte character at every offset of an
// 8-byte word in a long text) and of the same with raw control characters
// left in (a syntax error at the same offset).
func TestDecodeEncodedCasesBack(t *testing.T) {
	for _, s := range encodeCases() {
		in, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatal(err)
		}
		var v Validator
		d := Decoder{data: in, v: &v}
		got, ok := d.String(nil)
		d.end()
		if !ok || d.syntax != nil || got != want {
			t.Errorf("%.40q…: got %.40q… (ok=%v, err=%v)", s, got, ok, d.syntax)
		}
		raw := []byte(`"` + strings.Repeat("x", 20+len(s)%8) + "\x01" + strings.Repeat("y", 30) + `"`)
		d = Decoder{data: raw, v: &v}
		if _, ok := d.String(nil); ok || d.syntax == nil {
			t.Errorf("raw control character at %d accepted", 21+len(s)%8)
		}
	}
}

// TestSkipChecksStringsAsDecodingDoes skips strings (as a raw member is
// read) and decodes them, good and bad, long and short: both must end at
// the same place with the same verdict.
func TestSkipChecksStringsAsDecodingDoes(t *testing.T) {
	long := strings.Repeat("plain text ", 200)
	cases := []struct{ name, in string }{
		{"plain", `"abc"`},
		{"escapes", `"a\"b\\c\/d\b\f\n\r\t\u00e9"`},
		{"long with escapes", `"` + long + `\n` + long + `\\"`},
		{"surrogate pair", `"\ud83d\ude00"`},
		{"invalid UTF-8", "\"a\xffb\""},
		{"control character", "\"" + long + "\x01\""},
		{"invalid escape", `"` + long + `\x"`},
		{"bad \\u escape", `"\u12G4"`},
		{"high surrogate then bad \\u", `"\ud83d\uzzzz"`},
		{"unterminated", `"` + long},
		{"backslash at the end", `"abc\`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v Validator
			in := []byte(tc.in + ` 1`)
			ds := Decoder{data: in, v: &v}
			ds.Skip()
			dd := Decoder{data: in, v: &v}
			dd.String(nil)
			if (ds.syntax == nil) != (dd.syntax == nil) || ds.pos != dd.pos {
				t.Fatalf("skip: pos %d, err %v; decode: pos %d, err %v", ds.pos, ds.syntax, dd.pos, dd.syntax)
			}
			if ds.syntax != nil && *ds.syntax != *dd.syntax {
				t.Fatalf("skip: %v; decode: %v", ds.syntax, dd.syntax)
			}
		})
	}
}

func TestDecodeRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, in := range []string{``, `"abc`, "\"a\x01\"", `"\x"`, `"\u12"`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `1e`, `tru`, `nul`, `{} x`, `[`, `{"a":[1,{"b":}]}`} {
		if json.Valid([]byte(in)) {
			t.Fatalf("test premise: %q is valid JSON", in)
		}
		var v Validator
		d := Decoder{data: []byte(in), v: &v}
		d.Skip()
		d.end()
		if d.syntax == nil {
			t.Errorf("%q: no syntax error", in)
		}
	}
}

func TestAnyValueMatchesEncodingJSON(t *testing.T) {
	in := `{"a":[1,2.5,-3e2,true,false,null,"s",{"b":{}}],"c":"\u00e9","a2":{}}`
	var want any
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	var v Validator
	d := Decoder{data: []byte(in), v: &v}
	got := d.Value(nil)
	d.end()
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if d.syntax != nil || string(gb) != string(wb) {
		t.Fatalf("got %s (%v), want %s", gb, d.syntax, wb)
	}
	d = Decoder{data: []byte(`1e400`), v: &v}
	if n, ok := d.Value(nil).(json.Number); !ok || n != "1e400" {
		t.Fatalf("a number beyond float64 is kept as json.Number, got %#v", n)
	}
}

func TestIntegerRules(t *testing.T) {
	cases := []struct {
		in     string
		want   int64
		rule   string
		assign bool
	}{
		{"7", 7, "", true},
		{"-0", 0, "", true},
		{"1.0", 0, "type", false},
		{"10.0", 0, "type", false},
		{"1e2", 0, "type", false},
		{"1E2", 0, "type", false},
		{"2.50e1", 0, "type", false},
		{"1.5", 0, "type", false},
		{"-0.0", 0, "type", false},
		{"2147483648", 2147483647, "maximum", true},
		{"-2147483649", -2147483648, "minimum", true},
		{"99999999999999999999", 2147483647, "maximum", true},
		{"1e30", 0, "type", false},
		{`"7"`, 0, "type", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var v Validator
			d := Decoder{data: []byte(tc.in), v: &v}
			n, ok := d.integer(nil, -2147483648, 2147483647)
			if ok != tc.assign || (ok && n != tc.want) {
				t.Fatalf("got %d, %v; want %d, %v", n, ok, tc.want, tc.assign)
			}
			rule := ""
			if len(v.violations) > 0 {
				rule = v.violations[0].Rule
			}
			if rule != tc.rule {
				t.Fatalf("rule %q, want %q", rule, tc.rule)
			}
		})
	}
}

func TestDateTimeMatchesRFC3339(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{"2026-11-29T10:00:00Z", true},
		{"2026-11-29t10:00:00z", true},
		{"2026-11-29T10:00:00.123456789Z", true},
		{"2026-11-29T10:00:00+01:00", true},
		{"2026-12-31T23:59:60Z", true},
		{"2026-12-31T22:59:60-01:00", true},
		{"2026-12-31T10:59:60Z", false},
		{"2026-02-30T10:00:00Z", false},
		{"2026-11-29 10:00:00Z", false},
		{"2026-11-29T24:00:00Z", false},
		{"2026-11-29T10:00:00", false},
		{"2026-11-29T10:00:00.Z", false},
		{"2026-11-29T10:00:00+0100", false},
		{"2026-11-29T+1:00:00Z", true}, // read as strconv.Atoi reads "+1"
		{"2026-11-29T-1:00:00Z", false},
	}
	for _, tc := range cases {
		if got := DateTime(tc.in); got != tc.want {
			t.Errorf("DateTime(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if _, err := time.Parse(time.RFC3339, "2026-11-29T10:00:00Z"); err != nil || !DateTime(time.Now().UTC().Format(time.RFC3339Nano)) {
		t.Error("a time.RFC3339Nano UTC stamp must be accepted")
	}
}

func TestUUID(t *testing.T) {
	for in, want := range map[string]bool{
		"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10": true,
		"6F1C9A2E-3B7D-4C1E-9F2A-8B5D4E3C2A10": true,
		"6f1c9a2e3b7d4c1e9f2a8b5d4e3c2a10":     false,
		"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a1g": false,
		"":                                     false,
	} {
		if UUID(in) != want {
			t.Errorf("UUID(%q) != %v", in, want)
		}
	}
}

// encodeCases are strings AppendString must encode as encoding/json does,
// among them each character that needs escaping at every offset of an
// 8-byte word in a long text, and long texts with none.
func encodeCases() []string {
	cases := []string{"plain", "quote\" back\\ nl\n tab\t ctl\x01", "<&>", "\u2028\u2029", "bad\xffutf8", "日本",
		strings.Repeat("no escape at all ", 200), strings.Repeat("a line\n", 500)}
	for _, c := range []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff"} {
		for off := range 9 {
			cases = append(cases, strings.Repeat("x", 16+off)+c+strings.Repeat("y", 1100))
		}
	}
	return cases
}

func TestEncodersMatchEncodingJSON(t *testing.T) {
	for _, s := range encodeCases() {
		if wb, err := json.Marshal(s); err == nil {
			// encoding/json escapes <, > and & for HTML; AppendString does not.
			want := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(wb))
			if got := string(AppendString([]byte("prefix"), s)); got != "prefix"+want {
				t.Errorf("%.40q…: got %.60s…, want %.60s…", s, got[6:], want)
			}
		}
		got := string(AppendString(nil, s))
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s", s, got)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if back != want {
			t.Errorf("%q round-trips to %q", s, back)
		}
	}
	if got := string(AppendBytes(nil, []byte{0, 1, 2})); got != `"AAEC"` {
		t.Errorf("bytes: %s", got)
	}
	if got := string(AppendBool(nil, true)); got != "true" {
		t.Errorf("bool: %s", got)
	}
	for f, want := range map[float64]string{1: "1", 0.5: "0.5", 1e21: "1e+21", 1e-7: "1e-7"} {
		b, err := AppendFloat(nil, f)
		wb, _ := json.Marshal(f)
		if err != nil || string(b) != want || string(wb) != want {
			t.Errorf("float %v: %s / encoding/json %s", f, b, wb)
		}
	}
	if b, err := AppendAny(nil, map[string]any{"b": 1, "a": "<"}); err != nil || string(b) != `{"a":"<","b":1}` {
		t.Errorf("any: %s %v", b, err)
	}
	if _, err := AppendRaw(nil, []byte(`{`)); err == nil {
		t.Error("raw non-JSON accepted")
	}
}

func TestViolationsReportPointersAndDropNoise(t *testing.T) {
	var v Validator
	root := Path{key: "a/b~c", index: -1}
	item := Path{parent: &root, index: 2}
	v.Add(&item, "required", "x")
	v.Add(&item, "type", "y")
	v.Add(&root, "minItems", "z")
	CheckRaw(&v, &root, []byte(`"s"`), "object")
	other := Path{key: "z", index: -1}
	v.Add(&other, "minLength", "w")
	err := v.Err().(*ValidationError)
	var got []string
	for _, x := range err.Violations {
		got = append(got, x.Pointer+" "+x.Rule)
	}
	// At one pointer a type violation hides the others, and below it every
	// violation: a value that is not an array has no items.
	want := []string{"/a~1b~0c type", "/z minLength"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !strings.Contains(err.Error(), "(and 1 more)") || RuneCount("é\xff") != 2 {
		t.Fatal(err.Error())
	}
}

func TestDuplicateKeysAreViolations(t *testing.T) {
	cases := []struct {
		name string
		data string
		read func(d *Decoder, p *Path)
		want string // the violations, "pointer rule message;" each
	}{
		{"in a Struct", `{"a":1,"a":2}`, func(d *Decoder, p *Path) { d.Object(p) },
			`/m/a duplicate member "a" appears more than once;`},
		{"deep in a Struct", `{"a":[{"b":1,"c":{"d":0,"d":0}}]}`, func(d *Decoder, p *Path) { d.Object(p) },
			`/m/a/0/c/d duplicate member "d" appears more than once;`},
		{"in a skipped value", `{"x":{"y":[1,{"z":1,"z":1}]}}`, func(d *Decoder, p *Path) { d.skipAt(p) },
			`/m/x/y/1/z duplicate member "z" appears more than once;`},
		{"in a string map, after unescaping", `{"k":"1","\u006b":"2"}`, func(d *Decoder, p *Path) { d.StringMap(p) },
			`/m/k duplicate member "k" appears more than once;`},
		{"unknown members", `{"u":1,"v":2,"u":3}`, func(d *Decoder, p *Path) {
			var keys Keys
			d.OpenObject(p)
			for first := true; ; {
				k, ok := d.NextKey(&first)
				if !ok {
					return
				}
				d.Unknown(p, k, &keys)
			}
		}, `/m/u duplicate member "u" appears more than once;`},
		{"the same key in two objects", `{"a":{"a":1},"b":{"a":1}}`, func(d *Decoder, p *Path) { d.Object(p) }, ``},
		{"the same element twice in an array", `[{"a":1},{"a":1}]`, func(d *Decoder, p *Path) { d.skipAt(p) }, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Validator
			p := Path{key: "m", index: -1}
			err := decodeDoc([]byte(c.data), &v, true, func(d *Decoder) { c.read(d, &p) })
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, x := range v.violations {
				got += x.Pointer + " " + x.Rule + " " + x.Message + ";"
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTypedReaders(t *testing.T) {
	var v Validator
	d := Decoder{data: []byte(`[ "AAE=", "!!", 2.5, {"k":[1]}, "x" ]`), v: &v}
	if !d.OpenArray(nil) {
		t.Fatal("array not opened")
	}
	first := true
	var got []any
	readers := []func() any{
		func() any { b, _ := d.Bytes(nil); return b },
		func() any { b, _ := d.Bytes(nil); return b },
		func() any { f, _ := d.Number(nil); return f },
		func() any { m, _ := d.Object(nil); return m },
		func() any { m, ok := d.Object(nil); return ok || m != nil },
	}
	for i := 0; d.NextItem(&first); i++ {
		got = append(got, readers[i]())
	}
	d.end()
	if d.syntax != nil || len(got) != 5 {
		t.Fatalf("%v %v", got, d.syntax)
	}
	if b := got[0].([]byte); len(b) != 2 || b[1] != 1 || got[1].([]byte) != nil || got[2].(float64) != 2.5 || got[4].(bool) {
		t.Fatalf("%#v", got)
	}
	var rules []string
	for _, x := range v.violations {
		rules = append(rules, x.Rule)
	}
	if strings.Join(rules, ",") != "contentEncoding,type" {
		t.Fatalf("violations %v", rules)
	}
}

func TestDecodeAtNestsPointers(t *testing.T) {
	var v Validator
	params := Path{key: "params", index: -1}
	DecodeAt(&v, &params, []byte(`{"n":"x"}`), func(d *Decoder, p *Path) {
		if !d.OpenObject(p) {
			return
		}
		first := true
		for {
			k, ok := d.NextKey(&first)
			if !ok {
				return
			}
			kp := Path{parent: p, key: string(k), index: -1}
			d.integer(&kp, 0, 10)
		}
	})
	if len(v.violations) != 1 || v.violations[0].Pointer != "/params/n" || v.violations[0].Rule != "type" {
		t.Fatalf("%v", v.violations)
	}
}

func TestRawWithoutKindsTakesAnyValue(t *testing.T) {
	for _, in := range []string{`{"a":1}`, `[1]`, `"s"`, `2.5`, `true`, `null`} {
		var v Validator
		d := Decoder{data: []byte(in), v: &v}
		got := d.RawKinds(nil)
		d.end()
		if string(got) != in || len(v.violations) > 0 || d.syntax != nil {
			t.Errorf("%s: got %s, %v, %v", in, got, v.violations, d.syntax)
		}
	}
}

// In the validate-only path strings alias the input, except those decoded
// through the scratch buffer (escapes, non-ASCII), which must be copied.
func TestAliasedStringsStayIntact(t *testing.T) {
	in := []byte(`{"plain":"abc","esc\u0061ped":"x\ny","caf\u00e9":"\u00e9t\u00e9","last":"zz"}`)
	var v Validator
	var got any
	if err := decodeDoc(in, &v, true, func(d *Decoder) { got = d.KeptValue(nil) }); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("got %s, want %s", gb, wb)
	}
}

func TestLongStringsDecodedOneAfterAnother(t *testing.T) {
	long := strings.Repeat(`text\n`, 400)
	in := []byte(`["` + long + `","short","` + long + `x","plain"]`)
	var want []string
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	for _, alias := range []bool{false, true} {
		var v Validator
		var got []string
		err := decodeMode(in, &v, false, alias, func(d *Decoder) {
			first := true
			d.OpenArray(nil)
			for d.NextItem(&first) {
				s, _ := d.String(nil)
				got = append(got, s)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("alias %v: %d strings, want %d", alias, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("alias %v: string %d: got %.30q…, want %.30q…", alias, i, got[i], want[i])
			}
		}
	}
}

func TestCloneAnySharesNothing(t *testing.T) {
	orig := map[string]any{"a": []any{map[string]any{"b": "c"}, 1.0}, "raw": json.RawMessage(`{}`), "bytes": []byte{1}}
	c := CloneObject(orig)
	c["a"].([]any)[0].(map[string]any)["b"] = "changed"
	c["raw"].(json.RawMessage)[0] = '['
	c["bytes"].([]byte)[0] = 9
	if orig["a"].([]any)[0].(map[string]any)["b"] != "c" || string(orig["raw"].(json.RawMessage)) != "{}" || orig["bytes"].([]byte)[0] != 1 {
		t.Fatalf("the original changed: %v", orig)
	}
	if CloneObject(nil) != nil || CloneAny(nil) != nil || CloneAny("s") != "s" {
		t.Fatal("nil or scalar clones")
	}
}

func TestMemberNullMeansNotSet(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		required bool
		null     bool
		want     string // the violations, or "" for none
	}{
		{name: "null on an optional member is consumed", data: `null`, null: true},
		{name: "null on a required member is a violation", data: `null`, required: true, null: true, want: "/m type must not be null"},
		{name: "a value is left to read", data: ` "x"`, required: true},
		{name: "a broken literal is a syntax error", data: `nul`, null: true, want: "syntax"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Validator
			d := Decoder{data: []byte(c.data), v: &v}
			p := Path{key: "m", index: -1}
			var seen uint64
			null := d.Member(&seen, 1<<3, &p, c.required)
			got := ""
			for _, x := range v.violations {
				got += x.Pointer + " " + x.Rule + " " + x.Message
			}
			if d.syntax != nil {
				got = "syntax"
			}
			if null != c.null || got != c.want || seen != 1<<3 {
				t.Fatalf("Member = %v, violations %q, seen %b; want %v, %q", null, got, seen, c.null, c.want)
			}
			if !null && d.Peek() != '"' {
				t.Fatal("Member consumed a value that is not null")
			}
		})
	}
}

func TestCheckErrorInfo(t *testing.T) {
	info := func(fields string) string {
		return `{"@type":"type.googleapis.com/google.rpc.ErrorInfo"` + fields + `}`
	}
	cases := []struct {
		name, data string
		code       int64
		reasons    string
		want       string // the violations, "pointer rule;" each
	}{
		{"well formed", `[` + info(`,"reason":"B","domain":"a2a-protocol.org","metadata":{"k":"v"}`) + `]`, -32003, "A B", ""},
		{"a code outside the A2A range is not checked", `[]`, -32602, "", ""},
		{"the object form is not checked", `{"a2a_error":"x"}`, -32003, "A", ""},
		{"no ErrorInfo in the array", `[{"@type":"other"}]`, -32001, "A", "/d errorInfo;"},
		{"a reason of another code", `[` + info(`,"reason":"C","domain":"a2a-protocol.org"`) + `]`, -32001, "A B", "/d/0/reason enum;"},
		{"any reason for a code without a token", `[` + info(`,"reason":"NEW","domain":"a2a-protocol.org"`) + `]`, -32050, "", ""},
		{"an empty reason", `[` + info(`,"reason":"","domain":"a2a-protocol.org"`) + `]`, -32050, "", "/d/0/reason minLength;"},
		{"no reason, another domain", `[` + info(`,"domain":"example.com"`) + `]`, -32001, "A", "/d/0/reason required;/d/0/domain const;"},
		{"metadata that is not strings", `[` + info(`,"reason":"A","domain":"a2a-protocol.org","metadata":{"n":1}`) + `]`, -32001, "A", "/d/0/metadata/n type;"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var data any
			if err := json.Unmarshal([]byte(c.data), &data); err != nil {
				t.Fatal(err)
			}
			var v Validator
			p := Path{key: "d", index: -1}
			CheckErrorInfo(&v, &p, c.code, data, c.reasons)
			got := ""
			for _, x := range v.violations {
				got += x.Pointer + " " + x.Rule + ";"
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// A reader with another way to answer can have the decoder stop early:
// past the item bound on a bounded array (only there), and at the first
// violation recorded (before the next member or item).
func TestDecoderStopsWhereTheReaderSays(t *testing.T) {
	readItems := func(bounded bool) func(d *Decoder) {
		return func(d *Decoder) {
			open := d.Array
			if bounded {
				open = d.BoundedArray
			}
			it := open(nil)
			for it.Next(d) {
				d.Skip()
			}
		}
	}
	readObject := func(d *Decoder) {
		d.OpenObject(nil)
		for first := true; ; {
			k, ok := d.NextKey(&first)
			if !ok {
				return
			}
			p := Path{key: string(k), index: -1}
			d.String(&p)
		}
	}
	cases := []struct {
		name     string
		doc      string
		bound    int
		stop     bool
		read     func(d *Decoder)
		stopped  bool
		violated bool
	}{
		{"bounded array within the bound", `[1,2,3]`, 3, false, readItems(true), false, false},
		{"bounded array past the bound", `[1,2,3,4]`, 3, false, readItems(true), true, false},
		{"no bound set", `[1,2,3,4]`, 0, false, readItems(true), false, false},
		{"an array the schema does not bound", `[1,2,3,4]`, 3, false, readItems(false), false, false},
		{"a violation read on without stopping", `{"a":1,"b":"x"}`, 0, false, readObject, false, true},
		{"a violation stops the reading", `{"a":1,"b":"x"}`, 0, true, readObject, true, true},
		{"no violation, nothing stops", `{"a":"x","b":"y"}`, 0, true, readObject, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v Validator
			err := decodeMode([]byte(c.doc), &v, true, false, func(d *Decoder) {
				d.BoundItems(c.bound)
				if c.stop {
					d.StopAtViolation()
				}
				c.read(d)
			})
			if (err != nil) != c.stopped {
				t.Errorf("reading stopped: %v (%v), want %v", err != nil, err, c.stopped)
			}
			if !v.empty() != c.violated {
				t.Errorf("violations recorded: %v, want %v", !v.empty(), c.violated)
			}
		})
	}
}

// TestPlainUntilFindsTheFirstByteThatNeedsAttention puts each byte value at
// each offset of texts long enough to cross the sixteen-byte (vector),
// 32-byte and 8-byte steps, starting the scan at several offsets, and
// checks plainUntil, and the word scan alone (the whole scan where there is
// no vector one), against a byte-by-byte reading: the first byte that needs
// escaping or a UTF-8 check is found exactly, or the scan stops within the
// last seven bytes before it.
func TestPlainUntilFindsTheFirstByteThatNeedsAttention(t *testing.T) {
	needs := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	scans := []struct {
		name string
		scan func([]byte, int) int
	}{{"plainUntil", plainUntil}, {"plainUntilWords", plainUntilWords}}
	for _, sc := range scans {
		for _, n := range []int{0, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 71, 100} {
			for at := 0; at <= n; at++ {
				for c := 0; c < 256; c++ {
					b := make([]byte, n)
					for i := range b {
						b[i] = 'a' + byte(i%26)
					}
					if at < n {
						b[at] = byte(c)
					}
					for _, from := range []int{0, 1, 9, 17, 40} {
						if from > n {
							continue
						}
						want := n
						for i := from; i < n; i++ {
							if needs(b[i]) {
								want = i
								break
							}
						}
						got := sc.scan(b, from)
						if got > want || (got < want && (want-got > 7 || got+8 <= n)) {
							t.Fatalf("%s(%q, %d) = %d, first byte needing attention at %d", sc.name, b, from, got, want)
						}
					}
				}
			}
		}
	}
}

// TestShortStringsShareChunksIntact decodes many short strings of every
// kind (plain, escaped, non-ASCII, invalid UTF-8 that grows when replaced,
// keys of a free object) into the decoder's shared chunks, across chunk
// boundaries, and checks every one after the whole document is read, as
// encoding/json reads them: a later string never overwrites an earlier one.
func TestShortStringsShareChunksIntact(t *testing.T) {
	kinds := []string{`plain`, `x\ny\"z`, `caf\u00e9 \u2028`, "\xff\xfe\xfd", `\ud83d\ude00 ok`, ``,
		strings.Repeat(`a`, chunkedMax), strings.Repeat(`\n`, chunkedMax/2) + "\xff", strings.Repeat(`b`, chunkedMax+1)}
	var items []string
	for i := range 400 {
		items = append(items, `"`+kinds[i%len(kinds)]+fmt.Sprint(i)+`"`)
	}
	in := []byte(`[` + strings.Join(items, ",") + `,{"k\u00e9y":"v","k2\n":"w"}]`)
	var want []any
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	for _, alias := range []bool{false, true} {
		var v Validator
		var got []any
		err := decodeMode(in, &v, false, alias, func(d *Decoder) {
			first := true
			d.OpenArray(nil)
			for d.NextItem(&first) {
				if d.Peek() == '{' {
					got = append(got, d.KeptValue(nil))
					continue
				}
				s, _ := d.String(nil)
				got = append(got, s)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Fatalf("alias %v: decoded strings differ from encoding/json's:\n got %.200s\nwant %.200s", alias, gb, wb)
		}
	}
}

// TestExpectedStringsReadAsDecoded decodes long string tokens with and
// without expected strings (Expect): canonical encodings, encoding/json's
// (HTML escapes), other escapes of the same text, invalid bytes, surrogate
// pairs, and one-byte mutations of each. The result and the error are the
// same either way, and a token that decodes to an expected string yields
// that very string (no copy).
func TestExpectedStringsReadAsDecoded(t *testing.T) {
	line := "The depot at Turin <ok> & \"quoted\" \\ tab\t café \u2028 😀 ctrl\x01.\n"
	texts := []string{
		strings.Repeat("plain ascii words ", ExpectMin/18+1),
		strings.Repeat(line, ExpectMin/len(line)+1),
		strings.Repeat("\xff bad bytes ", ExpectMin/12+1),
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for ti, s := range texts {
		canonical := AppendString(nil, s)
		html, _ := json.Marshal(s)
		other := bytes.ReplaceAll(canonical, []byte("a"), []byte(`\u0061`))
		other = bytes.ReplaceAll(other, []byte("😀"), []byte(`\ud83d\ude00`))
		tokens := [][]byte{canonical, html, other}
		for range 60 {
			m := bytes.Clone(canonical)
			const subs = "a\\\"\x01\xffu0"
			m[1+rng.IntN(len(m)-2)] = subs[rng.IntN(len(subs))]
			tokens = append(tokens, m)
		}
		for k, tok := range tokens {
			var vPlain, vExp Validator
			var plain, exp string
			var okPlain, okExp bool
			errPlain := decodeMode(tok, &vPlain, false, false, func(d *Decoder) { plain, okPlain = d.String(nil) })
			errExp := decodeMode(tok, &vExp, false, false, func(d *Decoder) {
				d.Expect([]string{"unrelated", s})
				exp, okExp = d.String(nil)
			})
			if exp != plain || okExp != okPlain || fmt.Sprint(errExp) != fmt.Sprint(errPlain) {
				t.Fatalf("text %d token %d: with Expect %.40q %v %v; without %.40q %v %v", ti, k, exp, okExp, errExp, plain, okPlain, errPlain)
			}
			if exp == s && unsafe.StringData(exp) != unsafe.StringData(s) {
				t.Fatalf("text %d token %d: decoded to the expected string but not read as it", ti, k)
			}
		}
	}
}
