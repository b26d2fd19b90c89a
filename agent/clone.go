package agent

import (
	"slices"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// cloneTask returns a copy of t that shares nothing a caller may change
// with it: what a2a.Task.Clone makes, with the task's messages, artifacts
// and parts copied into the arrays that hold them rather than each
// allocated on its own and copied again (a task of one message of one
// part costs three allocations instead of six). Strings are shared: they
// cannot be changed.
func cloneTask(t a2a.Task) a2a.Task {
	c := t
	if t.Status != nil {
		st := *t.Status
		if t.Status.Message != nil {
			m := new(a2a.Message)
			cloneMessageInto(m, t.Status.Message)
			st.Message = m
		}
		c.Status = &st
	}
	if t.Artifacts != nil {
		c.Artifacts = make([]a2a.Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			cloneArtifactInto(&c.Artifacts[i], &t.Artifacts[i])
		}
	}
	if t.History != nil {
		c.History = make([]a2a.Message, len(t.History))
		for i := range t.History {
			cloneMessageInto(&c.History[i], &t.History[i])
		}
	}
	c.Metadata = runtime.CloneObject(t.Metadata)
	return c
}

// cloneMessageInto sets *dst to a copy of *src that shares nothing a
// caller may change with it (a2a.Message.Clone).
func cloneMessageInto(dst, src *a2a.Message) {
	*dst = *src
	dst.Parts = cloneParts(src.Parts)
	dst.Metadata = runtime.CloneObject(src.Metadata)
	dst.Extensions = slices.Clone(src.Extensions)
	dst.ReferenceTaskIDs = slices.Clone(src.ReferenceTaskIDs)
}

// cloneArtifactInto sets *dst to a copy of *src that shares nothing a
// caller may change with it (a2a.Artifact.Clone).
func cloneArtifactInto(dst, src *a2a.Artifact) {
	*dst = *src
	dst.Parts = cloneParts(src.Parts)
	dst.Metadata = runtime.CloneObject(src.Metadata)
	dst.Extensions = slices.Clone(src.Extensions)
}

// cloneParts returns a copy of ps that shares nothing a caller may change
// with it (a2a.Part.Clone of each; nil for nil).
func cloneParts(ps []a2a.Part) []a2a.Part {
	if ps == nil {
		return nil
	}
	out := make([]a2a.Part, len(ps))
	for i := range ps {
		p := &out[i]
		*p = ps[i]
		p.Metadata = runtime.CloneObject(ps[i].Metadata)
		switch c := ps[i].Content.(type) {
		case a2a.PartRaw:
			p.Content = a2a.PartRaw(slices.Clone(c))
		case a2a.PartData:
			p.Content = a2a.PartData{Value: runtime.CloneAny(c.Value)}
		}
	}
	return out
}
