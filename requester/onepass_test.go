package requester

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
)

// replyDecoders are the result decoders of the Client's operations, by the
// name of the result's type.
var replyDecoders = []struct {
	name      string
	dec       resultDecoder
	streaming bool
}{
	{"SendMessageResponse", decodeSendMessageResponse, false},
	{"StreamResponse", decodeStreamResponse, true},
	{"Task", decodeWith(a2a.ParseTaskJSON), false},
	{"ListTasksResponse", decodeWith(a2a.ParseListTasksResponseJSON), false},
	{"AgentCard", decodeWith(a2a.ParseAgentCardJSON), false},
	{"TaskPushNotificationConfig", decodeWith(a2a.ParseTaskPushNotificationConfigJSON), false},
	{"ListTaskPushNotificationConfigsResponse", decodeWith(a2a.ParseListTaskPushNotificationConfigsResponseJSON), false},
	{"Empty", decodeWith(a2a.ParseEmptyJSON), false},
}

// envelopeForms are the ways a result R is put in a reply: the plain form
// DecodeResult reads, and departures from it that it leaves to the
// two-pass decode. plain marks the forms that read in one pass when R is
// a valid result.
var envelopeForms = []struct {
	name  string
	form  string // R stands for the result
	plain bool
}{
	{"plain", `{"jsonrpc":"2.0","id":1,"result":R}`, true},
	{"string id", `{"jsonrpc":"2.0","id":"r-1","result":R}`, true},
	{"null id", `{"jsonrpc":"2.0","id":null,"result":R}`, true},
	{"fraction id", `{"jsonrpc":"2.0","id":-1.5e3,"result":R}`, true},
	{"id first", `{"id":7,"jsonrpc":"2.0","result":R}`, true},
	{"white space everywhere", " \n{ \"jsonrpc\" :\t\"2.0\" , \"id\" : 1 ,\r\n \"result\" : R } \n", true},
	{"escaped version", `{"jsonrpc":"2\u002e0","id":1,"result":R}`, true},
	{"escaped key", `{"jsonrpc":"2.0","id":1,"r\u0065sult":R}`, true},
	{"result first", `{"result":R,"jsonrpc":"2.0","id":1}`, false},
	{"result before id", `{"jsonrpc":"2.0","result":R,"id":1}`, false},
	{"result before jsonrpc", `{"id":1,"result":R,"jsonrpc":"2.0"}`, false},
	{"jsonrpc twice", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":R}`, false},
	{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"result":R}`, false},
	{"result twice", `{"jsonrpc":"2.0","id":1,"result":R,"result":R}`, false},
	{"result then error", `{"jsonrpc":"2.0","id":1,"result":R,"error":{"code":-32603,"message":"x"}}`, false},
	{"error then result", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"},"result":R}`, false},
	{"result then null error", `{"jsonrpc":"2.0","id":1,"result":R,"error":null}`, false},
	{"no jsonrpc", `{"id":1,"result":R}`, false},
	{"no id", `{"jsonrpc":"2.0","result":R}`, false},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"result":R}`, false},
	{"jsonrpc a number", `{"jsonrpc":2.0,"id":1,"result":R}`, false},
	{"jsonrpc null", `{"jsonrpc":null,"id":1,"result":R}`, false},
	{"id a boolean", `{"jsonrpc":"2.0","id":true,"result":R}`, false},
	{"id an object", `{"jsonrpc":"2.0","id":{"n":1},"result":R}`, false},
	{"id an array", `{"jsonrpc":"2.0","id":[1],"result":R}`, false},
	{"id a bad number", `{"jsonrpc":"2.0","id":-,"result":R}`, false},
	{"unknown member first", `{"x":1,"jsonrpc":"2.0","id":1,"result":R}`, false},
	{"unknown member after the result", `{"jsonrpc":"2.0","id":1,"result":R,"x":{"a":1}}`, false},
	{"unknown member twice", `{"jsonrpc":"2.0","x":1,"x":2,"id":1,"result":R}`, false},
	{"unknown member with a member twice", `{"jsonrpc":"2.0","id":1,"result":R,"x":{"a":1,"a":2}}`, false},
	{"trailing garbage", `{"jsonrpc":"2.0","id":1,"result":R}x`, false},
	{"two documents", `{"jsonrpc":"2.0","id":1,"result":R}{}`, false},
	{"trailing comma", `{"jsonrpc":"2.0","id":1,"result":R,}`, false},
	{"unclosed", `{"jsonrpc":"2.0","id":1,"result":R`, false},
	{"not an object", `[{"jsonrpc":"2.0","id":1,"result":R}]`, false},
}

// resultCorpus returns the results to put in replies: every payload of the
// corpus under golden/payloads whose type a reply carries, valid or not,
// each payload of a2a-go (its departures among them), and a few of every
// JSON kind.
func resultCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{
		"kind/empty object": []byte(`{}`), "kind/null": []byte(`null`), "kind/string": []byte(`"x"`),
		"kind/array": []byte(`[]`), "kind/number": []byte(`1`), "kind/true": []byte(`true`),
	}
	root := filepath.Join("..", "golden", "payloads")
	for _, typ := range []string{"Task", "SendMessageResponse", "StreamResponse", "ListTasksResponse", "AgentCard",
		"TaskPushNotificationConfig", "Message", "TaskStatusUpdateEvent", "TaskArtifactUpdateEvent", "JSONRPCResponse"} {
		for _, verdict := range []string{"valid", "invalid"} {
			files, err := filepath.Glob(filepath.Join(root, typ, verdict, "*.json"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no corpus in %s/%s: %v", typ, verdict, err)
			}
			for _, f := range files {
				out[typ+"/"+verdict+"/"+filepath.Base(f)] = readFile(t, f)
			}
		}
	}
	for _, dir := range []string{"a2a-go", "spec"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no corpus in %s: %v", dir, err)
		}
		for _, f := range files {
			out[dir+"/"+filepath.Base(f)] = readFile(t, f)
		}
	}
	return out
}

func readFile(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// replyCase is a reply payload of the corpus.
type replyCase struct {
	payload []byte
	// plain: the reply is in a plain form, which reads in one pass when its
	// result is valid for the type.
	plain bool
	// only names the one result type to decode the reply for ("" for
	// every type of replyDecoders).
	only string
}

// resultTypeOf returns the result type whose decoder reads the result of
// resultCorpus named name, as far as its name tells (SendMessageResponse
// when it does not).
func resultTypeOf(name string) string {
	for _, d := range replyDecoders {
		if strings.HasPrefix(name, d.name+"/") {
			return d.name
		}
	}
	base := name[strings.LastIndex(name, "/")+1:]
	for prefix, typ := range map[string]string{"task-": "Task", "stream-response-": "StreamResponse", "agent-card": "AgentCard",
		"push-config": "TaskPushNotificationConfig", "list-tasks-response": "ListTasksResponse", "kind/empty": "Empty"} {
		if strings.HasPrefix(base, prefix) || strings.HasPrefix(name, prefix) {
			return typ
		}
	}
	return "SendMessageResponse"
}

// replyCorpus returns the reply payloads by name: every file under
// golden/payloads as it is, and every result of resultCorpus in each
// envelope form, with its own mutations: a member twice at the head of the
// result, and bytes deleted, replaced or inserted at random places. The
// files, the plain form and the random mutations are decoded for every
// result type; the other forms, which only the envelope sets apart, for
// the result's own type.
func replyCorpus(t *testing.T) map[string]replyCase {
	t.Helper()
	replies := map[string]replyCase{}
	root := filepath.Join("..", "golden", "payloads")
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".json") {
			replies["file/"+filepath.ToSlash(path[len(root)+1:])] = replyCase{payload: readFile(t, path)}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(15, 2))
	junk := []byte(`"{}[],:0n\ a-.e`)
	for rname, r := range resultCorpus(t) {
		typ := resultTypeOf(rname)
		results := map[string][]byte{"": r}
		if len(r) > 2 && r[0] == '{' {
			var members map[string]json.RawMessage
			if json.Unmarshal(r, &members) == nil && len(members) > 0 {
				k := slices.Sorted(maps.Keys(members))[0]
				results[" member "+k+" twice"] = []byte(`{"` + k + `":` + string(members[k]) + "," + string(r[1:]))
				results[" unknown member twice"] = []byte(`{"zz":1,"zz":2,` + string(r[1:]))
			}
		}
		// Every form for a result that may be valid; a result known to be
		// invalid, or made so, falls back in any form: the plain one and
		// the two orders are enough for it, and for the payloads nested to
		// the depth limit (whose every reading is slow).
		maybeValid := !strings.Contains(rname, "/invalid/") && len(r) < 10_000
		for mname, res := range results {
			for i, f := range envelopeForms {
				if (!maybeValid || mname != "") && i > 0 && f.name != "id first" && f.name != "result before id" {
					continue
				}
				c := replyCase{payload: []byte(strings.Replace(f.form, "R", string(res), -1)), plain: f.plain && mname == "", only: typ}
				if i == 0 && mname == "" {
					c.only = ""
				}
				replies["wrapped/"+rname+mname+"/"+f.name] = c
			}
		}
		env := []byte(strings.Replace(envelopeForms[0].form, "R", string(r), 1))
		for i := range 3 {
			m := slices.Clone(env)
			at := rng.IntN(len(m))
			switch i {
			case 0:
				m = slices.Delete(m, at, at+1)
			case 1:
				m[at] = junk[rng.IntN(len(junk))]
			case 2:
				m = slices.Insert(m, at, junk[rng.IntN(len(junk))])
			}
			replies[fmt.Sprintf("mutated/%s/%d@%d", rname, i, at)] = replyCase{payload: m}
		}
	}
	return replies
}

