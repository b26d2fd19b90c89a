package http

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSSEReader reads event streams as the Server-Sent Events standard
// says: data lines joined by newlines, any line end, comments and other
// fields ignored, events without data skipped, an event cut by the end of
// the stream dropped.
func TestSSEReader(t *testing.T) {
	cases := []struct {
		name   string
		stream string
		want   []string
	}{
		{"one event", "data: {\"a\":1}\n\n", []string{`{"a":1}`}},
		{"two events", "data: one\n\ndata: two\n\n", []string{"one", "two"}},
		{"no space after the colon", "data:x\n\n", []string{"x"}},
		{"only the first space is dropped", "data:  x\n\n", []string{" x"}},
		{"CRLF line ends", "data: one\r\n\r\ndata: two\r\n\r\n", []string{"one", "two"}},
		{"CR line ends", "data: one\r\rdata: two\r\r", []string{"one", "two"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comments and other fields ignored", ": keep-alive\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", []string{"x"}},
		{"an event without data is skipped", "event: ping\n\ndata: x\n\n", []string{"x"}},
		{"blank lines between events", "\n\n\ndata: x\n\n\n", []string{"x"}},
		{"an event cut by the end is dropped", "data: x\n\ndata: cut", []string{"x"}},
		{"an event missing its blank line is dropped", "data: x\n\ndata: y\n", []string{"x"}},
		{"a field name alone is an empty value", "data\n\n", []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read: line ends split across reads still count once.
			for _, r := range []io.Reader{strings.NewReader(tc.stream), iotest.OneByteReader(strings.NewReader(tc.stream))} {
				sr := newSSEReader(r, 1<<20)
				var got []string
				for {
					data, err := sr.next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(data))
				}
				if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
					t.Fatalf("events %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestSSEReaderBound: an event or a line longer than the limit is an
// error naming it, not a buffer that grows without end.
func TestSSEReaderBound(t *testing.T) {
	for _, stream := range []string{
		"data: " + strings.Repeat("x", 100) + "\n\n",
		"data: " + strings.Repeat("x", 40) + "\ndata: " + strings.Repeat("y", 40) + "\n\n",
		": " + strings.Repeat("c", 200),
	} {
		sr := newSSEReader(strings.NewReader(stream), 64)
		_, err := sr.next()
		if !errors.Is(err, errTooLarge) || !strings.Contains(err.Error(), "64 bytes") {
			t.Fatalf("error %v, want errTooLarge naming the 64-byte limit", err)
		}
	}
}
