package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

// limitsToCompare are the limits the two paths are compared under: none,
// and parts bounds small enough for the corpus to cross (the defaults
// bound the corpus as no limit does).
var limitsToCompare = []Limits{{}, {MaxParts: 1}, {MaxParts: 3}}

// outcome is what a decoding returns.
type outcome struct {
	req *Request
	id  json.RawMessage
	err *a2a.Error
}

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("id %s, error %s %q data %v", o.id, o.err.Token, o.err.Message, o.err.Data)
	}
	return fmt.Sprintf("id %s, %s %#v", o.id, o.req.Method, o.req.Params)
}

// compareFastWithSlow decodes in with decodeFast and with
// decodeRequestSlow under l, fails t when the fast path answers otherwise
// than the slow path (decodeRequest answers with the slow path when the
// fast one does not), and reports whether the fast path answered and
// whether the request was accepted.
func compareFastWithSlow(t *testing.T, in []byte, l Limits) (fast, accepted bool) {
	t.Helper()
	var got, want outcome
	got.req, got.id, got.err, fast = decodeFast(in, l)
	want.req, want.id, want.err = decodeRequestSlow(in, l)
	if fast && !reflect.DeepEqual(got, want) {
		t.Errorf("limits %+v, request %.300s\n  decodeFast:        %v\n  decodeRequestSlow: %v", l, in, got, want)
	}
	return fast, want.err == nil
}

// envelope builds a request of the members given, in their order: each
// is a name and its JSON value.
func envelope(members ...string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(members); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", members[i], members[i+1])
	}
	b.WriteByte('}')
	return []byte(b.String())
}

