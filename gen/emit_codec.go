package gen

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

type lv func() *jen.Statement

func id(name string) lv { return func() *jen.Statement { return jen.Id(name) } }

func field(base string, goName string) lv {
	return func() *jen.Statement { return jen.Id(base).Dot(goName) }
}

func intRange(k model.Kind) (int64, int64) {
	if k == model.KindInt32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// decodeStmts decodes the next JSON value into dst, reporting at path p
// (an expression of type *rtPath).
func decodeStmts(r *model.Ref, dst lv, p jen.Code, top, pointer bool, depth int) []jen.Code {
	return decodeStmtsZero(r, dst, p, top, pointer, depth, nil)
}

// decodeStmtsZero is decodeStmts with statements run when a scalar was read
// and holds its zero value.
func decodeStmtsZero(r *model.Ref, dst lv, p jen.Code, top, pointer bool, depth int, onZero func(zero jen.Code) []jen.Code) []jen.Code {
	assign := func(call jen.Code, conv func(jen.Code) jen.Code) []jen.Code {
		val := jen.Id("val")
		var rhs jen.Code = val
		if conv != nil {
			rhs = conv(val)
		}
		if pointer {
			return []jen.Code{jen.If(jen.List(jen.Id("val"), jen.Id("ok")).Op(":=").Add(call), jen.Id("ok")).Block(
				jen.Id("tmp").Op(":=").Add(rhs),
				dst().Op("=").Op("&").Id("tmp"),
			)}
		}
		body := []jen.Code{dst().Op("=").Add(rhs)}
		if onZero != nil {
			body = append(body, onZero(dst())...)
		}
		return []jen.Code{jen.If(jen.List(jen.Id("val"), jen.Id("ok")).Op(":=").Add(call), jen.Id("ok")).Block(body...)}
	}
	switch r.Kind {
	case model.KindString:
		return assign(jen.Id("d").Dot("str").Call(p), nil)
	case model.KindBytes:
		return assign(jen.Id("d").Dot("bytes").Call(p), nil)
	case model.KindInt32, model.KindInt64:
		lo, hi := intRange(r.Kind)
		goT := "int64"
		if r.Kind == model.KindInt32 {
			goT = "int32"
		}
		return assign(jen.Id("d").Dot("integer").Call(p, jen.Lit(lo), jen.Lit(hi)), func(c jen.Code) jen.Code { return jen.Id(goT).Call(c) })
	case model.KindFloat:
		return assign(jen.Id("d").Dot("number").Call(p), nil)
	case model.KindBool:
		return assign(jen.Id("d").Dot("boolean").Call(p), nil)
	case model.KindStruct:
		return assign(jen.Id("d").Dot("object").Call(p), nil)
	case model.KindValue:
		return []jen.Code{dst().Op("=").Id("d").Dot("value").Call(p)}
	case model.KindRaw:
		args := []jen.Code{p}
		for _, k := range r.RawKinds {
			args = append(args, jen.Lit(k))
		}
		return []jen.Code{dst().Op("=").Id("d").Dot("rawKinds").Call(args...)}
	case model.KindEnum:
		return assign(jen.Id("d").Dot("str").Call(p), func(c jen.Code) jen.Code { return jen.Id(r.Named.Name).Call(c) })
	case model.KindObject:
		if top {
			return []jen.Code{jen.If(jen.Id("d").Dot("peek").Call().Op("==").LitByte('{')).Block(
				jen.Id("obj").Op(":=").New(jen.Id(r.Named.Name)),
				jen.Id("obj").Dot("decodeJSON").Call(jen.Id("d"), p),
				dst().Op("=").Id("obj"),
			).Else().Block(jen.Id("d").Dot("mismatch").Call(p, jen.Lit("object")))}
		}
		return []jen.Code{dst().Dot("decodeJSON").Call(jen.Id("d"), p)}
	case model.KindArray:
		i := fmt.Sprintf("i%d", depth)
		ip := fmt.Sprintf("ip%d", depth)
		first := fmt.Sprintf("first%d", depth)
		e := fmt.Sprintf("e%d", depth)
		body := []jen.Code{
			jen.Id(ip).Op(":=").Id("rtPath").Values(jen.Dict{jen.Id("parent"): p, jen.Id("index"): jen.Id(i)}),
			jen.Var().Id(e).Add(goType(r.Elem, false)),
		}
		body = append(body, decodeStmts(r.Elem, id(e), jen.Op("&").Id(ip), false, false, depth+1)...)
		body = append(body, dst().Op("=").Append(dst(), jen.Id(e)))
		return []jen.Code{jen.If(jen.Id("d").Dot("openArray").Call(p)).Block(
			dst().Op("=").Add(goType(r, false)).Values(),
			jen.Id(first).Op(":=").True(),
			jen.For(jen.Id(i).Op(":=").Lit(0), jen.Id("d").Dot("nextItem").Call(jen.Op("&").Id(first)), jen.Id(i).Op("++")).Block(body...),
		)}
	case model.KindMap:
		first := fmt.Sprintf("first%d", depth)
		kp := fmt.Sprintf("kp%d", depth)
		e := fmt.Sprintf("e%d", depth)
		k := fmt.Sprintf("k%d", depth)
		m := fmt.Sprintf("m%d", depth)
		body := []jen.Code{
			jen.List(jen.Id("kb"), jen.Id("more")).Op(":=").Id("d").Dot("nextKey").Call(jen.Op("&").Id(first)),
			jen.If(jen.Op("!").Id("more")).Block(jen.Break()),
			jen.Id(k).Op(":=").Id("d").Dot("keyString").Call(jen.Id("kb")),
			// A repeated key: decode the normalised document, where the
			// last occurrence wins (as for struct members).
			jen.If(jen.List(jen.Id("_"), jen.Id("dup")).Op(":=").Id(m).Index(jen.Id(k)), jen.Id("dup")).Block(jen.Id("d").Dot("dup").Op("=").True()),
			jen.Id(kp).Op(":=").Id("rtPath").Values(jen.Dict{jen.Id("parent"): p, jen.Id("key"): jen.Id(k), jen.Id("index"): jen.Lit(-1)}),
			jen.Var().Id(e).Add(goType(r.Elem, false)),
		}
		body = append(body, decodeStmts(r.Elem, id(e), jen.Op("&").Id(kp), false, false, depth+1)...)
		body = append(body, jen.Id(m).Index(jen.Id(k)).Op("=").Id(e))
		return []jen.Code{jen.If(jen.Id("d").Dot("openObject").Call(p)).Block(
			jen.Id(m).Op(":=").Add(goType(r, false)).Values(),
			jen.Id(first).Op(":=").True(),
			jen.For().Block(body...),
			dst().Op("=").Id(m),
		)}
	}
	panic("unknown kind")
}

func genCodec(f *jen.File, types []*model.Type) {
	for _, t := range types {
		if t.Kind != model.KindObject {
			continue
		}
		genDecode(f, t)
		genEncode(f, t)
		genClone(f, t)
	}
}

func genDecode(f *jen.File, t *model.Type) {
	var cases []jen.Code
	bit := 0
	var requiredInvisible []jen.Code
	for _, fd := range t.Fields {
		mask := jen.Lit(uint64(1) << bit)
		body := []jen.Code{
			jen.If(jen.Id("seen").Op("&").Add(mask).Op("!=").Lit(0)).Block(jen.Id("d").Dot("dup").Op("=").True()),
			jen.Id("seen").Op("|=").Add(mask),
			jen.Id("fp").Op(":=").Id("rtPath").Values(jen.Dict{jen.Id("parent"): jen.Id("p"), jen.Id("key"): jen.Lit(fd.JSON), jen.Id("index"): jen.Lit(-1)}),
		}
		// Optional scalars whose zero value Validate treats as absent are
		// checked here, where presence is known.
		var onZero func(jen.Code) []jen.Code
		if !fd.Required && !fd.Pointer {
			if checks := zeroChecks(fd, jen.Op("&").Id("fp")); len(checks) > 0 {
				zero := zeroValue(fd.Ref)
				onZero = func(x jen.Code) []jen.Code {
					return []jen.Code{jen.If(jen.Add(x).Op("==").Add(zero)).Block(append([]jen.Code{jen.Id("v").Op(":=").Id("d").Dot("v")}, checks...)...)}
				}
			}
		}
		body = append(body, decodeStmtsZero(fd.Ref, field("x", fd.GoName), jen.Op("&").Id("fp"), true, fd.Pointer, 0, onZero)...)
		cases = append(cases, jen.Case(jen.Lit(fd.JSON)).Block(body...))
		if fd.Required && invisibleWhenMissing(fd) {
			requiredInvisible = append(requiredInvisible,
				jen.If(jen.Id("seen").Op("&").Add(jen.Lit(uint64(1)<<bit)).Op("==").Lit(0)).Block(
					jen.Id("d").Dot("v").Dot("add").Call(jen.Id("p"), jen.Lit("required"), jen.Lit("missing property \""+fd.JSON+"\"")),
				))
		}
		bit++
	}
	if o := t.OneOf; o != nil {
		for mi, m := range o.Members {
			mask := jen.Lit(uint64(1) << bit)
			body := []jen.Code{
				jen.If(jen.Id("seen").Op("&").Add(mask).Op("!=").Lit(0)).Block(jen.Id("d").Dot("dup").Op("=").True()),
				jen.Id("seen").Op("|=").Add(mask),
				jen.If(jen.Id("member").Op("!=").Lit(0).Op("&&").Id("member").Op("!=").Lit(mi + 1)).Block(
					jen.Id("d").Dot("v").Dot("add").Call(jen.Id("p"), jen.Lit("oneOf"), jen.Lit("more than one of "+memberList(o)+" is set")),
				),
				jen.Id("member").Op("=").Lit(mi + 1),
				jen.Id("fp").Op(":=").Id("rtPath").Values(jen.Dict{jen.Id("parent"): jen.Id("p"), jen.Id("key"): jen.Lit(m.JSON), jen.Id("index"): jen.Lit(-1)}),
			}
			switch {
			case m.Wrapper == "":
				body = append(body,
					jen.Id("obj").Op(":=").New(jen.Id(m.Ref.Named.Name)),
					jen.If(jen.Id("d").Dot("peek").Call().Op("==").LitByte('{')).Block(
						jen.Id("obj").Dot("decodeJSON").Call(jen.Id("d"), jen.Op("&").Id("fp")),
					).Else().Block(jen.Id("d").Dot("mismatch").Call(jen.Op("&").Id("fp"), jen.Lit("object"))),
					jen.Id("x").Dot(o.GoName).Op("=").Id("obj"))
			case m.Ref.Kind == model.KindValue:
				body = append(body, jen.Id("x").Dot(o.GoName).Op("=").Id(m.Wrapper).Values(jen.Dict{jen.Id("Value"): jen.Id("d").Dot("value").Call(jen.Op("&").Id("fp"))}))
			default:
				body = append(body, jen.Var().Id("mv").Add(goType(m.Ref, true)))
				body = append(body, decodeStmts(m.Ref, id("mv"), jen.Op("&").Id("fp"), true, false, 0)...)
				body = append(body, jen.Id("x").Dot(o.GoName).Op("=").Id(m.Wrapper).Call(jen.Id("mv")))
			}
			cases = append(cases, jen.Case(jen.Lit(m.JSON)).Block(body...))
			bit++
		}
	}
	cases = append(cases, jen.Default().Block(jen.Id("d").Dot("skip").Call()))
	if bit > 64 {
		panic("more than 64 properties in " + t.Name)
	}
	body := []jen.Code{
		jen.If(jen.Op("!").Id("d").Dot("openObject").Call(jen.Id("p"))).Block(jen.Return()),
	}
	if bit > 0 {
		body = append(body, jen.Var().Id("seen").Uint64())
	}
	if t.OneOf != nil {
		body = append(body, jen.Id("member").Op(":=").Lit(0))
	}
	body = append(body,
		jen.Id("first").Op(":=").True(),
		jen.For().Block(
			jen.List(jen.Id("key"), jen.Id("ok")).Op(":=").Id("d").Dot("nextKey").Call(jen.Op("&").Id("first")),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
			jen.Switch(jen.String().Call(jen.Id("key"))).Block(cases...),
		),
	)
	if len(requiredInvisible) > 0 {
		body = append(body, jen.If(jen.Id("d").Dot("required").Op("&&").Id("d").Dot("ok").Call()).Block(requiredInvisible...))
	}
	cmt(f, fmt.Sprintf("decodeJSON reads a %s object, recording type mismatches in d.", t.Name))
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("decodeJSON").Params(jen.Id("d").Op("*").Id("rtDecoder"), jen.Id("p").Op("*").Id("rtPath")).Block(body...)

	cmt(f, fmt.Sprintf("UnmarshalJSON decodes a %s. It fails on bytes that are not JSON, on a\nvalue of the wrong JSON type and on two members of a oneof group; it does not\ncheck the other rules of the schema: call Validate for those.", t.Name))
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Var().Id("v").Id("rtValidator"),
		jen.If(jen.Id("err").Op(":=").Id("rtDecode").Call(jen.Id("data"), jen.Op("&").Id("v"), jen.False(), jen.Func().Params(jen.Id("d").Op("*").Id("rtDecoder")).Block(
			jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
			jen.Id("x").Dot("decodeJSON").Call(jen.Id("d"), jen.Nil()),
		)), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err"))),
		jen.Return(jen.Id("v").Dot("err").Call()),
	)

	cmt(f, fmt.Sprintf("Parse%sJSON decodes data into a new %s and checks it as Validate%sJSON does,\nin one pass: the value is returned only when it is valid.", t.Name, t.Name, t.Name))
	f.Func().Id("Parse"+t.Name+"JSON").Params(jen.Id("data").Index().Byte()).Params(jen.Op("*").Id(t.Name), jen.Error()).Block(
		jen.Id("x").Op(":=").New(jen.Id(t.Name)),
		jen.Var().Id("v").Id("rtValidator"),
		jen.If(jen.Id("err").Op(":=").Id("rtDecodeMode").Call(jen.Id("data"), jen.Op("&").Id("v"), jen.True(), jen.False(), jen.Func().Params(jen.Id("d").Op("*").Id("rtDecoder")).Block(
			jen.Op("*").Id("x").Op("=").Id(t.Name).Values(),
			jen.Id("x").Dot("decodeJSON").Call(jen.Id("d"), jen.Nil()),
		)), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Id("err"))),
		jen.Id("x").Dot("validate").Call(jen.Op("&").Id("v"), jen.Nil()),
		jen.If(jen.Id("err").Op(":=").Id("v").Dot("err").Call(), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Id("err"))),
		jen.Return(jen.Id("x"), jen.Nil()),
	)
	cmt(f, fmt.Sprintf("Validate%sJSON checks that data is a valid %s: JSON syntax, every rule\nof the schema, and required members. It returns a *SyntaxError, a\n*ValidationError listing every violation, or nil.", t.Name, t.Name))
	f.Func().Id("Validate"+t.Name+"JSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Var().Id("x").Id(t.Name),
		jen.Var().Id("v").Id("rtValidator"),
		jen.If(jen.Id("err").Op(":=").Id("rtDecode").Call(jen.Id("data"), jen.Op("&").Id("v"), jen.True(), jen.Func().Params(jen.Id("d").Op("*").Id("rtDecoder")).Block(
			jen.Id("x").Op("=").Id(t.Name).Values(),
			jen.Id("x").Dot("decodeJSON").Call(jen.Id("d"), jen.Nil()),
		)), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("err"))),
		jen.Id("x").Dot("validate").Call(jen.Op("&").Id("v"), jen.Nil()),
		jen.Return(jen.Id("v").Dot("err").Call()),
	)
}

