package gen

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// seqSamples are strings near the patterns below: valid ones and their
// mutations are where a reading that steps wrong would show.
var seqSamples = []string{
	"2026-12-01T10:00:00Z", "2026-12-01T10:00:00.5Z", "2026-12-01T10:00:00.123456789Z",
	"ab-12", "abc123", "a1", "x.y", "AZ09_z", "--", "v1.2.3",
}

func TestSeqPatternsAgreeWithRegexp(t *testing.T) {
	recognised := []string{
		`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?Z$`,
		`^[a-z]{1,3}-[0-9]+$`,
		`^[a-z]*[0-9]*$`,
		`^a?b$`,
		`^v[0-9]+(\.[0-9]+)?-[a-z]+$`,
		`^[A-Z][A-Za-z0-9_]{0,7}$`,
		`^x\.y$`,
		`^(ab)[0-9]{2,}$`,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "0123456789-:.TZabvxyAB_ z\xff"
	for _, p := range recognised {
		sp, ok := parseSeqPattern(p)
		if !ok {
			t.Fatalf("%s not recognised", p)
		}
		re := regexp.MustCompile(p)
		check := func(s string) {
			if sp.match(s) != re.MatchString(s) {
				t.Fatalf("%s on %q: sequence %v, regexp %v", p, s, sp.match(s), re.MatchString(s))
			}
		}
		for _, s := range seqSamples {
			check(s)
			for i := range len(s) + 1 {
				check(s[:i])
				check(s[:i] + s[min(i+1, len(s)):])
				for _, c := range []byte("0Z.-a9:") {
					check(s[:i] + string(c) + s[i:])
					if i < len(s) {
						check(s[:i] + string(c) + s[i+1:])
					}
				}
			}
		}
		for n := range 30000 {
			var b strings.Builder
			for range n % 24 {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			check(b.String())
		}
	}
}

func TestSeqPatternsLeftToRegexp(t *testing.T) {
	for _, p := range []string{
		`^[0-9]{1,3}[0-9]$`, // a variable count followed by its own class
		`^a*a$`,             // the same
		`^(ab)?a$`,          // an optional group followed by what it begins with
		`^(a?b)?c$`,         // a group that may begin with what follows it
		`^a|b$`,             // alternation
		`^[a-z]+`,           // unanchored end
		`[a-z]+$`,           // unanchored start
		`^é+$`,              // not ASCII
		`^[^a]+$`,           // negated: reaches past ASCII
		`^(?i)ab$`,          // case folding
		`^a+?$`,             // non-greedy
		`^((ab)?c)?$`,       // nested groups
		`^.+$`,              // any character
	} {
		if _, ok := parseSeqPattern(p); ok {
			t.Errorf("%s recognised; it must go to regexp", p)
		}
	}
}