// TestOnePassAgreesWithTwoPass decodes every reply of replyCorpus for
// the operations' result types twice: as the Client does, reading plain
// success replies in one pass, and with the one-pass read turned off,
// which is the decode of the envelope then of the result taken out of it,
// with the departures of compat.go. The decoded replies (envelope, value,
// errors and their messages, task id, stream digest and end) and the
// departures counted must be the same; every reply in a plain form whose
// result the two-pass decode reads strictly must have been read in one
// pass, and no other.
func TestOnePassAgreesWithTwoPass(t *testing.T) {
	replies := replyCorpus(t)
	names := slices.Sorted(maps.Keys(replies))
	discard := slog.New(slog.DiscardHandler)
	onePass, fellBack := 0, 0
	for _, d := range replyDecoders {
		// The binding only tells how an error's data reads: both for the
		// replies that may hold one.
		for _, binding := range []jsonrpc.Binding{jsonrpc.BindingMQTT, jsonrpc.BindingHTTP} {
			used := false
			oneDec := d.dec
			oneDec.inPlace = func(p []byte, expect []string) (*jsonrpc.Response, any, bool) {
				resp, v, ok := d.dec.inPlace(p, expect)
				used = ok
				return resp, v, ok
			}
			twoDec := d.dec
			twoDec.inPlace = func([]byte, []string) (*jsonrpc.Response, any, bool) { return nil, nil, false }
			one := &exchange{c: &Client{log: discard}, decode: oneDec, streaming: d.streaming, errors: binding}
			two := &exchange{c: &Client{log: discard}, decode: twoDec, streaming: d.streaming, errors: binding}
			for _, name := range names {
				c := replies[name]
				if c.only != "" && c.only != d.name {
					continue
				}
				if binding == jsonrpc.BindingHTTP && !bytes.Contains(c.payload, []byte(`"error"`)) {
					continue
				}
				used = false
				got := one.decodeReply(&Reply{Payload: slices.Clone(c.payload), Responders: []string{"a"}})
				want := two.decodeReply(&Reply{Payload: slices.Clone(c.payload), Responders: []string{"a"}})
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s result, binding %v: one pass (used %v) and two passes differ on\n%s\none pass:   %s\ntwo passes: %s",
						name, d.name, binding, used, c.payload, describe(got), describe(want))
				}
				if one.c.lenient.Load() != two.c.lenient.Load() {
					t.Fatalf("%s, %s result: departures counted %d in one pass, %d in two", name, d.name, one.c.lenient.Load(), two.c.lenient.Load())
				}
				strict := want.resp != nil && want.resp.Err == nil && want.valueErr == nil && want.value != nil && two.c.lenient.Load() == 0
				if c.plain && strict && !used {
					t.Errorf("%s, %s result: a plain reply with a valid result was not read in one pass:\n%s", name, d.name, c.payload)
				}
				if used && !strict {
					t.Errorf("%s, %s result: read in one pass, but the two-pass decode did not read it strictly:\n%s", name, d.name, c.payload)
				}
				if used {
					onePass++
				} else {
					fellBack++
				}
				// A lenient read leaves the next reply's count apart.
				one.c.lenient.Store(0)
				two.c.lenient.Store(0)
			}
		}
	}
	t.Logf("%d replies read in one pass, %d by the two-pass decode", onePass, fellBack)
	if onePass < 300 || fellBack < 5000 {
		t.Errorf("the corpus exercises too little: %d replies read in one pass, %d by the two-pass decode", onePass, fellBack)
	}
}