func memberList(o *model.OneOf) string {
	var names []string
	for _, m := range o.Members {
		names = append(names, m.JSON)
	}
	return strings.Join(names, ", ")
}

// invisibleWhenMissing reports whether a required field's absence cannot be
// seen in the decoded Go value (it is always marshalled).
func invisibleWhenMissing(fd *model.Field) bool {
	if fd.Pointer {
		return false
	}
	switch fd.Ref.Kind {
	case model.KindInt32, model.KindInt64, model.KindFloat, model.KindBool, model.KindMap, model.KindStruct, model.KindValue, model.KindRaw:
		return true
	case model.KindString:
		// A required string that may be empty is always marshalled too: ""
		// is a value, not absence.
		return emptyStringAllowed(fd.Ref.C)
	}
	return false
}

// emptyStringAllowed reports whether "" satisfies every string constraint.
func emptyStringAllowed(c model.Constraints) bool {
	if c.MinLength != nil && *c.MinLength > 0 {
		return false
	}
	if c.Const != nil && *c.Const != "" {
		return false
	}
	if c.NotConst != nil && *c.NotConst == "" {
		return false
	}
	if c.Enum != nil && !slices.Contains(c.Enum, "") {
		return false
	}
	if c.Format != "" {
		return false // date-time and uuid never match ""
	}
	if c.Pattern != "" {
		re, err := regexp.Compile(c.Pattern)
		if err != nil || !re.MatchString("") {
			return false
		}
	}
	return true
}

