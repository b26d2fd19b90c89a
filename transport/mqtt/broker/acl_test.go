package broker

import (
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		p, f string
		want bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/+", true},
		{"a/+", "a/b/c", false},
		{"a/+", "a", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"a/#", "a/+/#", true},
		{"a/b", "a/+", false},
		{"a/+", "a/#", false},
		{"a/+/c", "a/+/c", true},
		{"#", "a/b", true},
		{"#", "$a2a/v1/x", false},
		{"+/v1/x", "$a2a/v1/x", false},
		{"$a2a/#", "$a2a/v1/x", true},
		{"#", "a2a/v1/x", true},
		{"+/v1/x", "a2a/v1/x", true},
		{"a//b", "a//b", true},
		{"a/+/b", "a//b", true},
	} {
		if got := covers(c.p, c.f); got != c.want {
			t.Errorf("covers(%q, %q) = %v, want %v", c.p, c.f, got, c.want)
		}
	}
}

func TestValidFilter(t *testing.T) {
	for f, want := range map[string]bool{
		"a/b": true, "a/+/b": true, "#": true, "a/#": true, "+": true,
		"": false, "a/#/b": false, "a+/b": false, "a/b#": false,
	} {
		if got := validFilter(f); got != want {
			t.Errorf("validFilter(%q) = %v, want %v", f, got, want)
		}
	}
}

// TestIdentityRules: the rules derived from the Client ID acme/lab/echo,
// topic by topic and filter by filter (docs/protocol.md §13.2), under the
// profile's root and under roots without $ (§1.5), where # and + at the
// first level match A2A topics: they grant no more, and topics under
// another root, the profile's included, are granted nothing.
func TestIdentityRules(t *testing.T) {
	id, ok := parseIdentity("acme/lab/echo")
	if !ok {
		t.Fatal("acme/lab/echo is not an identity")
	}
	// {root} is the broker's root, {other} another one.
	cases := []struct {
		f    string
		o    op
		want bool
	}{
		{"{root}/discovery/acme/lab/echo", opWrite, true},
		{"{root}/discovery/acme/lab/other", opWrite, false},
		{"{root}/discovery/acme/lab/echo/x", opWrite, false},
		{"{root}/request/acme/lab/other", opWrite, true},
		{"{root}/request/acme/lab/pool/p", opWrite, true},
		{"{root}/request/other/lab/x", opWrite, false},
		{"{root}/reply/acme/lab/req/abc", opWrite, true},
		{"{root}/reply/acme/lab/req", opWrite, false},
		{"{root}/event/acme/lab/echo", opWrite, true},
		{"{root}/event/acme/lab/other", opWrite, false},
		{"$a2a/v2/request/acme/lab/echo", opWrite, false},
		{"{root}0/request/acme/lab/echo", opWrite, false},
		{"{other}/discovery/acme/lab/echo", opWrite, false},
		{"{other}/request/acme/lab/other", opWrite, false},

		{"{root}/request/acme/lab/echo", opSubscribe, true},
		{"{root}/request/acme/lab/echo", opRead, true},
		{"{root}/request/acme/lab/other", opSubscribe, false},
		{"{root}/request/acme/lab/other", opRead, false},
		{"{root}/request/acme/lab/+", opSubscribe, false},
		{"{root}/request/acme/lab/#", opSubscribe, false},
		{"{root}/request/acme/+/echo", opSubscribe, false},
		{"{root}/request/+/lab/echo", opSubscribe, false},
		{"{root}/request/acme/lab/pool/p", opSubscribe, false},
		{"{root}/request/acme/lab/pool/p", opSubscribeShared, true},
		{"{root}/request/acme/lab/pool/+", opSubscribeShared, true},
		{"{root}/request/acme/lab/pool/#", opSubscribeShared, false},
		{"{root}/request/acme/lab/pool/p", opRead, true},
		{"{root}/reply/acme/lab/echo/#", opSubscribe, true},
		{"{root}/reply/acme/lab/echo/x", opRead, true},
		{"{root}/reply/acme/lab/req/x", opRead, false},
		{"{root}/reply/acme/lab/+/#", opSubscribe, false},
		{"{root}/reply/#", opSubscribe, false},
		{"{root}/discovery/acme/lab/+", opSubscribe, true},
		{"{root}/discovery/acme/lab/other", opSubscribe, true},
		{"{root}/discovery/acme/lab/#", opSubscribe, false},
		{"{root}/discovery/acme/+/x", opSubscribe, false},
		{"{root}/event/acme/lab/+", opSubscribe, true},
		{"{root}/#", opSubscribe, false},
		{"{root}/+/acme/lab/echo", opSubscribe, false},
		{"#", opSubscribe, false},
		{"+/#", opSubscribe, false},
		{"a2a/#", opSubscribe, false},
		{"$a2a/#", opSubscribe, false},
		{"+/v1/request/acme/lab/echo", opSubscribe, false},
		{"+/v1/discovery/acme/lab/+", opSubscribe, false},
		{"{other}/request/acme/lab/echo", opSubscribe, false},
		{"{other}/request/acme/lab/echo", opRead, false},
		{"{other}/discovery/acme/lab/+", opSubscribe, false},
	}
	for _, r := range []struct{ root, other string }{
		{mqttbind.DefaultRoot, "a2a/v1"},
		{"a2a/v1", mqttbind.DefaultRoot},
		{"site/a2a/v1", "a2a/v1"},
	} {
		root := mustRoot(t, r.root)
		t.Run("root="+r.root, func(t *testing.T) {
			place := strings.NewReplacer("{root}", r.root, "{other}", r.other)
			for _, c := range cases {
				f := place.Replace(c.f)
				if got := identityAllows(root, id, f, c.o); got != c.want {
					t.Errorf("identityAllows(%s, %d) = %v, want %v", f, c.o, got, c.want)
				}
			}
		})
	}
	for _, bad := range []string{"acme/lab", "acme/lab/echo/x", "acme/lab/e+", "acme//echo", "admin", ""} {
		if _, ok := parseIdentity(bad); ok {
			t.Errorf("parseIdentity(%q) accepted", bad)
		}
	}
}

