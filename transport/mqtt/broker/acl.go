package broker

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Authorization: the rules derived from the A2A identity, and the ACL
// file that widens (or, with deny, narrows) them. docs/protocol.md §13
// states them for operators; the package documentation says how they are
// enforced.

// op is what a client wants to do with a topic or filter.
type op uint8

const (
	// opSubscribe: a SUBSCRIBE filter, possibly with wildcards, not shared.
	opSubscribe op = iota
	// opSubscribeShared: the filter of a $share/{group}/... subscription.
	opSubscribeShared
	// opRead: the delivery of a message on a topic to a subscriber.
	opRead
	// opWrite: a PUBLISH (or a Will) on a topic.
	opWrite
)

func (o op) reads() bool { return o != opWrite }

// identity is a Client ID of the profile's form {org_id}/{unit_id}/{agent_id}.
type identity struct {
	org, unit, agent string
}

// parseIdentity splits a Client ID; ok is false unless it has exactly
// three levels that are valid identifiers (docs/protocol.md §1.1).
func parseIdentity(clientID string) (id identity, ok bool) {
	org, rest, ok1 := strings.Cut(clientID, "/")
	unit, agent, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || !mqttbind.ValidIdentifier(org) || !mqttbind.ValidIdentifier(unit) || !mqttbind.ValidIdentifier(agent) {
		return identity{}, false
	}
	return identity{org, unit, agent}, true
}

// a2aKinds are the topic kinds after the root ({root}/{kind}/...,
// docs/protocol.md §1.2).
const (
	kindDiscovery = "discovery"
	kindRequest   = "request"
	kindReply     = "reply"
	kindEvent     = "event"
)

// splitA2A splits a topic or filter {root}/{kind}/{org}/{unit}/{tail} under
// root whose first levels, up to the unit, are literal; tail is the rest
// (not empty). A topic or filter under any other root is no A2A topic of
// this broker (docs/protocol.md §1.5): ok is false.
func splitA2A(root mqttbind.Root, f string) (kind, org, unit, tail string, ok bool) {
	rest, ok := root.Relative(f)
	if !ok {
		return "", "", "", "", false
	}
	var ok1, ok2, ok3 bool
	kind, rest, ok1 = strings.Cut(rest, "/")
	org, rest, ok2 = strings.Cut(rest, "/")
	unit, tail, ok3 = strings.Cut(rest, "/")
	if !ok1 || !ok2 || !ok3 || tail == "" || isWildcard(kind) || isWildcard(org) || isWildcard(unit) {
		return "", "", "", "", false
	}
	return kind, org, unit, tail, true
}

func isWildcard(level string) bool { return level == "+" || level == "#" }

// identityAllows applies the rules derived from the identity to a topic or
// filter f, under the topic root root (docs/protocol.md §13.2, §1.5; {root}
// is $a2a/v1 in the profile). A client {org}/{unit}/{agent}:
//
//   - publishes its own card and Will ({root}/discovery/{org}/{unit}/{agent}),
//     requests to any agent or pool of its unit ({root}/request/{org}/{unit}/+
//     and .../pool/+), replies to any requester of its unit
//     ({root}/reply/{org}/{unit}/+/+) and its own events
//     ({root}/event/{org}/{unit}/{agent});
//   - subscribes to its own request topic, its own reply tree
//     ({root}/reply/{org}/{unit}/{agent}/#), the discovery and event topics
//     of its unit (.../+ or one agent), and the pools of its unit only
//     through a shared subscription;
//   - receives what those subscriptions match.
//
// A filter is allowed only when every topic it matches is: # and {root}/#,
// and any filter with a wildcard above the unit level, are refused. That
// holds under a root without $ too, where # does match A2A topics (MQTT v5
// §4.7.2 sets apart only topics beginning with $).
func identityAllows(root mqttbind.Root, id identity, f string, o op) bool {
	kind, org, unit, tail, ok := splitA2A(root, f)
	if !ok || org != id.org || unit != id.unit {
		return false
	}
	var patterns []string
	switch {
	case o == opWrite && kind == kindDiscovery, o == opWrite && kind == kindEvent:
		patterns = []string{id.agent}
	case o == opWrite && kind == kindRequest:
		patterns = []string{"+", "pool/+"}
	case o == opWrite && kind == kindReply:
		patterns = []string{"+/+"}
	case kind == kindRequest && o == opSubscribe:
		patterns = []string{id.agent}
	case kind == kindRequest: // shared subscription or delivery
		patterns = []string{id.agent, "pool/+"}
	case kind == kindReply:
		// {agent}/#: the agent's own reply topics, at any depth below.
		level, _, _ := strings.Cut(tail, "/")
		return level == id.agent && level != "#" && level != "+"
	case kind == kindDiscovery, kind == kindEvent:
		patterns = []string{"+"}
	}
	for _, p := range patterns {
		if covers(p, tail) {
			return true
		}
	}
	return false
}

