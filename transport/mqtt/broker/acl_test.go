package broker

import (
	"strings"
	"testing"
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
// topic by topic and filter by filter (docs/protocol.md §13.2).
func TestIdentityRules(t *testing.T) {
	id, ok := parseIdentity("acme/lab/echo")
	if !ok {
		t.Fatal("acme/lab/echo is not an identity")
	}
	for _, c := range []struct {
		f    string
		o    op
		want bool
	}{
		{"$a2a/v1/discovery/acme/lab/echo", opWrite, true},
		{"$a2a/v1/discovery/acme/lab/other", opWrite, false},
		{"$a2a/v1/discovery/acme/lab/echo/x", opWrite, false},
		{"$a2a/v1/request/acme/lab/other", opWrite, true},
		{"$a2a/v1/request/acme/lab/pool/p", opWrite, true},
		{"$a2a/v1/request/other/lab/x", opWrite, false},
		{"$a2a/v1/reply/acme/lab/req/abc", opWrite, true},
		{"$a2a/v1/reply/acme/lab/req", opWrite, false},
		{"$a2a/v1/event/acme/lab/echo", opWrite, true},
		{"$a2a/v1/event/acme/lab/other", opWrite, false},
		{"$a2a/v2/request/acme/lab/echo", opWrite, false},

		{"$a2a/v1/request/acme/lab/echo", opSubscribe, true},
		{"$a2a/v1/request/acme/lab/echo", opRead, true},
		{"$a2a/v1/request/acme/lab/other", opSubscribe, false},
		{"$a2a/v1/request/acme/lab/+", opSubscribe, false},
		{"$a2a/v1/request/acme/lab/pool/p", opSubscribe, false},
		{"$a2a/v1/request/acme/lab/pool/p", opSubscribeShared, true},
		{"$a2a/v1/request/acme/lab/pool/+", opSubscribeShared, true},
		{"$a2a/v1/request/acme/lab/pool/#", opSubscribeShared, false},
		{"$a2a/v1/request/acme/lab/pool/p", opRead, true},
		{"$a2a/v1/reply/acme/lab/echo/#", opSubscribe, true},
		{"$a2a/v1/reply/acme/lab/echo/x", opRead, true},
		{"$a2a/v1/reply/acme/lab/req/x", opRead, false},
		{"$a2a/v1/discovery/acme/lab/+", opSubscribe, true},
		{"$a2a/v1/discovery/acme/lab/other", opSubscribe, true},
		{"$a2a/v1/discovery/acme/lab/#", opSubscribe, false},
		{"$a2a/v1/discovery/acme/+/x", opSubscribe, false},
		{"$a2a/v1/event/acme/lab/+", opSubscribe, true},
		{"$a2a/#", opSubscribe, false},
		{"$a2a/v1/+/acme/lab/echo", opSubscribe, false},
	} {
		if got := identityAllows(id, c.f, c.o); got != c.want {
			t.Errorf("identityAllows(%s, %d) = %v, want %v", c.f, c.o, got, c.want)
		}
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
	// The file is one this package parses too.
	if _, err := parseACL(got); err != nil {
		t.Errorf("parseACL(MosquittoACL): %v", err)
	}
	if _, err := MosquittoACL([]string{"a\nuser b"}); err == nil {
		t.Errorf("a user name with a line break: no error")
	}
}
