package http

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// sseReader reads the events of a Server-Sent Events stream (HTML Living
// Standard, "Server-sent events", §9.2.6 interpreting an event stream): the
// data lines of an event joined by newlines; comments and the event, id and
// retry fields are read and ignored. An event holding no data is skipped.
// Lines may end in LF, CRLF or CR.
type sseReader struct {
	r     *bufio.Reader
	limit int64
	data  []byte
	line  []byte
	// lastCR: the previous line ended in CR, so a LF that follows it is
	// the same line end.
	lastCR bool
}

func newSSEReader(r io.Reader, limit int64) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10), limit: limit}
}

// next returns the data of the next event; the slice is valid until the
// next call. io.EOF ends a stream cleanly (an event cut short by the end of
// the stream is dropped, as the standard says).
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if hasData {
			s.data = append(s.data, '\n')
		}
		if int64(len(s.data)+len(value)) > s.limit {
			return nil, fmt.Errorf("%w: an event of more than %d bytes (ClientConfig.MaxReplyBytes)", errTooLarge, s.limit)
		}
		s.data = append(s.data, value...)
		hasData = true
	}
}

// readLine returns the next line without its end; io.EOF when the stream
// ends, including after a last line with no end. It scans what the buffer
// holds for the end of the line, so a long line costs one copy.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		if _, err := s.r.Peek(1); err != nil {
			return nil, err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.lastCR {
			s.lastCR = false
			if buf[0] == '\n' {
				s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if int64(len(s.line)+len(buf)) > s.limit+16 {
				return nil, fmt.Errorf("%w: a line of more than %d bytes (ClientConfig.MaxReplyBytes)", errTooLarge, s.limit)
			}
			s.line = append(s.line, buf...)
			s.r.Discard(len(buf))
			continue
		}
		if int64(len(s.line)+i) > s.limit+16 {
			return nil, fmt.Errorf("%w: a line of more than %d bytes (ClientConfig.MaxReplyBytes)", errTooLarge, s.limit)
		}
		s.line = append(s.line, buf[:i]...)
		s.lastCR = buf[i] == '\r'
		s.r.Discard(i + 1)
		return s.line, nil
	}
}
