package uuidv4

import (
	"regexp"
	"testing"

	"github.com/google/uuid"
)

var canonical = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestNewMakesDistinctVersion4UUIDs draws more UUIDs than one read of the
// random source serves: every one is canonical, version 4, variant RFC
// 9562, parses with google/uuid, and none repeats.
func TestNewMakesDistinctVersion4UUIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := range 5 * perRead {
		s := New()
		if !canonical.MatchString(s) {
			t.Fatalf("UUID %d: %q is not a canonical version 4 UUID", i, s)
		}
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("UUID %d: %q: parse %v, version %d, variant %v", i, s, err, u.Version(), u.Variant())
		}
		if seen[s] {
			t.Fatalf("UUID %d: %q repeats", i, s)
		}
		seen[s] = true
	}
}

// TestNewIsSafeForConcurrentUse: goroutines drawing at once never get the
// same UUID (run with -race).
func TestNewIsSafeForConcurrentUse(t *testing.T) {
	const workers, each = 8, 2 * perRead
	out := make(chan []string, workers)
	for range workers {
		go func() {
			var ids []string
			for range each {
				ids = append(ids, New())
			}
			out <- ids
		}()
	}
	seen := map[string]bool{}
	for range workers {
		for _, s := range <-out {
			if seen[s] {
				t.Fatalf("%q drawn twice", s)
			}
			seen[s] = true
		}
	}
}

func BenchmarkNew(b *testing.B) {
	b.Run("uuidv4", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = New()
		}
	})
	b.Run("google-uuid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = uuid.NewString()
		}
	})
}

func TestWellFormed(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"version 4 lower case", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77", true},
		{"version 7 upper case", "01890A5D-AC96-774B-BCCE-B302099A8057", true},
		{"nil UUID", "00000000-0000-0000-0000-000000000000", true},
		{"empty", "", false},
		{"no hyphens", "0b6cf2a14f1e4d7b9a553f1c2d9e8a77", false},
		{"braces", "{0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a7}", false},
		{"urn form", "urn:uuid:0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77", false},
		{"hyphen misplaced", "0b6cf2a14-f1e-4d7b-9a55-3f1c2d9e8a77", false},
		{"not hexadecimal", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a7g", false},
		{"one character short", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a7", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := WellFormed(c.in); got != c.want {
				t.Errorf("WellFormed(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
	for i := 0; i < 100; i++ {
		if s := New(); !WellFormed(s) {
			t.Fatalf("New() = %q is not well formed", s)
		}
	}
}

// TestPairMakesTwoDistinctVersion4UUIDs draws pairs across more than one
// read of the random source: both of each are canonical, version 4,
// variant RFC 9562, read back by google/uuid as the same UUID, and none
// repeats, within a pair or across pairs and New's.
func TestPairMakesTwoDistinctVersion4UUIDs(t *testing.T) {
	seen := map[string]bool{}
	check := func(i int, s string) {
		t.Helper()
		if !canonical.MatchString(s) {
			t.Fatalf("pair %d: %q is not a canonical version 4 UUID", i, s)
		}
		u, err := uuid.Parse(s)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != s {
			t.Fatalf("pair %d: %q: parse %v, version %d, variant %v, read back %q", i, s, err, u.Version(), u.Variant(), u.String())
		}
		if seen[s] {
			t.Fatalf("pair %d: %q repeats", i, s)
		}
		seen[s] = true
	}
	for i := range 3 * perRead {
		a, b := Pair()
		check(i, a)
		check(i, b)
		check(i, New())
	}
}