// describe prints a decoded reply for a failure message.
func describe(in *inbound) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resp=%+v envErr=%v valueErr=%v taskID=%q final=%v digest=%x", in.resp, in.envErr, in.valueErr, in.taskID, in.final, in.digest[:4])
	if m, ok := in.value.(interface{ MarshalJSON() ([]byte, error) }); ok && !reflect.ValueOf(in.value).IsNil() {
		j, err := m.MarshalJSON()
		fmt.Fprintf(&b, " value=%s %v", j, err)
	} else {
		fmt.Fprintf(&b, " value=%#v", in.value)
	}
	return b.String()
}

// TestOnePassKeepsNothingOfThePayload: a transport may reuse the reply's
// buffer once deliver returns, so a value read in one pass must share no
// byte with it: strings short and long, with and without escapes, raw
// bytes, free JSON and the id.
func TestOnePassKeepsNothingOfThePayload(t *testing.T) {
	long := strings.Repeat("plain text ", 200)
	escaped := strings.Repeat(`line\n\"quoted\" é `, 100)
	reply := `{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T10:00:00Z"},` +
		`"history":[{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` + long + `"},{"text":"` + escaped + `"},{"text":"short"},{"raw":"aGVsbG8="},{"data":{"k":["v",1,true,null]}}],"metadata":{"a":"b"}}],` +
		`"metadata":{"n":{"deep":"x"}}}}}`
	c := &Client{log: slog.New(slog.DiscardHandler)}
	ex := &exchange{c: c, decode: decodeSendMessageResponse, errors: jsonrpc.BindingMQTT}
	payload := []byte(reply)
	if _, _, ok := ex.decode.inPlace(payload, nil); !ok {
		t.Fatalf("the reply is not read in one pass:\n%s", reply)
	}
	got := ex.decodeReply(&Reply{Payload: payload})
	want := ex.decodeReply(&Reply{Payload: []byte(reply)})
	for i := range payload {
		payload[i] = 'x'
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the value read changed with the payload's buffer:\n%s\nwant %s", describe(got), describe(want))
	}
	if got.resp == nil || string(got.resp.ID) != `"req-1"` || got.value == nil || got.taskID != "t-1" {
		t.Fatalf("the reply was not read: %s", describe(got))
	}
}

