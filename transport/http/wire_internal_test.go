package http

import (
	"mime"
	"net/http"
	"testing"
)

// mediaType reads a reply's Content-Type as mime.ParseMediaType does,
// whatever the value: the two a Handler sends without parsing, the others
// (parameters, case, spaces, malformed, absent) through it.
func TestMediaTypeAgreesWithParseMediaType(t *testing.T) {
	cases := []struct {
		name   string
		values []string // nil: no Content-Type header
		want   string
	}{
		{"the handler's JSON", []string{"application/json"}, "application/json"},
		{"the handler's event stream", []string{"text/event-stream"}, "text/event-stream"},
		{"JSON with a charset", []string{"application/json; charset=utf-8"}, "application/json"},
		{"an event stream with a charset", []string{"text/event-stream;charset=UTF-8"}, "text/event-stream"},
		{"upper case", []string{"Application/JSON"}, "application/json"},
		{"spaces around", []string{" application/json "}, "application/json"},
		{"a trailing semicolon", []string{"application/json;"}, "application/json"},
		{"a bad parameter", []string{"application/json; charset"}, "application/json"},
		{"no subtype", []string{"application"}, "application"},
		{"not a media type", []string{"application/js on"}, ""},
		{"empty", []string{""}, ""},
		{"absent", nil, ""},
		{"two values, the first counts", []string{"text/plain", "application/json"}, "text/plain"},
		{"something else", []string{"text/html; charset=utf-8"}, "text/html"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.values != nil {
				h["Content-Type"] = tc.values
			}
			old, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
			got := mediaType(h)
			if got != old || got != tc.want {
				t.Fatalf("mediaType %q, mime.ParseMediaType %q, want %q", got, old, tc.want)
			}
		})
	}
}

// The large buffers' classes: a class's capacity holds the size asked for,
// is at most an eighth larger (past 64 KiB), and a buffer of that capacity
// goes back to the same class; buffers of other capacities, and sizes past
// 16 MiB, are not pooled.
func TestBigBufferClasses(t *testing.T) {
	cases := []struct {
		name string
		n    int
	}{
		{"just past 64 KiB", 64<<10 + 1},
		{"72 KiB exactly", 72 << 10},
		{"72 KiB and a byte", 72<<10 + 1},
		{"100 KB", 100_000},
		{"a 1 MB text's request body", 1_010_137},
		{"1 MiB exactly", 1 << 20},
		{"1 MiB and a byte", 1<<20 + 1},
		{"4 MiB and a byte (the default body limit's)", 4<<20 + 1},
		{"16 MiB exactly", 16 << 20},
	}
	seen := map[int]int{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, size := bigClass(tc.n)
			if c < 0 || c >= len(bigPools) {
				t.Fatalf("class %d out of range", c)
			}
			if size < tc.n || size-tc.n > tc.n/8 {
				t.Fatalf("capacity %d for %d bytes", size, tc.n)
			}
			if c2, size2 := bigClass(size); c2 != c || size2 != size {
				t.Fatalf("a buffer of %d goes to class %d (%d), taken from class %d", size, c2, size2, c)
			}
			if prev, ok := seen[c]; ok && prev != size {
				t.Fatalf("class %d holds capacities %d and %d", c, prev, size)
			}
			seen[c] = size
			b := getBig(tc.n)
			if len(b) != 0 || cap(b) < tc.n {
				t.Fatalf("getBig(%d): len %d cap %d", tc.n, len(b), cap(b))
			}
		})
	}
	t.Run("past 16 MiB: a buffer of its own, not pooled", func(t *testing.T) {
		b := getBig(16<<20 + 1)
		if cap(b) != 16<<20+1 {
			t.Fatalf("cap %d", cap(b))
		}
		putBig(b) // ignored: no class holds it
	})
	t.Run("a capacity that is no class's is not pooled", func(t *testing.T) {
		c, size := bigClass(100_000)
		putBig(make([]byte, 0, size-1))
		for range 3 {
			if p, _ := bigPools[c].Get().(*[]byte); p != nil && cap(*p) != size {
				t.Fatalf("class %d handed out capacity %d", c, cap(*p))
			}
		}
	})
}

// Serve hands the endpoint's path to the handler without the mux only for
// a pattern the mux matches by equality alone.
func TestPlainPath(t *testing.T) {
	cases := []struct {
		pattern string
		plain   bool
	}{
		{"/a2a", true},
		{"/agents/a2a", true},
		{"/", false},
		{"/a2a/", false},
		{"/a/../a2a", false},
		{"/a//b", false},
		{"/./a2a", false},
		{"/{tenant}/a2a", false},
		{"/a2a/{$}", false},
		{"POST /a2a", false},
		{"example.com/a2a", false},
		{"/a%2Fb", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := plainPath(tc.pattern); got != tc.plain {
			t.Errorf("plainPath(%q) = %v, want %v", tc.pattern, got, tc.plain)
		}
	}
}