const (
	sendParams = `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	fullParams = `{"tenant":"acme","message":{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_AGENT",` +
		`"parts":[{"text":"t","metadata":{"k":[1,{"a":null}]},"filename":"f","mediaType":"text/plain"},{"raw":"AAEC"},{"url":"https://e.x/f"},{"data":{"a":1}}],` +
		`"metadata":{"trace":{"id":"abc"}},"extensions":["https://example.com/ext/v1"],"referenceTaskIds":["task-0"]},` +
		`"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":10,"returnImmediately":true,` +
		`"taskPushNotificationConfig":{"url":"https://client.example.com/hook","token":"tok","authentication":{"scheme":"Bearer","credentials":"s"}}},` +
		`"metadata":{"k":"v"}}`
)

// TestFastPathAnswersAsTheSlowPath shows, case by case, which requests the
// one-pass decoding takes and which it hands to the slow path, and that
// both give the same request, id and error, under every limit.
func TestFastPathAnswersAsTheSlowPath(t *testing.T) {
	parts := func(n int, part string) string {
		return `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[` + strings.TrimSuffix(strings.Repeat(part+",", n), ",") + `]}}`
	}
	cases := []struct {
		name string
		in   []byte
		l    Limits
		fast bool // the fast path answers, under l
	}{
		{"the plain shape", envelope("jsonrpc", `"2.0"`, "id", `"r1"`, "method", `"SendMessage"`, "params", sendParams), DefaultLimits(), true},
		{"every member of the params and the message", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendStreamingMessage"`, "params", fullParams), DefaultLimits(), true},
		{"id and jsonrpc after the params", envelope("method", `"SendMessage"`, "params", sendParams, "id", `7`, "jsonrpc", `"2.0"`), DefaultLimits(), true},
		{"a notification", envelope("jsonrpc", `"2.0"`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), true},
		{"a null id", envelope("jsonrpc", `"2.0"`, "id", `null`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), true},
		{"no params", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"ListTasks"`), DefaultLimits(), true},
		{"no params where some are required: the same error", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"GetTask"`), DefaultLimits(), true},
		{"white space everywhere", []byte(" {\n \"jsonrpc\" : \"2.0\" ,\t\"id\":1 , \"method\":\"GetTask\", \"params\" : { \"id\" : \"t\" } }\r\n"), DefaultLimits(), true},
		{"escaped member names", []byte(`{"json\u0072pc":"2.0","id":1,"method":"GetTask","par\u0061ms":{"i\u0064":"t"}}`), DefaultLimits(), true},
		{"unknown members in the params", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", `{"x":[1,{"y":2}],"message":{"kind":"message","messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","z":1}]}}`), DefaultLimits(), true},
		{"optional members null in the params", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", `{"tenant":null,"configuration":null,"message":{"messageId":"m1","contextId":null,"referenceTaskIds":null,"role":"ROLE_USER","parts":[{"text":"hi"}]}}`), DefaultLimits(), true},
		{"as many parts as the bound", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(3, `{"text":"a"}`)), Limits{MaxParts: 3}, true},
		{"many parts and no bound", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(3000, `{"text":"a"}`)), Limits{}, true},

		{"one part more than the bound", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(4, `{"text":"a"}`)), Limits{MaxParts: 3}, false},
		{"invalid parts past the bound", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(5000, `{}`)), DefaultLimits(), false},
		{"parts of another kind past the bound", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(5000, `1`)), DefaultLimits(), false},
		{"parts twice", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a"}],"parts":[{"text":"a"},{"text":"b"}]}}`), Limits{MaxParts: 1}, false},
		{"params before the method", envelope("jsonrpc", `"2.0"`, "id", `1`, "params", `{"id":"t"}`, "method", `"GetTask"`), DefaultLimits(), false},
		{"an unknown envelope member", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"GetTask"`, "params", `{"id":"t"}`, "extra", `{"a":[1]}`), DefaultLimits(), false},
		{"a repeated envelope member", envelope("jsonrpc", `"2.0"`, "id", `1`, "id", `2`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"the method twice", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"GetTask"`, "method", `"ListTasks"`), DefaultLimits(), false},
		{"an unknown method", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"tasks/get"`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"another version", envelope("jsonrpc", `"1.0"`, "id", `1`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"no version", envelope("id", `1`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"no method", envelope("jsonrpc", `"2.0"`, "id", `1`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"an id of another kind", envelope("jsonrpc", `"2.0"`, "id", `{}`, "method", `"GetTask"`, "params", `{"id":"t"}`), DefaultLimits(), false},
		{"null params", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"ListTasks"`, "params", `null`), DefaultLimits(), false},
		{"params of another kind", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"GetTask"`, "params", `[]`), DefaultLimits(), false},
		{"params breaking the schema", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"ListTasks"`, "params", `{"pageSize":0}`), DefaultLimits(), false},
		{"a member twice deep in the params", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","metadata":{"k":1,"k":2}}]}}`), DefaultLimits(), false},
		{"a part of the wrong kind before many", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", parts(500, `{"text":1}`)), DefaultLimits(), false},
		{"reference ids of the wrong kind", envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"referenceTaskIds":[1,2,3]}}`), DefaultLimits(), false},
		{"a syntax error in the params", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t",}}`), DefaultLimits(), false},
		{"a syntax error after the params", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}} x`), DefaultLimits(), false},
		{"not an object", []byte(`[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]`), DefaultLimits(), false},
		{"nothing", nil, DefaultLimits(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, l := range append(limitsToCompare, DefaultLimits(), tc.l) {
				compareFastWithSlow(t, tc.in, l)
				var got, want outcome
				got.req, got.id, got.err = decodeRequest(tc.in, l)
				want.req, want.id, want.err = decodeRequestSlow(tc.in, l)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("limits %+v\n  decodeRequest:     %v\n  decodeRequestSlow: %v", l, got, want)
				}
			}
			if fast, _ := compareFastWithSlow(t, tc.in, tc.l); fast != tc.fast {
				t.Errorf("the fast path answered: %v, want %v", fast, tc.fast)
			}
		})
	}
}

// TestFastPathAgreesOnTheCorpus compares the two paths on every file of
// the payload corpus (golden/payloads) taken as a request, on each taken
// as the params of every method, on the messages and parts in SendMessage
// params, and on mutations of the requests and of the SendMessage params
// (members reordered, repeated, removed, added; values replaced by null
// or by values of other kinds; arrays emptied and repeated; the whole cut
// short): the same request, id and error under every limit. Requests built
// in the plain shape that the slow path accepts must be taken by the fast
// path.
func TestFastPathAgreesOnTheCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "golden", "payloads", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join("..", "golden", "payloads", "*", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 300 {
		t.Fatalf("%d files in the corpus", len(files))
	}
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var methodNames []string
	for m := range methods {
		methodNames = append(methodNames, string(m))
	}
	slices.Sort(methodNames)

	var total, fastTotal, accepted int
	check := func(in []byte, plain bool) {
		t.Helper()
		total++
		for _, l := range limitsToCompare {
			fast, ok := compareFastWithSlow(t, in, l)
			if fast {
				fastTotal++
			}
			if ok {
				accepted++
			}
			if plain && ok && !fast {
				t.Errorf("limits %+v: a plain request the slow path accepts was handed over: %.300s", l, in)
			}
		}
	}
	// A request of the plain shape around params.
	wrap := func(method string, params []byte) []byte {
		return envelope("jsonrpc", `"2.0"`, "id", `"c1"`, "method", `"`+method+`"`, "params", string(params))
	}
	var sendParamsList [][]byte
	for _, f := range files {
		data := read(f)
		kind := filepath.Base(filepath.Dir(f))
		if kind == "valid" || kind == "invalid" {
			kind = filepath.Base(filepath.Dir(filepath.Dir(f)))
		}
		check(data, false)
		for _, m := range methodNames {
			if len(data) > mutationBytes && m != "SendMessage" && m != "GetTask" {
				continue // the deeply nested documents, under two methods
			}
			check(wrap(m, data), json.Valid(data) && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")))
		}
		switch kind {
		case "JSONRPCRequest":
			for _, v := range mutations(data) {
				check(v, false)
			}
		case "SendMessageRequest":
			sendParamsList = append(sendParamsList, data)
		case "Message":
			sendParamsList = append(sendParamsList, []byte(`{"message":`+string(data)+`}`))
		case "Part":
			sendParamsList = append(sendParamsList, []byte(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[`+string(data)+`,{"text":"x"}]}}`))
		}
	}
	sendParamsList = append(sendParamsList, []byte(sendParams), []byte(fullParams))
	for _, params := range sendParamsList {
		for _, m := range []string{"SendMessage", "SendStreamingMessage"} {
			req := wrap(m, params)
			check(req, true)
			if len(params) > mutationBytes {
				continue
			}
			for _, v := range envelopeMutations(m, params) {
				check(v, false)
			}
		}
		for _, v := range mutations(params) {
			check(wrap("SendMessage", v), false)
		}
	}
	t.Logf("%d requests, each under %d limits: the fast path answered %d times, %d accepted by both", total, len(limitsToCompare), fastTotal, accepted)
	if fastTotal == 0 || accepted == 0 {
		t.Fatal("the fast path answered nothing")
	}
}

