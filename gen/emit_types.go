package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

// goType is the Go type of a reference. Named objects are pointers at the
// field level (top) and values inside arrays and maps.
func goType(r *model.Ref, top bool) jen.Code {
	switch r.Kind {
	case model.KindString:
		return jen.String()
	case model.KindBytes:
		return jen.Index().Byte()
	case model.KindInt32:
		return jen.Int32()
	case model.KindInt64:
		return jen.Int64()
	case model.KindFloat:
		return jen.Float64()
	case model.KindBool:
		return jen.Bool()
	case model.KindStruct:
		return jen.Map(jen.String()).Any()
	case model.KindValue:
		return jen.Any()
	case model.KindRaw:
		return jen.Qual("encoding/json", "RawMessage")
	case model.KindArray:
		return jen.Index().Add(goType(r.Elem, false))
	case model.KindMap:
		return jen.Map(jen.String()).Add(goType(r.Elem, false))
	case model.KindEnum:
		return named(r.Named)
	case model.KindObject:
		if top {
			return jen.Op("*").Add(named(r.Named))
		}
		return named(r.Named)
	}
	// Generate refuses such a model before emitting (checkModel).
	panic(fmt.Sprintf("type kind %d has no Go type", r.Kind))
}

func fieldType(fd *model.Field) jen.Code {
	if fd.Pointer {
		return jen.Op("*").Add(goType(fd.Ref, true))
	}
	return goType(fd.Ref, true)
}

func fieldComment(fd *model.Field) string {
	var b strings.Builder
	b.WriteString(doc(fd.GoName, fd.Doc))
	b.WriteString("\n\nJSON: \"" + fd.JSON + "\"")
	if fd.Required {
		b.WriteString(", required")
	}
	b.WriteString(".")
	return b.String()
}

func genTypes(f *jen.File, types []*model.Type) error {
	for _, t := range types {
		switch t.Kind {
		case model.KindEnum:
			genEnum(f, t)
		case model.KindObject:
			genStruct(f, t)
		}
	}
	return nil
}

func genEnum(f *jen.File, t *model.Type) {
	cmt(f, doc(t.Name, t.Doc))
	f.Type().Id(t.Name).String()
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, v := range t.Values {
			if v.Doc != "" {
				cmt(g, docAs(v.GoName, v.Doc, roleValue))
			}
			g.Id(v.GoName).Id(t.Name).Op("=").Lit(v.Wire)
		}
	})
	cmt(f, "Valid reports whether v is one of the values the schema lists.")
	f.Func().Params(jen.Id("v").Id(t.Name)).Id("Valid").Params().Bool().Block(
		jen.Switch(jen.Id("v")).Block(
			jen.Case(packed(valueNames(t), len("\tcase "))).Block(jen.Return(jen.True())),
		),
		jen.Return(jen.False()),
	)
	cmt(f, fmt.Sprintf("%sValues lists every value of %s in schema order.", t.Name, t.Name))
	f.Func().Id(t.Name + "Values").Params().Index().Id(t.Name).Block(
		jen.Return(jen.Index().Id(t.Name).Values(packed(valueNames(t), len("\treturn []{")+len(t.Name)))),
	)
	cmt(f, "String returns the wire value.")
	f.Func().Params(jen.Id("v").Id(t.Name)).Id("String").Params().String().Block(
		jen.Return(jen.String().Call(jen.Id("v"))),
	)
}

func genStruct(f *jen.File, t *model.Type) {
	cmt(f, doc(t.Name, t.Doc))
	f.Type().Id(t.Name).StructFunc(func(g *jen.Group) {
		for _, fd := range t.Fields {
			cmt(g, fieldComment(fd))
			g.Id(fd.GoName).Add(fieldType(fd))
		}
		if o := t.OneOf; o != nil {
			var names []string
			for _, m := range o.Members {
				names = append(names, "\""+m.JSON+"\"")
			}
			cmt(g, fmt.Sprintf("%s holds exactly one of %s: one of the types implementing %s.", o.GoName, strings.Join(names, ", "), o.Interface))
			g.Id(o.GoName).Id(o.Interface)
		}
	})
	if o := t.OneOf; o != nil {
		var impls []string
		for _, m := range o.Members {
			impls = append(impls, memberGoType(m))
		}
		cmt(f, fmt.Sprintf("%s is the sealed union of %s.%s; its implementations are %s.", o.Interface, t.Name, o.GoName, strings.Join(impls, ", ")))
		f.Type().Id(o.Interface).Interface(jen.Id("is" + o.Interface).Params())
		for _, m := range o.Members {
			if m.Wrapper != "" {
				cmt(f, doc(m.Wrapper, m.Doc)+"\n\nAs a member of "+o.Interface+" it is written as JSON member \""+m.JSON+"\".")
				switch m.Ref.Kind {
				case model.KindValue:
					f.Type().Id(m.Wrapper).Struct(jen.Id("Value").Any())
				default:
					f.Type().Id(m.Wrapper).Add(goType(m.Ref, true))
				}
				f.Func().Params(jen.Id(m.Wrapper)).Id("is" + o.Interface).Params().Block()
			} else {
				f.Func().Params(jen.Op("*").Id(m.Ref.Named.Name)).Id("is" + o.Interface).Params().Block()
			}
		}
	}
}

func memberGoType(m *model.Field) string {
	if m.Wrapper != "" {
		return m.Wrapper
	}
	return "*" + m.Ref.Named.Name
}

// valueNames lists the constants of an enum type in schema order.
func valueNames(t *model.Type) []string {
	var out []string
	for _, v := range t.Values {
		out = append(out, v.GoName)
	}
	return out
}