// covers reports whether every topic that filter f matches is matched by
// filter p (for a topic name f: whether p matches it), with MQTT v5 §4.7
// semantics: + is one level, # the rest (the parent level included), and a
// wildcard at the first level never matches a topic starting with $
// (§4.7.2).
func covers(p, f string) bool {
	if strings.HasPrefix(f, "$") && (strings.HasPrefix(p, "+") || strings.HasPrefix(p, "#")) {
		return false
	}
	for {
		pl, prest, pmore := strings.Cut(p, "/")
		fl, frest, fmore := strings.Cut(f, "/")
		switch {
		case pl == "#":
			return true
		case fl == "#":
			return false // f goes any depth, p does not
		case pl != "+" && pl != fl:
			return false // also f's + under a literal level of p
		}
		switch {
		case !pmore && !fmore:
			return true
		case !fmore:
			return prest == "#" // p/# matches p
		case !pmore:
			return false
		}
		p, f = prest, frest
	}
}

// validFilter reports whether f is a well-formed topic filter: + and #
// alone in their level, # last (MQTT v5 §4.7.1).
func validFilter(f string) bool {
	if f == "" {
		return false
	}
	for rest, more := f, true; more; {
		var level string
		level, rest, more = strings.Cut(rest, "/")
		if strings.ContainsAny(level, "+#") && level != "+" && level != "#" {
			return false
		}
		if level == "#" && more {
			return false
		}
	}
	return true
}

// splitShared splits $share/{group}/{filter}; ok is false for any other
// filter.
func splitShared(f string) (filter string, ok bool) {
	rest, ok := strings.CutPrefix(f, "$share/")
	if !ok {
		return f, false
	}
	_, filter, ok = strings.Cut(rest, "/")
	return filter, ok && filter != ""
}

// aclAccess is what an ACL line grants; aclDeny denies.
type aclAccess uint8

const (
	aclDeny  aclAccess = 0
	aclRead  aclAccess = 1
	aclWrite aclAccess = 2
)

// aclRule is a topic or pattern line of an ACL file.
type aclRule struct {
	filter string // %c and %u not yet replaced in a pattern
	access aclAccess
	// literal is, for a pattern line, the start of its filter up to the
	// first %, + or #: every topic or filter it covers, once %c and %u are
	// replaced, begins with it.
	literal string
}

// aclFile is a parsed ACL file: mosquitto's acl_file syntax, the subset
// docs/protocol.md §13.3 lists, plus clientid lines.
type aclFile struct {
	users     map[string][]aclRule // topic lines under "user NAME"
	patterns  []aclRule            // pattern lines, for every client
	clientIDs map[string][]string  // clientid lines under "user NAME"
}

// readACLFile reads and parses an ACL file.
func readACLFile(path string) (*aclFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("broker: ACL file: %w", err)
	}
	a, err := parseACL(string(data))
	if err != nil {
		return nil, fmt.Errorf("broker: ACL file %s: %w", path, err)
	}
	return a, nil
}