// TestRepliesReadTheSentTextsAsTheCallersOwn: a SendMessage reply whose
// task holds the message's long texts again (its history) reads them as the
// very strings the caller sent, whatever escapes the responder chose, and
// any other string (an artifact one byte apart, a short text) decoded as
// usual: the value is the one read without expectations.
func TestRepliesReadTheSentTextsAsTheCallersOwn(t *testing.T) {
	sent := strings.Repeat("line one \"quoted\" café\nline two\t", 200)
	short := "short text"
	msg := &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(sent)}, {Content: a2a.PartText(short)}}}
	expect := expectedTexts(&a2a.SendMessageRequest{Message: msg})
	if len(expect) != 1 || expect[0] != sent {
		t.Fatalf("expected texts %q, want the long one only", expect)
	}
	canonical, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.ReplaceAll(canonical, []byte("é"), []byte(`\u00e9`))
	apart := []byte(strings.Replace(string(canonical), "two", "tw0", 1))
	for _, tc := range []struct {
		name       string
		history    []byte
		sameString bool
	}{
		{"the responder's escapes are encoding/json's", canonical, true},
		{"the responder escapes more", other, true},
		{"the history holds another text", apart, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := `{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},` +
				`"history":[{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":` + string(tc.history) + `},{"text":"short text"}]}],` +
				`"artifacts":[{"artifactId":"a-1","parts":[{"text":` + string(apart) + `}]}]}}}`
			c := &Client{log: slog.New(slog.DiscardHandler)}
			with := &exchange{c: c, decode: decodeSendMessageResponse, errors: jsonrpc.BindingMQTT, expect: expect}
			without := &exchange{c: c, decode: decodeSendMessageResponse, errors: jsonrpc.BindingMQTT}
			got := with.decodeReply(&Reply{Payload: []byte(reply)})
			want := without.decodeReply(&Reply{Payload: []byte(reply)})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read with expectations:\n%s\nwithout:\n%s", describe(got), describe(want))
			}
			task := got.value.(*a2a.SendMessageResponse).Payload.(*a2a.Task)
			text := string(task.History[0].Parts[0].Content.(a2a.PartText))
			if same := text == sent && unsafe.StringData(text) == unsafe.StringData(sent); same != tc.sameString {
				t.Fatalf("history text read as the caller's string: %v, want %v", same, tc.sameString)
			}
			art := string(task.Artifacts[0].Parts[0].Content.(a2a.PartText))
			if unsafe.StringData(art) == unsafe.StringData(sent) {
				t.Fatal("the artifact's different text was read as the caller's")
			}
		})
	}
}