// envelopeMutations returns requests of method around params in other
// shapes: members in every order, each left out, each repeated, one
// unknown added, each member's value of another kind, and the whole cut
// short at several places.
func envelopeMutations(method string, params []byte) [][]byte {
	members := [][2]string{{"jsonrpc", `"2.0"`}, {"id", `5`}, {"method", `"` + method + `"`}, {"params", string(params)}}
	build := func(list [][2]string) []byte {
		var flat []string
		for _, m := range list {
			flat = append(flat, m[0], m[1])
		}
		return envelope(flat...)
	}
	var out [][]byte
	for _, order := range permutations(len(members)) {
		list := make([][2]string, len(members))
		for i, j := range order {
			list[i] = members[j]
		}
		out = append(out, build(list))
	}
	others := []string{`null`, `1`, `-0.5e3`, `"2.0"`, `"x"`, `true`, `[]`, `{}`, `"SendMessage"`, `"GetTask"`}
	for i := range members {
		out = append(out, build(slices.Delete(slices.Clone(members), i, i+1)))
		out = append(out, build(slices.Insert(slices.Clone(members), i, members[i])))
		out = append(out, build(slices.Insert(slices.Clone(members), i, [2]string{"extra", `{"a":[1]}`})))
		for _, o := range others {
			list := slices.Clone(members)
			list[i][1] = o
			out = append(out, build(list))
		}
	}
	whole := build(members)
	for _, cut := range []int{1, len(whole) / 3, len(whole) / 2, len(whole) - 2, len(whole) - 1} {
		out = append(out, whole[:cut])
	}
	return out
}

