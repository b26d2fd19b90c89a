package demo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
)

// StateOf names a status's state.
func StateOf(s *a2a.TaskStatus) string {
	if s == nil {
		return "(no status)"
	}
	return string(s.State)
}

// PartsText renders parts in one line.
func PartsText(parts []a2a.Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch c := p.Content.(type) {
		case a2a.PartText:
			b.WriteString(string(c))
		case a2a.PartURL:
			b.WriteString("<" + string(c) + ">")
		case a2a.PartRaw:
			fmt.Fprintf(&b, "<%d bytes>", len(c))
		case a2a.PartData:
			j, _ := json.Marshal(c.Value)
			b.Write(j)
		}
	}
	return b.String()
}
