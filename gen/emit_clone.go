package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

// deep reports whether a value of r holds references that a copy must not
// share.
func deep(r *model.Ref) bool {
	switch r.Kind {
	case model.KindString, model.KindInt32, model.KindInt64, model.KindFloat, model.KindBool, model.KindEnum:
		return false
	}
	return true
}

// cloneStmts assigns a deep copy of src (of type r) to dst.
func cloneStmts(r *model.Ref, dst lv, src jen.Code, top bool, depth int) []jen.Code {
	switch r.Kind {
	case model.KindBytes, model.KindRaw:
		return []jen.Code{dst().Op("=").Qual("slices", "Clone").Call(src)}
	case model.KindStruct:
		return []jen.Code{dst().Op("=").Add(rt("CloneObject")).Call(src)}
	case model.KindValue:
		return []jen.Code{dst().Op("=").Add(rt("CloneAny")).Call(src)}
	case model.KindObject:
		if top {
			return []jen.Code{dst().Op("=").Add(src).Dot("Clone").Call()}
		}
		return []jen.Code{dst().Op("=").Op("*").Parens(jen.Op("&").Add(src)).Dot("Clone").Call()}
	case model.KindArray:
		if !deep(r.Elem) {
			return []jen.Code{dst().Op("=").Qual("slices", "Clone").Call(src)}
		}
		i := fmt.Sprintf("i%d", depth)
		return []jen.Code{jen.If(jen.Add(src).Op("!=").Nil()).Block(
			dst().Op("=").Make(goType(r, false), jen.Len(src)),
			jen.For(jen.Id(i).Op(":=").Range().Add(src)).Block(
				cloneStmts(r.Elem, func() *jen.Statement { return dst().Index(jen.Id(i)) }, jen.Add(src).Index(jen.Id(i)), false, depth+1)...,
			),
		)}
	case model.KindMap:
		if !deep(r.Elem) {
			return []jen.Code{dst().Op("=").Qual("maps", "Clone").Call(src)}
		}
		k := fmt.Sprintf("k%d", depth)
		e := fmt.Sprintf("e%d", depth)
		m := fmt.Sprintf("m%d", depth)
		return []jen.Code{jen.If(jen.Add(src).Op("!=").Nil()).Block(
			jen.Id(m).Op(":=").Make(goType(r, false), jen.Len(src)),
			jen.For(jen.List(jen.Id(k), jen.Id(e)).Op(":=").Range().Add(src)).Block(
				cloneStmts(r.Elem, func() *jen.Statement { return jen.Id(m).Index(jen.Id(k)) }, jen.Id(e), false, depth+1)...,
			),
			dst().Op("=").Id(m),
		)}
	}
	return nil
}

func genClone(f *jen.File, t *model.Type) {
	body := []jen.Code{
		jen.If(jen.Id("x").Op("==").Nil()).Block(jen.Return(jen.Nil())),
		jen.Id("c").Op(":=").Op("*").Id("x"),
	}
	for _, fd := range t.Fields {
		if fd.Pointer {
			body = append(body, jen.If(jen.Id("x").Dot(fd.GoName).Op("!=").Nil()).Block(
				jen.Id("v").Op(":=").Op("*").Id("x").Dot(fd.GoName),
				jen.Id("c").Dot(fd.GoName).Op("=").Op("&").Id("v"),
			))
			continue
		}
		if deep(fd.Ref) {
			body = append(body, cloneStmts(fd.Ref, field("c", fd.GoName), jen.Id("x").Dot(fd.GoName), true, 0)...)
		}
	}
	if o := t.OneOf; o != nil {
		var cases []jen.Code
		for _, m := range o.Members {
			switch {
			case m.Wrapper == "":
				cases = append(cases, jen.Case(jen.Id(memberGoType(m))).Block(jen.Id("c").Dot(o.GoName).Op("=").Id("m").Dot("Clone").Call()))
			case m.Ref.Kind == model.KindValue:
				cases = append(cases, jen.Case(jen.Id(m.Wrapper)).Block(jen.Id("c").Dot(o.GoName).Op("=").Id(m.Wrapper).Values(jen.Dict{jen.Id("Value"): rt("CloneAny").Call(jen.Id("m").Dot("Value"))})))
			case deep(m.Ref):
				cases = append(cases, jen.Case(jen.Id(m.Wrapper)).Block(jen.Id("c").Dot(o.GoName).Op("=").Id(m.Wrapper).Call(jen.Qual("slices", "Clone").Call(jen.Id("m")))))
			}
		}
		if len(cases) > 0 {
			body = append(body, jen.Switch(jen.Id("m").Op(":=").Id("x").Dot(o.GoName).Assert(jen.Type())).Block(cases...))
		}
	}
	body = append(body, jen.Return(jen.Op("&").Id("c")))
	cmt(f, "Clone returns a deep copy of x (nil for nil): nothing in the copy is shared with x.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("Clone").Params().Op("*").Id(t.Name).Block(body...)
}
