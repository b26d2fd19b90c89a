package gen

import (
	"fmt"

	"github.com/a2abind/a2abind/gen/model"
)

// checkModel reports, as an error, a type reference the emitters cannot
// write: a kind without a Go type, a named kind without its type, an array
// or map without its element. The loader builds none of these; the check
// keeps a model built some other way from reaching the emitters, which
// assume it (goType).
func checkModel(m *model.Model) error {
	for _, p := range m.Packages {
		for _, t := range p.Types {
			for _, fd := range t.Fields {
				if err := checkRef(fd.Ref); err != nil {
					return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, fd.JSON, err)
				}
			}
			if t.OneOf != nil {
				for _, mb := range t.OneOf.Members {
					if err := checkRef(mb.Ref); err != nil {
						return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, mb.JSON, err)
					}
				}
			}
		}
	}
	return nil
}

func checkRef(r *model.Ref) error {
	if r == nil {
		return fmt.Errorf("no type")
	}
	switch r.Kind {
	case model.KindArray, model.KindMap:
		if r.Elem == nil {
			return fmt.Errorf("an array or map without its element type")
		}
		return checkRef(r.Elem)
	case model.KindObject, model.KindEnum:
		if r.Named == nil {
			return fmt.Errorf("a named type reference without its type")
		}
		return nil
	}
	if knownKind(r.Kind) {
		return nil
	}
	return fmt.Errorf("type kind %d has no Go type", r.Kind)
}

// knownKind reports whether goType has a Go type for a kind that is not
// composite or named.
func knownKind(k model.Kind) bool {
	switch k {
	case model.KindString, model.KindBytes, model.KindInt32, model.KindInt64, model.KindFloat,
		model.KindBool, model.KindStruct, model.KindValue, model.KindRaw:
		return true
	}
	return false
}
