package gen

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// match interprets a class pattern the way the emitted function does.
func (cp classPattern) match(s string) bool {
	if cp.nonEmpty && s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		in := false
		for _, r := range cp.ranges {
			if r[0] <= s[i] && s[i] <= r[1] {
				in = true
			}
		}
		if !in {
			return false
		}
	}
	return true
}

func TestClassPatternsAgreeWithRegexp(t *testing.T) {
	recognised := []string{
		"^[A-Za-z0-9_.-]+$",
		"^[a-z_]+$",
		"^[-a-f0-9]*$",
		"^[a-z0-9-]+$",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range recognised {
		cp, ok := parseClassPattern(p)
		if !ok {
			t.Fatalf("%s not recognised", p)
		}
		re := regexp.MustCompile(p)
		for n := range 20000 {
			b := make([]byte, n%7)
			for i := range b {
				b[i] = byte(rng.IntN(128))
			}
			if s := string(b); cp.match(s) != re.MatchString(s) {
				t.Fatalf("%s on %q: class %v, regexp %v", p, s, cp.match(s), re.MatchString(s))
			}
		}
	}
}

func TestPatternsLeftToRegexp(t *testing.T) {
	for _, p := range []string{
		"^[A-Z][A-Za-z0-9]*$", // two parts
		"^[^/]+$",             // negated
		"^[a-z]{1,8}$",        // counted
		`^[\w]+$`,             // escape
		"[a-z]+",              // unanchored
		"^[a-z-0]+$",          // '-' inside
		"^[z-a]+$",            // reversed range
		"^[]+$",               // empty class
	} {
		if _, ok := parseClassPattern(p); ok {
			t.Errorf("%s recognised; it must go to regexp", p)
		}
	}
}