// encoding

func appendValue(r *model.Ref, src jen.Code, top bool, depth int) []jen.Code {
	b := jen.Id("b")
	simple := func(call jen.Code) []jen.Code { return []jen.Code{b.Clone().Op("=").Add(call)} }
	withErr := func(call jen.Code) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("b"), jen.Id("err")).Op("=").Add(call),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("b"), jen.Id("err"))),
		}
	}
	switch r.Kind {
	case model.KindString:
		return simple(jen.Id("rtAppendString").Call(jen.Id("b"), src))
	case model.KindEnum:
		return simple(jen.Id("rtAppendString").Call(jen.Id("b"), jen.String().Call(src)))
	case model.KindBytes:
		return simple(jen.Id("rtAppendBytes").Call(jen.Id("b"), src))
	case model.KindInt32:
		return simple(jen.Qual("strconv", "AppendInt").Call(jen.Id("b"), jen.Int64().Call(src), jen.Lit(10)))
	case model.KindInt64:
		return simple(jen.Qual("strconv", "AppendInt").Call(jen.Id("b"), src, jen.Lit(10)))
	case model.KindBool:
		return simple(jen.Id("rtAppendBool").Call(jen.Id("b"), src))
	case model.KindFloat:
		return withErr(jen.Id("rtAppendFloat").Call(jen.Id("b"), src))
	case model.KindStruct, model.KindValue:
		return withErr(jen.Id("rtAppendAny").Call(jen.Id("b"), src))
	case model.KindRaw:
		return withErr(jen.Id("rtAppendRaw").Call(jen.Id("b"), src))
	case model.KindObject:
		if top {
			return []jen.Code{jen.If(jen.Add(src).Op("==").Nil()).Block(
				jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit("null").Op("...")),
			).Else().Block(withErr(jen.Add(src).Dot("appendJSON").Call(jen.Id("b")))...)}
		}
		ev := fmt.Sprintf("ev%d", depth)
		return []jen.Code{jen.Block(append([]jen.Code{jen.Id(ev).Op(":=").Add(src)}, withErr(jen.Id(ev).Dot("appendJSON").Call(jen.Id("b")))...)...)}
	case model.KindArray:
		i := fmt.Sprintf("i%d", depth)
		body := []jen.Code{jen.If(jen.Id(i).Op(">").Lit(0)).Block(jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte(',')))}
		body = append(body, appendValue(r.Elem, jen.Add(src).Index(jen.Id(i)), false, depth+1)...)
		return []jen.Code{
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte('[')),
			jen.For(jen.Id(i).Op(":=").Range().Add(src)).Block(body...),
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte(']')),
		}
	case model.KindMap:
		i := fmt.Sprintf("i%d", depth)
		k := fmt.Sprintf("k%d", depth)
		body := []jen.Code{
			jen.If(jen.Id(i).Op(">").Lit(0)).Block(jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte(','))),
			jen.Id("b").Op("=").Id("rtAppendString").Call(jen.Id("b"), jen.Id(k)),
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte(':')),
		}
		body = append(body, appendValue(r.Elem, jen.Add(src).Index(jen.Id(k)), false, depth+1)...)
		return []jen.Code{
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte('{')),
			jen.For(jen.List(jen.Id(i), jen.Id(k)).Op(":=").Range().Qual("slices", "Sorted").Call(jen.Qual("maps", "Keys").Call(src))).Block(body...),
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte('}')),
		}
	}
	panic("unknown kind")
}