// permutations returns every order of 0…n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			out = append(out, slices.Insert(slices.Clone(p), i, n-1))
		}
	}
	return out
}

// Mutations are made of documents up to mutationBytes, down to
// mutationDepth: the corpus nests some to the decoder's depth limit.
const mutationBytes, mutationDepth = 4 << 10, 8

// node is a JSON value read with its members in order.
type node struct {
	kind  byte // '{', '[' or 'v' (a scalar, raw)
	keys  []string
	items []*node
	raw   string
}

// parseNode reads a JSON document into a node, or nil when it is not JSON.
func parseNode(data []byte) *node {
	if !json.Valid(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func() *node
	read = func() *node {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := tok.(type) {
		case json.Delim:
			n := &node{kind: byte(v)}
			for dec.More() {
				if n.kind == '{' {
					k, _ := dec.Token()
					n.keys = append(n.keys, k.(string))
				}
				n.items = append(n.items, read())
			}
			dec.Token() // the closing delimiter
			return n
		default:
			b, _ := json.Marshal(v)
			return &node{kind: 'v', raw: string(b)}
		}
	}
	return read()
}

// write appends n as JSON to b.
func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case 'v':
		b.WriteString(n.raw)
	case '[':
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.write(b)
		}
		b.WriteByte(']')
	case '{':
		b.WriteByte('{')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.keys[i])
			b.Write(k)
			b.WriteByte(':')
			it.write(b)
		}
		b.WriteByte('}')
	}
}

// clone returns a deep copy of n.
func (n *node) clone() *node {
	c := &node{kind: n.kind, keys: slices.Clone(n.keys), raw: n.raw}
	for _, it := range n.items {
		c.items = append(c.items, it.clone())
	}
	return c
}

// mutations returns variants of the JSON document data, each with one
// change at one value down to mutationDepth: an object's first member
// repeated, a member left out, an unknown member added, the members
// reversed; an array emptied, its first element repeated, its elements
// tripled; a value replaced by null or by a value of another kind. A
// document over mutationBytes has none.
func mutations(data []byte) [][]byte {
	root := parseNode(data)
	if root == nil || len(data) > mutationBytes {
		return nil
	}
	var out [][]byte
	// Each change is made on a copy of the tree, at the value reached by
	// the path of indexes.
	var walk func(n *node, path []int)
	apply := func(path []int, change func(n *node) *node) {
		c := root.clone()
		var parent *node
		at := c
		for _, i := range path {
			parent, at = at, at.items[i]
		}
		repl := change(at)
		if parent == nil {
			c = repl
		} else {
			parent.items[path[len(path)-1]] = repl
		}
		var b bytes.Buffer
		c.write(&b)
		out = append(out, b.Bytes())
	}
	walk = func(n *node, path []int) {
		for _, v := range []string{`null`, `0`, `1.5`, `"ROLE_USER"`, `true`, `[]`, `{}`, `[{}]`} {
			apply(path, func(*node) *node { return &node{kind: 'v', raw: v} })
		}
		switch n.kind {
		case '{':
			if len(n.items) > 0 {
				apply(path, func(n *node) *node {
					n.keys = append(n.keys, n.keys[0])
					n.items = append(n.items, n.items[0].clone())
					return n
				})
			}
			for i := range n.items {
				apply(path, func(n *node) *node {
					n.keys = slices.Delete(n.keys, i, i+1)
					n.items = slices.Delete(n.items, i, i+1)
					return n
				})
			}
			apply(path, func(n *node) *node {
				n.keys = append([]string{"unknownMember"}, n.keys...)
				n.items = append([]*node{{kind: 'v', raw: `{"a":[1,{"b":null}]}`}}, n.items...)
				return n
			})
			apply(path, func(n *node) *node {
				slices.Reverse(n.keys)
				slices.Reverse(n.items)
				return n
			})
		case '[':
			apply(path, func(n *node) *node { n.items = nil; return n })
			if len(n.items) > 0 {
				apply(path, func(n *node) *node {
					n.items = append(n.items, n.items[0].clone())
					return n
				})
				apply(path, func(n *node) *node {
					items := n.items
					for range 2 {
						for _, it := range items {
							n.items = append(n.items, it.clone())
						}
					}
					return n
				})
			}
		}
		if len(path) == mutationDepth {
			return
		}
		for i, it := range n.items {
			walk(it, append(slices.Clone(path), i))
		}
	}
	walk(root, nil)
	return out
}