// TestParseACL: mosquitto's syntax as its acl_file parser reads it.
func TestParseACL(t *testing.T) {
	a, err := parseACL(strings.Join([]string{
		"# a comment",
		"topic read anonymous/only",
		"",
		"user  ops team ",
		"topic read $SYS/#",
		"topic ops/rw",
		"topic read",
		"topic deny ops/secret",
		"pattern write devices/%u/%c",
		"clientid ops/console/*",
		"  user other",
		"topic write x/y",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, clientID, f string
		o                 op
		denied, granted   bool
	}{
		{"ops team", "c", "$SYS/broker/uptime", opRead, false, true},
		{"ops team", "c", "$SYS/broker/uptime", opWrite, false, false},
		{"ops team", "c", "ops/rw", opWrite, false, true},
		{"ops team", "c", "read", opWrite, false, true},
		{"ops team", "c", "ops/secret", opRead, true, false},
		{"ops team", "c", "anonymous/only", opRead, false, false},
		{"other", "o/u/a", "devices/other/o/u/a", opWrite, false, true},
		{"other", "o/u/a", "devices/ops team/o/u/a", opWrite, false, false},
		{"other", "o/u/a", "x/y", opWrite, false, true},
		{"other+", "o/u/a", "devices/other+/o/u/a", opWrite, false, false},
	} {
		denied, granted := a.decide(c.user, c.clientID, c.f, c.o)
		if denied != c.denied || granted != c.granted {
			t.Errorf("decide(%q, %q, %q, %d) = %v, %v; want %v, %v", c.user, c.clientID, c.f, c.o, denied, granted, c.denied, c.granted)
		}
	}
	if !a.mayUseClientID("ops team", "ops/console/7") || a.mayUseClientID("ops team", "ops/other") || a.mayUseClientID("other", "ops/console/7") {
		t.Errorf("clientid lines not applied as written")
	}
}

func TestMosquittoACL(t *testing.T) {
	got, err := MosquittoACL([]string{"acme/lab/echo", "admin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pattern write $a2a/v1/discovery/%c\n",
		"pattern read $a2a/v1/request/%c\n",
		"pattern read $a2a/v1/reply/%c/#\n",
		"user acme/lab/echo\ntopic read $a2a/v1/discovery/acme/lab/+\n",
		"topic write $a2a/v1/request/acme/lab/+\n",
		"topic write $a2a/v1/reply/acme/lab/+/+\n",
		"# admin is not an {org_id}/{unit_id}/{agent_id} Client ID: no rules\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("MosquittoACL lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Topic root") {
		t.Errorf("MosquittoACL names a root under the profile's:\n%s", got)
	}
	// The file is one this package parses too.
	if _, err := parseACL(got); err != nil {
		t.Errorf("parseACL(MosquittoACL): %v", err)
	}
	if _, err := MosquittoACL([]string{"a\nuser b"}); err == nil {
		t.Errorf("a user name with a line break: no error")
	}
}

// TestMosquittoACLUnderRoot: the same rules under a root without $, every
// topic under it and none under the profile's, and a comment saying so.
func TestMosquittoACLUnderRoot(t *testing.T) {
	got, err := MosquittoACLUnder(mustRoot(t, "a2a/v1"), []string{"acme/lab/echo", "admin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Topic root a2a/v1, not the profile's $a2a/v1",
		"pattern write a2a/v1/discovery/%c\n",
		"pattern write a2a/v1/event/%c\n",
		"pattern read a2a/v1/request/%c\n",
		"pattern read a2a/v1/reply/%c/#\n",
		"user acme/lab/echo\ntopic read a2a/v1/discovery/acme/lab/+\n",
		"topic read a2a/v1/event/acme/lab/+\n",
		"topic write a2a/v1/request/acme/lab/+\n",
		"topic write a2a/v1/request/acme/lab/pool/+\n",
		"topic write a2a/v1/reply/acme/lab/+/+\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("MosquittoACLUnder(a2a/v1) lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "pattern ") || strings.HasPrefix(line, "topic ") {
			if strings.Contains(line, "$a2a") {
				t.Errorf("a rule under the profile's root: %q", line)
			}
		}
	}
	if _, err := parseACL(got); err != nil {
		t.Errorf("parseACL(MosquittoACLUnder): %v", err)
	}
	def, err := MosquittoACLUnder(mqttbind.Root{}, []string{"acme/lab/echo", "admin"})
	if want, _ := MosquittoACL([]string{"acme/lab/echo", "admin"}); err != nil || def != want {
		t.Errorf("MosquittoACLUnder(zero Root) differs from MosquittoACL (%v)", err)
	}
}

// TestExpandPatternAsMosquitto: %c and %u of a pattern line are replaced
// as a strings.Replacer of both would, left to right, the replaced text
// never read again; a filter without % comes back as is.
func TestExpandPatternAsMosquitto(t *testing.T) {
	for _, c := range []struct{ name, filter, clientID, user string }{
		{"no placeholder", "$a2a/v1/request/+", "o/u/a", "ops"},
		{"client id", "$a2a/v1/reply/%c/#", "o/u/a", "ops"},
		{"user and client id", "devices/%u/%c", "o/u/a", "ops team"},
		{"both twice", "%c/%u/%c%u", "c", "u"},
		{"values holding placeholders", "x/%c/%u", "%u", "%c"},
		{"unknown placeholder", "x/%d/%%c", "id", "u"},
		{"trailing percent", "x/%", "id", "u"},
		{"empty values", "%c%u/y", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := strings.NewReplacer("%c", c.clientID, "%u", c.user).Replace(c.filter)
			if got := expandPattern(c.filter, c.clientID, c.user); got != want {
				t.Errorf("expandPattern(%q, %q, %q) = %q, want %q", c.filter, c.clientID, c.user, got, want)
			}
		})
	}
}

// TestPatternLinesDecideAsWhenAllExpanded: decide skips a pattern line that
// cannot deny nor grant the operation, or whose literal start is not f's;
// its answers are those of expanding every pattern line, for every
// operation, on topics and filters, with the Client ID and user name at
// any place of the filter.
func TestPatternLinesDecideAsWhenAllExpanded(t *testing.T) {
	a, err := parseACL(strings.Join([]string{
		"pattern write $a2a/v1/discovery/%c",
		"pattern read $a2a/v1/request/%c",
		"pattern read $a2a/v1/reply/%c/#",
		"pattern readwrite %u/inbox",
		"pattern deny $a2a/v1/request/%c/secret",
		"pattern read +/%c/x",
		"pattern write dev%u/%c",
		"pattern read #",
		"pattern deny $SYS/%u",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	// reference is decide as it was: every pattern line expanded.
	reference := func(user, clientID, f string, o op) (denied, granted bool) {
		want := aclWrite
		if o.reads() {
			want = aclRead
		}
		for _, r := range a.patterns {
			if !covers(strings.NewReplacer("%c", clientID, "%u", user).Replace(r.filter), f) {
				continue
			}
			if r.access == aclDeny {
				denied = true
			} else if r.access&want != 0 {
				granted = true
			}
		}
		return denied, granted
	}
	users := []struct{ user, clientID string }{{"ops", "acme/lab/echo"}, {"acme/lab/req", "acme/lab/req"}, {"u", "c"}}
	topics := []string{
		"$a2a/v1/discovery/acme/lab/echo", "$a2a/v1/request/acme/lab/echo", "$a2a/v1/request/acme/lab/echo/secret",
		"$a2a/v1/reply/acme/lab/req/r1", "$a2a/v1/reply/acme/lab/req", "$a2a/v1/reply/+/#", "ops/inbox", "u/inbox", "+/inbox",
		"a/c/x", "a/acme/lab/echo/x", "devops/acme/lab/echo", "devu/c", "dev", "$SYS/ops", "$SYS/u", "#", "anything/else",
	}
	for _, u := range users {
		for _, f := range topics {
			for _, o := range []op{opRead, opWrite, opSubscribe, opSubscribeShared} {
				gd, gg := a.decide(u.user, u.clientID, f, o)
				wd, wg := reference(u.user, u.clientID, f, o)
				if gd != wd || gg != wg {
					t.Errorf("decide(%q, %q, %q, %d) = %v, %v; every line expanded: %v, %v", u.user, u.clientID, f, o, gd, gg, wd, wg)
				}
			}
		}
	}
}