// present is the condition under which an optional field is written.
func present(fd *model.Field, src jen.Code) jen.Code {
	if fd.Pointer {
		return jen.Add(src).Op("!=").Nil()
	}
	switch fd.Ref.Kind {
	case model.KindString, model.KindEnum:
		return jen.Add(src).Op("!=").Lit("")
	case model.KindInt32, model.KindInt64, model.KindFloat:
		return jen.Add(src).Op("!=").Lit(0)
	case model.KindBool:
		return src
	case model.KindRaw:
		return jen.Len(src).Op(">").Lit(0)
	}
	return jen.Add(src).Op("!=").Nil()
}

func genEncode(f *jen.File, t *model.Type) {
	body := []jen.Code{
		jen.Var().Id("err").Error(),
		jen.Id("_").Op("=").Id("err"),
		jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte('{')),
		jen.Id("open").Op(":=").Len(jen.Id("b")),
	}
	key := func(name string) []jen.Code {
		return []jen.Code{
			jen.If(jen.Len(jen.Id("b")).Op("!=").Id("open")).Block(jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte(','))),
			jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit(`"`+name+`":`).Op("...")),
		}
	}
	for _, fd := range t.Fields {
		src := jen.Id("x").Dot(fd.GoName)
		var val []jen.Code
		if fd.Pointer {
			val = appendValue(fd.Ref, jen.Op("*").Id("x").Dot(fd.GoName), true, 0)
		} else {
			val = appendValue(fd.Ref, src, true, 0)
		}
		stmts := append(key(fd.JSON), val...)
		if fd.Required {
			// Required members are always written; nil maps and slices as
			// empty ones.
			switch fd.Ref.Kind {
			case model.KindMap, model.KindStruct:
				if !fd.Pointer {
					stmts = append(key(fd.JSON), jen.If(jen.Id("x").Dot(fd.GoName).Op("==").Nil()).Block(
						jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit("{}").Op("...")),
					).Else().Block(val...))
				}
			case model.KindArray:
				stmts = append(key(fd.JSON), jen.If(jen.Id("x").Dot(fd.GoName).Op("==").Nil()).Block(
					jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit("[]").Op("...")),
				).Else().Block(val...))
			case model.KindValue, model.KindRaw:
				// nil marshals as null
			}
			body = append(body, stmts...)
			continue
		}
		body = append(body, jen.If(present(fd, jen.Id("x").Dot(fd.GoName))).Block(stmts...))
	}
	if o := t.OneOf; o != nil {
		var cases []jen.Code
		for _, m := range o.Members {
			var val []jen.Code
			switch {
			case m.Wrapper == "":
				val = appendValue(m.Ref, jen.Id("m"), true, 0)
			case m.Ref.Kind == model.KindValue:
				val = appendValue(m.Ref, jen.Id("m").Dot("Value"), true, 0)
			default:
				val = appendValue(m.Ref, jen.Add(goType(m.Ref, true)).Call(jen.Id("m")), true, 0)
			}
			cases = append(cases, jen.Case(jen.Id(memberGoType(m))).Block(append(key(m.JSON), val...)...))
		}
		body = append(body, jen.Switch(jen.Id("m").Op(":=").Id("x").Dot(o.GoName).Assert(jen.Type())).Block(cases...))
	}
	if len(t.Fields) == 0 && t.OneOf == nil {
		body = append(body, jen.Id("_").Op("=").Id("open"))
	}
	body = append(body,
		jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitByte('}')),
		jen.Return(jen.Id("b"), jen.Nil()),
	)
	cmt(f, "appendJSON appends x as JSON. Optional members at their zero value are\nleft out, as in ProtoJSON.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("appendJSON").Params(jen.Id("b").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
	cmt(f, "MarshalJSON encodes x in its wire form.")
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Id("x").Dot("appendJSON").Call(jen.Nil())),
	)
	cmt(f, "AppendJSON appends the wire form of x to b, as MarshalJSON encodes it,\nso that an envelope around it is built in one buffer.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("AppendJSON").Params(jen.Id("b").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Id("x").Dot("appendJSON").Call(jen.Id("b"))),
	)
}