// TestFastPathReadsEveryMember: a SendMessage request with every member
// of the params and of the message set is taken by the fast path and
// decodes as Parse<Type>JSON decodes it.
func TestFastPathReadsEveryMember(t *testing.T) {
	req, _, e, ok := decodeFast(envelope("jsonrpc", `"2.0"`, "id", `1`, "method", `"SendMessage"`, "params", fullParams), DefaultLimits())
	if !ok || e != nil {
		t.Fatalf("the fast path refused every member set: %v %v", ok, e)
	}
	want, err := a2a.ParseSendMessageRequestJSON([]byte(fullParams))
	if err != nil {
		t.Fatal(err)
	}
	got := req.Params.(*a2a.SendMessageRequest)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path:\n  %#v\ngenerated:\n  %#v", got, want)
	}
	for _, v := range []reflect.Value{reflect.ValueOf(*got), reflect.ValueOf(*got.Message)} {
		for j := range v.NumField() {
			if v.Field(j).IsZero() {
				t.Errorf("%s.%s is not set by the case: it must hold every member", v.Type().Name(), v.Type().Field(j).Name)
			}
		}
	}
}

// TestFastPathKeepsNothingOfTheBytes shows that a request the fast path
// decodes holds copies, not views of the payload: a transport may reuse
// the payload's buffer as soon as DecodeRequest returns.
func TestFastPathKeepsNothingOfTheBytes(t *testing.T) {
	long := strings.Repeat("a line of text\\n", 200) // escaped, and past the decoder's own-buffer length
	cases := []struct {
		name string
		in   string
	}{
		{"every member of a message", string(envelope("jsonrpc", `"2.0"`, "id", `"r-1"`, "method", `"SendMessage"`, "params", fullParams))},
		{"a long text with escapes", string(envelope("jsonrpc", `"2.0"`, "id", `12`, "method", `"SendMessage"`, "params",
			`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"`+long+`"},{"text":"`+strings.Repeat("plain", 400)+`"}]}}`))},
		{"another method", string(envelope("jsonrpc", `"2.0"`, "id", `"g"`, "method", `"GetTask"`, "params", `{"id":"t-1","historyLength":3}`))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			req, id, e, ok := decodeFast(in, DefaultLimits())
			if !ok || e != nil {
				t.Fatalf("the fast path did not take it: %v %v", ok, e)
			}
			for i := range in {
				in[i] = 'x'
			}
			want, wantID, _ := decodeRequestSlow([]byte(tc.in), DefaultLimits())
			if !reflect.DeepEqual(req, want) || !bytes.Equal(id, wantID) {
				t.Fatalf("after the payload was overwritten:\n  %v\nwant\n  %v", outcome{req, id, nil}, outcome{want, wantID, nil})
			}
		})
	}
}
