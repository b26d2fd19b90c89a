package jsonsize

import (
	"encoding/base64"

	"github.com/a2abind/a2abind/generated/a2a"
)

// PlainTask is about the length of t's encoding, counting its strings as
// if none needed an escape, from its nArts-th artifact and nHist-th
// message on; -1 when t holds free JSON values (metadata, data parts),
// whose length it does not count. It reads no string's bytes: at a few
// hundred bytes, scanning strings for what JSON escapes costs about what
// encoding them does, so a small value is sized (or told small) by
// PlainTask and a large one by Task.
func PlainTask(t *a2a.Task, nArts, nHist int) int {
	if t.Metadata != nil {
		return -1
	}
	n := 64 + len(t.ID) + len(t.ContextID)
	if st := t.Status; st != nil {
		n += 48 + len(st.State) + len(st.Timestamp)
		if st.Message != nil {
			m := PlainMessage(st.Message)
			if m < 0 {
				return -1
			}
			n += m
		}
	}
	for i := nArts; i < len(t.Artifacts); i++ {
		a := &t.Artifacts[i]
		if a.Metadata != nil {
			return -1
		}
		p := plainPartsSize(a.Parts)
		if p < 0 {
			return -1
		}
		n += 64 + len(a.ArtifactID) + len(a.Name) + len(a.Description) + p + plainStringsSize(a.Extensions)
	}
	for i := nHist; i < len(t.History); i++ {
		m := PlainMessage(&t.History[i])
		if m < 0 {
			return -1
		}
		n += m
	}
	return n
}

// PlainMessage is PlainTask for a message.
func PlainMessage(m *a2a.Message) int {
	if m.Metadata != nil {
		return -1
	}
	p := plainPartsSize(m.Parts)
	if p < 0 {
		return -1
	}
	return 96 + len(m.MessageID) + len(m.ContextID) + len(m.TaskID) + len(m.Role) + p +
		plainStringsSize(m.Extensions) + plainStringsSize(m.ReferenceTaskIDs)
}

// plainPartsSize is PlainTask for a list of parts.
func plainPartsSize(ps []a2a.Part) int {
	n := 2
	for i := range ps {
		p := &ps[i]
		if p.Metadata != nil {
			return -1
		}
		n += 32 + len(p.Filename) + len(p.MediaType)
		switch c := p.Content.(type) {
		case a2a.PartText:
			n += len(c)
		case a2a.PartURL:
			n += len(c)
		case a2a.PartRaw:
			n += base64.StdEncoding.EncodedLen(len(c))
		default:
			return -1
		}
	}
	return n
}

// plainStringsSize is PlainTask for a list of strings.
func plainStringsSize(list []string) int {
	n := 32
	for _, s := range list {
		n += len(s) + 3
	}
	return n
}