// parseACL parses an ACL file:
//
//	# comment
//	user NAME
//	topic [read|write|readwrite|deny] FILTER
//	pattern [read|write|readwrite|deny] FILTER   (%c Client ID, %u user name)
//	clientid ID                                   (a2abind only; ID may end with *)
//
// As in mosquitto, topic lines apply to the user named by the user line
// above them (lines before any user line are for anonymous clients, which
// this broker refuses, so they grant nothing), pattern lines apply to every
// client wherever they stand, a missing access means readwrite, and
// anything else is an error.
func parseACL(data string) (*aclFile, error) {
	a := &aclFile{users: make(map[string][]aclRule), clientIDs: make(map[string][]string)}
	user, anonymous := "", true
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimRightFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
		if strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimLeft(line, " ")
		if line == "" {
			continue
		}
		keyword, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimLeft(rest, " ")
		switch keyword {
		case "user":
			name := trimBlanks(rest)
			if name == "" {
				return nil, fmt.Errorf("line %d: user without a name", i+1)
			}
			user, anonymous = name, false
		case "topic", "pattern":
			r, err := parseACLRule(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			switch {
			case keyword == "pattern":
				r.literal = r.filter
				if i := strings.IndexAny(r.filter, "%+#"); i >= 0 {
					r.literal = r.filter[:i]
				}
				a.patterns = append(a.patterns, r)
			case !anonymous:
				a.users[user] = append(a.users[user], r)
			}
		case "clientid":
			id := trimBlanks(rest)
			if anonymous {
				return nil, fmt.Errorf("line %d: clientid before any user line", i+1)
			}
			if id == "" || strings.ContainsAny(strings.TrimSuffix(id, "*"), "*+#") {
				return nil, fmt.Errorf("line %d: clientid wants a Client ID, or a prefix ending with *", i+1)
			}
			a.clientIDs[user] = append(a.clientIDs[user], id)
		default:
			return nil, fmt.Errorf("line %d: unknown keyword %q (want user, topic, pattern or clientid)", i+1, keyword)
		}
	}
	return a, nil
}

// parseACLRule parses "[read|write|readwrite|deny] FILTER".
func parseACLRule(s string) (aclRule, error) {
	first, rest, _ := strings.Cut(s, " ")
	rest = trimBlanks(rest)
	r := aclRule{access: aclRead | aclWrite, filter: rest}
	switch first {
	case "read":
		r.access = aclRead
	case "write":
		r.access = aclWrite
	case "readwrite":
	case "deny":
		r.access = aclDeny
	default:
		if rest != "" {
			return aclRule{}, fmt.Errorf("access %q is not read, write, readwrite or deny", first)
		}
	}
	if rest == "" { // "topic FILTER", or mosquitto's "topic read" (a topic named read)
		r.access, r.filter = aclRead|aclWrite, first
	}
	if !validFilter(r.filter) {
		return aclRule{}, fmt.Errorf("invalid topic filter %q", r.filter)
	}
	return r, nil
}

// mayUseClientID reports whether user's clientid lines allow clientID.
func (a *aclFile) mayUseClientID(user, clientID string) bool {
	if a == nil {
		return false
	}
	for _, id := range a.clientIDs[user] {
		if prefix, ok := strings.CutSuffix(id, "*"); ok {
			if strings.HasPrefix(clientID, prefix) {
				return true
			}
		} else if id == clientID {
			return true
		}
	}
	return false
}

// decide returns whether the file denies or grants o on f for the client.
// A deny line decides when it covers f (for a subscription: the whole
// filter; a subscription only partly denied is granted, and the denied
// topics are never delivered); a grant when its filter covers f. Patterns
// are skipped for a user name or Client ID holding + or # (as mosquitto
// does).
func (a *aclFile) decide(user, clientID, f string, o op) (denied, granted bool) {
	if a == nil {
		return false, false
	}
	want := aclWrite
	if o.reads() {
		want = aclRead
	}
	check := func(r aclRule) {
		if !covers(r.filter, f) {
			return
		}
		if r.access == aclDeny {
			denied = true
		} else if r.access&want != 0 {
			granted = true
		}
	}
	for _, r := range a.users[user] {
		check(r)
	}
	if !strings.ContainsAny(user, "+#") && !strings.ContainsAny(clientID, "+#") {
		for _, r := range a.patterns {
			// A line that can neither deny nor grant o, or whose filter
			// cannot cover f whatever %c and %u become, is not expanded.
			if r.access != aclDeny && r.access&want == 0 || !strings.HasPrefix(f, r.literal) {
				continue
			}
			check(aclRule{filter: expandPattern(r.filter, clientID, user), access: r.access})
		}
	}
	return denied, granted
}

