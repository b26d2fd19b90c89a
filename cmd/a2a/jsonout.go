package main

// --json for the commands that print lines as they go (agent, broker,
// webhook, demo, db, passwd): one JSON object per line on stdout instead of
// each text line. Errors are reported by report (exit.go).

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// jsonHelp is what every command's -h says of --json.
const jsonHelp = `
--json: stdout holds one JSON object per line and nothing else (every a2a
command takes --json); an error is one object {"error":{"token","code",
"message"}}, the exit status unchanged, its message on stderr too.
`

// lineOut prints a command's lines: one line of text each, or with --json
// one JSON object each. It is safe for concurrent use: each line is one
// Write.
type lineOut struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

// emit prints text, or obj as JSON with --json.
func (o *lineOut) emit(text string, obj any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.json {
		writeJSONLine(o.w, obj)
		return
	}
	io.WriteString(o.w, text+"\n")
}

// writeJSONLine prints v as one line of JSON (<, > and & as they are).
func writeJSONLine(w io.Writer, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Every value printed is made of strings, numbers, bools and JSON
	// already checked: Encode does not fail on them.
	enc.Encode(v)
	w.Write(b.Bytes())
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}