// expandPattern replaces %c in a pattern line's filter by the Client ID and
// %u by the user name, left to right, as mosquitto does; a filter without
// either is returned as is, without building a string.
func expandPattern(filter, clientID, user string) string {
	i := strings.IndexByte(filter, '%')
	if i < 0 {
		return filter
	}
	var b strings.Builder
	b.Grow(len(filter) + len(clientID) + len(user))
	b.WriteString(filter[:i])
	for ; i < len(filter); i++ {
		c := filter[i]
		if c == '%' && i+1 < len(filter) {
			switch filter[i+1] {
			case 'c':
				b.WriteString(clientID)
				i++
				continue
			case 'u':
				b.WriteString(user)
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// policy decides what an authenticated client may do: the identity rules
// under the topic root (Config.Root) and the ACL file (nil without one).
type policy struct {
	root mqttbind.Root
	file *aclFile
}

// allows reports whether the client (user, clientID) may do o on f, a
// topic name or (for subscriptions, without $share/{group}/) a filter;
// byFile is true when only the ACL file grants it. A deny line of the file
// wins over every grant.
func (p *policy) allows(user, clientID, f string, o op) (ok, byFile bool) {
	denied, fileGrant := p.file.decide(user, clientID, f, o)
	if denied {
		return false, false
	}
	if id, isAgent := parseIdentity(clientID); isAgent && identityAllows(p.root, id, f, o) {
		return true, false
	}
	return fileGrant, fileGrant
}

// MosquittoACL returns a mosquitto 2.0 acl_file that gives the listed
// users the identity rules of this broker (docs/protocol.md §13.4), under
// the profile's topic root $a2a/v1: MosquittoACLUnder of the zero
// mqttbind.Root.
func MosquittoACL(users []string) (string, error) {
	return MosquittoACLUnder(mqttbind.Root{}, users)
}

// MosquittoACLUnder returns a mosquitto 2.0 acl_file that gives the listed
// users the identity rules of this broker under the topic root root
// (docs/protocol.md §13.4, §1.5), for use with password_file,
// allow_anonymous false and use_username_as_clientid true (so that each
// user's Client ID is its user name). The rules on the client's own topics
// are pattern lines with %c; the rules on its unit are topic lines under
// each user (mosquitto cannot substitute a part of the Client ID). Two
// rules cannot be said in mosquitto's file and are left out: the pools of
// a unit (mosquitto cannot tell a shared subscription from a plain one,
// and 2.0.11 does not deliver $-prefixed topics to shared subscriptions
// anyway), and the checks of the payload and the status properties
// (mosquitto reads neither). A user whose name is not an
// {org_id}/{unit_id}/{agent_id} Client ID gets a comment instead of rules.
// Under a root other than the profile's, the file says so in a comment.
func MosquittoACLUnder(root mqttbind.Root, users []string) (string, error) {
	r := root.String()
	var b strings.Builder
	b.WriteString("# mosquitto acl_file: the A2A identity rules of a2abind's embedded broker (docs/protocol.md §13.4).\n" +
		"# Use with: password_file, allow_anonymous false, use_username_as_clientid true.\n")
	if !root.IsDefault() {
		fmt.Fprintf(&b, "# Topic root %s, not the profile's %s (docs/protocol.md §1.5): agents and clients must use it too.\n", r, mqttbind.DefaultRoot)
	}
	fmt.Fprintf(&b, "pattern write %[1]s/discovery/%%c\n"+
		"pattern write %[1]s/event/%%c\n"+
		"pattern read %[1]s/request/%%c\n"+
		"pattern read %[1]s/reply/%%c/#\n", r)
	for _, u := range users {
		if strings.ContainsAny(u, "\n\r") {
			return "", errors.New("broker: a user name with a line break")
		}
		id, ok := parseIdentity(u)
		if !ok {
			fmt.Fprintf(&b, "# %s is not an {org_id}/{unit_id}/{agent_id} Client ID: no rules\n", u)
			continue
		}
		unit := id.org + "/" + id.unit
		fmt.Fprintf(&b, "user %s\n", u)
		fmt.Fprintf(&b, "topic read %s/discovery/%s/+\n", r, unit)
		fmt.Fprintf(&b, "topic read %s/event/%s/+\n", r, unit)
		fmt.Fprintf(&b, "topic write %s/request/%s/+\n", r, unit)
		fmt.Fprintf(&b, "topic write %s/request/%s/pool/+\n", r, unit)
		fmt.Fprintf(&b, "topic write %s/reply/%s/+/+\n", r, unit)
	}
	return b.String(), nil
}
