package gen

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

// runtimePath is the import path of the package that generated code calls.
const runtimePath = "github.com/a2abind/a2abind/gen/runtime"

// runtimeVersion is the version of gen/runtime's API that the generated code
// is written for; gen/runtime's MinVersion and MaxVersion must include it.
const runtimeVersion = 3

// rt names an identifier of the runtime package.
func rt(name string) *jen.Statement { return jen.Qual(runtimePath, name) }

// named refers to a named type, qualified when it is another package's.
func named(t *model.Type) *jen.Statement { return jen.Qual(t.ImportPath, t.Name) }

type lv func() *jen.Statement

func id(name string) lv { return func() *jen.Statement { return jen.Id(name) } }

func field(base string, goName string) lv {
	return func() *jen.Statement { return jen.Id(base).Dot(goName) }
}

func dec() *jen.Statement { return jen.Id("d") }

// leafString reports whether r is a string or a string enum, which the
// runtime writes in arrays without generated loops.
func leafString(r *model.Ref) bool { return r.Kind == model.KindString || r.Kind == model.KindEnum }

// readCall is the runtime call that reads a scalar of kind r and returns it
// with an ok flag, or nil for kinds that are not read that way.
func readCall(r *model.Ref, p jen.Code) *jen.Statement {
	method := map[model.Kind]string{
		model.KindString: "String", model.KindBytes: "Bytes", model.KindInt32: "Int32",
		model.KindInt64: "Int64", model.KindFloat: "Number", model.KindBool: "Bool", model.KindStruct: "Object",
	}
	if m, ok := method[r.Kind]; ok {
		return dec().Dot(m).Call(p)
	}
	if r.Kind == model.KindEnum {
		return rt("Enum").Types(named(r.Named)).Call(dec().Dot("String").Call(p))
	}
	return nil
}

// pathRef is the path of a value being decoded: ptr is an expression of type
// *runtime.Path, recv one whose methods can be called.
type pathRef struct{ ptr, recv jen.Code }

// varPath is the path held in the variable name (of type runtime.Path).
func varPath(name string) pathRef { return pathRef{jen.Op("&").Id(name), jen.Id(name)} }

// decodeStmts decodes the next JSON value into dst, reporting at p (an
// path). top says dst is a struct member (named
// objects are pointers there); pointer says dst is a pointer to a scalar.
// onZero, if set, gives statements run when a scalar was read and holds its
// zero value.
func decodeStmts(r *model.Ref, dst lv, pr pathRef, top, pointer bool, depth int, onZero func() []jen.Code) ([]jen.Code, error) {
	return decodeMember(r, dst, pr, top, pointer, depth, onZero, nil, false)
}

// decodeMember is decodeStmts for a struct member, with check, the
// statements a checking decoder runs instead of keeping an open object,
// array or map (checkingBody), and bounded set for an array whose items a
// reader may bound (model.Field.ItemBound).
func decodeMember(r *model.Ref, dst lv, pr pathRef, top, pointer bool, depth int, onZero func() []jen.Code, check []jen.Code, bounded bool) ([]jen.Code, error) {
	p := pr.ptr
	if call := readCall(r, p); call != nil {
		switch {
		case pointer:
			return []jen.Code{dst().Op("=").Add(rt("Ptr").Call(call))}, nil
		case onZero != nil:
			return []jen.Code{jen.If(jen.List(jen.Id("val"), jen.Id("ok")).Op(":=").Add(call), jen.Id("ok")).Block(
				append([]jen.Code{dst().Op("=").Id("val")}, jen.If(jen.Id("val").Op("==").Add(zeroValue(r))).Block(onZero()...))...,
			)}, nil
		case r.Kind == model.KindFloat:
			// A number beyond float64 is recorded and leaves dst unset.
			return []jen.Code{jen.If(jen.List(jen.Id("val"), jen.Id("ok")).Op(":=").Add(call), jen.Id("ok")).Block(dst().Op("=").Id("val"))}, nil
		}
		return []jen.Code{jen.List(dst(), jen.Id("_")).Op("=").Add(call)}, nil
	}
	switch r.Kind {
	case model.KindValue:
		return []jen.Code{dst().Op("=").Add(dec()).Dot("Value").Call(p)}, nil
	case model.KindRaw:
		args := []jen.Code{p}
		for _, k := range r.RawKinds {
			args = append(args, jen.Lit(k))
		}
		return []jen.Code{dst().Op("=").Add(dec()).Dot("RawKinds").Call(args...)}, nil
	case model.KindObject:
		if top {
			return []jen.Code{jen.If(dec().Dot("IsObject").Call(p)).Block(orChecking(check, []jen.Code{
				dst().Op("=").New(named(r.Named)),
				dst().Dot("DecodeJSONAt").Call(dec(), p),
			})...)}, nil
		}
		return []jen.Code{dst().Dot("DecodeJSONAt").Call(dec(), p)}, nil
	case model.KindArray:
		if r.Elem.Kind == model.KindString {
			return []jen.Code{dst().Op("=").Add(dec()).Dot("Strings").Call(p)}, nil
		}
		it, e := fmt.Sprintf("it%d", depth), fmt.Sprintf("e%d", depth)
		inner, err := decodeStmts(r.Elem, id(e), pathRef{jen.Id(it).Dot("At").Call(), jen.Id(it).Dot("At").Call()}, false, false, depth+1, nil)
		if err != nil {
			return nil, err
		}
		body := append([]jen.Code{jen.Var().Id(e).Add(goType(r.Elem, false))}, inner...)
		body = append(body, dst().Op("=").Append(dst(), jen.Id(e)))
		open := "Array"
		if bounded {
			open = "BoundedArray"
		}
		return []jen.Code{jen.If(jen.Id(it).Op(":=").Add(dec()).Dot(open).Call(p), jen.Id(it).Dot("Open").Call()).Block(orChecking(check, []jen.Code{
			dst().Op("=").Add(goType(r, false)).Values(),
			jen.For(jen.Id(it).Dot("Next").Call(dec())).Block(body...),
		})...)}, nil
	case model.KindMap:
		if r.Elem.Kind == model.KindString {
			return []jen.Code{dst().Op("=").Add(dec()).Dot("StringMap").Call(p)}, nil
		}
		first, k, kp, e := fmt.Sprintf("first%d", depth), fmt.Sprintf("k%d", depth), fmt.Sprintf("kp%d", depth), fmt.Sprintf("e%d", depth)
		inner, err := decodeStmts(r.Elem, id(e), varPath(kp), false, false, depth+1, nil)
		if err != nil {
			return nil, err
		}
		body := []jen.Code{
			jen.List(jen.Id(k), jen.Id("ok")).Op(":=").Add(dec()).Dot("NextMember").Call(jen.Op("&").Id(first)),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
			jen.Id(kp).Op(":=").Add(pr.recv).Dot("Key").Call(jen.Id(k)),
			jen.If(jen.List(jen.Id("_"), jen.Id("dup")).Op(":=").Add(dst()).Index(jen.Id(k)), jen.Id("dup")).Block(dec().Dot("Duplicate").Call(jen.Op("&").Id(kp))),
			jen.Var().Id(e).Add(goType(r.Elem, false)),
		}
		body = append(body, inner...)
		body = append(body, dst().Index(jen.Id(k)).Op("=").Id(e))
		return []jen.Code{jen.If(dec().Dot("OpenObject").Call(p)).Block(orChecking(check, []jen.Code{
			dst().Op("=").Add(goType(r, false)).Values(),
			jen.For(jen.Id(first).Op(":=").True(), jen.Empty(), jen.Empty()).Block(body...),
		})...)}, nil
	}
	return nil, fmt.Errorf("type kind %d cannot be decoded", r.Kind)
}

func (ck *checker) genCodec(f *jen.File, types []*model.Type) error {
	for _, t := range types {
		if t.Kind != model.KindObject {
			continue
		}
		if err := ck.genDecode(f, t); err != nil {
			return err
		}
		if err := genEncode(f, t); err != nil {
			return err
		}
		genClone(f, t)
	}
	return nil
}

// maxMembers is the number of members (fields and oneof members) an object
// type may have: the decoder tracks the members it has read in one uint64.
const maxMembers = 64

// seenBit is the mask of member number bit in the decoder's seen set.
func seenBit(bit int) jen.Code { return jen.Lit(1).Op("<<").Lit(bit) }

// fieldPath declares fp, the path of member name under p.
func fieldPath(name string) jen.Code {
	return jen.Id("fp").Op(":=").Id("p").Dot("Key").Call(jen.Lit(name))
}

// readValue is the closure that resets x and decodes it, handed to the
// runtime's entry points.
func readValue(x jen.Code, t *model.Type) jen.Code {
	return jen.Func().Params(jen.Id("d").Op("*").Add(rt("Decoder"))).Block(
		jen.Add(x).Op("=").Add(named(t)).Values(),
		jen.Id("x").Dot("DecodeJSONAt").Call(dec(), jen.Nil()),
	)
}

func (ck *checker) genDecode(f *jen.File, t *model.Type) error {
	var cases []jen.Code
	bit := 0
	var requiredMask uint64
	var names []jen.Code
	members := len(t.Fields)
	if t.OneOf != nil {
		members += len(t.OneOf.Members)
	}
	if members > maxMembers {
		return fmt.Errorf("%s: type %s has %d properties; a2agen supports at most %d per object", t.Source, t.Name, members, maxMembers)
	}
	for _, fd := range t.Fields {
		body := memberHead(fd, bit, fd.Required)
		// Optional scalars whose zero value Validate treats as absent are
		// checked here, where presence is known.
		var onZero func() []jen.Code
		if !fd.Required && !fd.Pointer {
			if checks := ck.zeroChecks(fd); len(checks) > 0 {
				onZero = func() []jen.Code {
					return append([]jen.Code{jen.Id("v").Op(":=").Add(dec()).Dot("Validator").Call()}, checks...)
				}
			}
		}
		var check []jen.Code
		if streamed(fd) {
			check = checkingBody(fd.Ref)
		}
		stmts, err := decodeMember(fd.Ref, field("x", fd.GoName), varPath("fp"), true, fd.Pointer, 0, onZero, check, fd.ItemBound)
		if fd.ErrorInfoCode != "" && fd.Ref.Kind == model.KindValue {
			// Its check reads the value, which Value skips on the
			// Validate<Type>JSON path.
			stmts = []jen.Code{field("x", fd.GoName)().Op("=").Add(dec()).Dot("KeptValue").Call(jen.Op("&").Id("fp"))}
		}
		if err != nil {
			return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, fd.GoName, err)
		}
		body = append(body, stmts...)
		cases = append(cases, jen.Case(jen.Lit(fd.JSON)).Block(body...))
		if fd.Required {
			requiredMask |= 1 << bit
		}
		names = append(names, jen.Lit(fd.JSON))
		bit++
	}
	if o := t.OneOf; o != nil {
		for mi, m := range o.Members {
			// A null member is not set: it does not count as the group's
			// member.
			body := memberHead(m, bit, false)
			body = append(body, dec().Dot("OneOf").Call(jen.Id("p"), jen.Op("&").Id("member"), jen.Lit(mi+1), jen.Lit(memberList(o))))
			switch {
			case m.Wrapper == "":
				// A checking decoder reads the member into a local value
				// (which checks itself) and keeps a nil pointer of its type,
				// which tells the group's member.
				body = append(body, orChecking([]jen.Code{
					jen.Var().Id("obj").Add(named(m.Ref.Named)),
					jen.If(dec().Dot("IsObject").Call(jen.Op("&").Id("fp"))).Block(
						jen.Id("obj").Dot("DecodeJSONAt").Call(dec(), jen.Op("&").Id("fp")),
					),
					jen.Id("x").Dot(o.GoName).Op("=").Parens(jen.Op("*").Add(named(m.Ref.Named))).Call(jen.Nil()),
				}, []jen.Code{
					jen.Id("obj").Op(":=").New(named(m.Ref.Named)),
					jen.If(dec().Dot("IsObject").Call(jen.Op("&").Id("fp"))).Block(
						jen.Id("obj").Dot("DecodeJSONAt").Call(dec(), jen.Op("&").Id("fp")),
					),
					jen.Id("x").Dot(o.GoName).Op("=").Id("obj"),
				})...)
			case m.Ref.Kind == model.KindValue:
				body = append(body, jen.Id("x").Dot(o.GoName).Op("=").Id(m.Wrapper).Values(jen.Dict{jen.Id("Value"): dec().Dot("Value").Call(jen.Op("&").Id("fp"))}))
			default:
				stmts, err := decodeStmts(m.Ref, id("mv"), varPath("fp"), true, false, 0, nil)
				if err != nil {
					return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, m.Wrapper, err)
				}
				body = append(body, jen.Var().Id("mv").Add(goType(m.Ref, true)))
				body = append(body, stmts...)
				body = append(body, jen.Id("x").Dot(o.GoName).Op("=").Id(m.Wrapper).Call(jen.Id("mv")))
			}
			cases = append(cases, jen.Case(jen.Lit(m.JSON)).Block(body...))
			bit++
		}
	}
	cases = append(cases, jen.Default().Block(dec().Dot("Unknown").Call(jen.Id("p"), jen.Id("key"), jen.Op("&").Id("unknown"))))
	body := []jen.Code{
		jen.If(jen.Op("!").Add(dec()).Dot("OpenObject").Call(jen.Id("p"))).Block(jen.Return()),
	}
	if bit > 0 {
		body = append(body, jen.Var().Id("seen").Uint64())
	}
	if t.OneOf != nil {
		body = append(body, jen.Id("member").Op(":=").Lit(0))
	}
	body = append(body, jen.Var().Id("unknown").Add(rt("Keys")))
	body = append(body,
		jen.For(jen.Id("first").Op(":=").True(), jen.Empty(), jen.Empty()).Block(
			jen.List(jen.Id("key"), jen.Id("ok")).Op(":=").Add(dec()).Dot("NextKey").Call(jen.Op("&").Id("first")),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
			jen.Switch(jen.String().Call(jen.Id("key"))).Block(cases...),
		),
	)
	if requiredMask != 0 {
		// Every required member not read is reported missing, at its own
		// pointer; the names run up to the last required member.
		mask := jen.Id(fmt.Sprintf("0b%b", requiredMask))
		last := 63
		for requiredMask&(1<<last) == 0 {
			last--
		}
		args := append([]jen.Code{jen.Id("p"), jen.Id("seen"), mask, jen.Op("&").Id("unknown")}, names[:last+1]...)
		body = append(body, jen.If(jen.Id("seen").Op("&").Add(mask).Op("!=").Add(mask)).Block(
			dec().Dot("Missing").Call(args...)))
	}
	body = append(body, checkCall(t))
	cmt(f, fmt.Sprintf("DecodeJSONAt reads %s from d, recording type mismatches at p. It\nis for generated code; call UnmarshalJSON or Parse%sJSON.", article(t.Name), t.Name))
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("DecodeJSONAt").Params(sigParams(
		len("func (x *) DecodeJSONAt(d *runtime.Decoder, p *runtime.Path) {")+len(t.Name),
		jen.Id("d").Op("*").Add(rt("Decoder")), jen.Id("p").Op("*").Add(rt("Path")))...).Block(body...)

	cmt(f, fmt.Sprintf("UnmarshalJSON decodes %s. It fails on bytes that are not JSON, on\na value of the wrong JSON type and on two members of a oneof group; it does\nnot check the other rules of the schema: call Validate for those.", article(t.Name)))
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Return(rt("Unmarshal").Call(jen.Id("data"), readValue(jen.Op("*").Id("x"), t))),
	)

	cmt(f, fmt.Sprintf("Parse%sJSON decodes data into a new %s and checks it as\nValidate%sJSON does, in one pass: the value is returned only when it is\nvalid.", t.Name, t.Name, t.Name))
	f.Func().Id("Parse"+t.Name+"JSON").Params(sigParams(
		len("func ParseJSON(data []byte) (*, error) {")+2*len(t.Name), jen.Id("data").Index().Byte())...).Params(jen.Op("*").Id(t.Name), jen.Error()).Block(
		jen.Id("x").Op(":=").New(jen.Id(t.Name)),
		jen.Return(rt("Parse").Call(jen.Id("data"), jen.Id("x"), readValue(jen.Op("*").Id("x"), t), jen.Id("x").Dot("ValidateAt"))),
	)
	cmt(f, fmt.Sprintf("Validate%sJSON checks that data is a valid %s: JSON syntax, every\nrule of the schema, and required members. It returns a *SyntaxError, a\n*ValidationError listing every violation, or nil.", t.Name, t.Name))
	f.Func().Id("Validate"+t.Name+"JSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Var().Id("d").Add(rt("Decoder")),
		jen.Id("d").Dot("Check").Call(jen.Id("data")),
		jen.Var().Id("x").Id(t.Name),
		jen.Id("x").Dot("DecodeJSONAt").Call(jen.Op("&").Id("d"), jen.Nil()),
		jen.Return(jen.Id("d").Dot("Verdict").Call()),
	)
	return nil
}

// nullIsValue reports whether null is a value of r rather than the absence
// of a member: google.protobuf.Value, and raw JSON that may be null.
func nullIsValue(r *model.Ref) bool {
	switch r.Kind {
	case model.KindValue:
		return true
	case model.KindRaw:
		return len(r.RawKinds) == 0 || slices.Contains(r.RawKinds, "null")
	}
	return false
}

// memberHead declares fp, the path of member fd (number bit), and records
// that the member was read. When the member's value is null it moves on to
// the next member: as in ProtoJSON, null leaves a member that may be unset
// unset, and is a violation on a required one.
func memberHead(fd *model.Field, bit int, required bool) []jen.Code {
	if nullIsValue(fd.Ref) {
		return []jen.Code{fieldPath(fd.JSON), dec().Dot("Seen").Call(jen.Op("&").Id("seen"), seenBit(bit), jen.Op("&").Id("fp"))}
	}
	return []jen.Code{
		fieldPath(fd.JSON),
		jen.If(dec().Dot("Member").Call(jen.Op("&").Id("seen"), seenBit(bit), jen.Op("&").Id("fp"), jen.Lit(required))).Block(jen.Continue()),
	}
}

// article puts "a" or "an" before a type name.
func article(name string) string {
	if name != "" && strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
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

func appendTo(call jen.Code) []jen.Code { return []jen.Code{jen.Id("b").Op("=").Add(call)} }

// encoder builds the statements of one AppendJSON.
type encoder struct {
	// fails is set once a statement may fail (it then needs err).
	fails bool
}

// appendOrFail appends with a call that may fail, returning its error.
func (e *encoder) appendOrFail(call jen.Code) []jen.Code {
	e.fails = true
	return []jen.Code{
		jen.List(jen.Id("b"), jen.Id("err")).Op("=").Add(call),
		jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("b"), jen.Id("err"))),
	}
}

func appendByte(c rune) jen.Code { return jen.Id("b").Op("=").Append(jen.Id("b"), jen.LitRune(c)) }

// appendValue appends src (of type r) to b. top says src is a struct member
// (named objects are pointers there); addressable says src may have its
// address taken (a map value may not).
func (e *encoder) appendValue(r *model.Ref, src jen.Code, top, addressable bool, depth int) ([]jen.Code, error) {
	b := jen.Id("b")
	switch r.Kind {
	case model.KindString:
		return appendTo(rt("AppendString").Call(b, src)), nil
	case model.KindEnum:
		return appendTo(rt("AppendString").Call(b, jen.String().Call(src))), nil
	case model.KindBytes:
		return appendTo(rt("AppendBytes").Call(b, src)), nil
	case model.KindInt32:
		return appendTo(jen.Qual("strconv", "AppendInt").Call(b, jen.Int64().Call(src), jen.Lit(10))), nil
	case model.KindInt64:
		return appendTo(jen.Qual("strconv", "AppendInt").Call(b, src, jen.Lit(10))), nil
	case model.KindBool:
		return appendTo(rt("AppendBool").Call(b, src)), nil
	case model.KindFloat:
		return e.appendOrFail(rt("AppendFloat").Call(b, src)), nil
	case model.KindStruct, model.KindValue:
		return e.appendOrFail(rt("AppendAny").Call(b, src)), nil
	case model.KindRaw:
		return e.appendOrFail(rt("AppendRaw").Call(b, src)), nil
	case model.KindObject:
		if top {
			return []jen.Code{jen.If(jen.Add(src).Op("==").Nil()).Block(
				jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit("null").Op("...")),
			).Else().Block(e.appendOrFail(jen.Add(src).Dot("AppendJSON").Call(b))...)}, nil
		}
		if !addressable {
			ev := fmt.Sprintf("ev%d", depth)
			return append([]jen.Code{jen.Id(ev).Op(":=").Add(src)}, e.appendOrFail(jen.Id(ev).Dot("AppendJSON").Call(b))...), nil
		}
		return e.appendOrFail(jen.Add(src).Dot("AppendJSON").Call(b)), nil
	case model.KindArray:
		if leafString(r.Elem) {
			return appendTo(rt("AppendStrings").Call(b, src)), nil
		}
		i := fmt.Sprintf("i%d", depth)
		inner, err := e.appendValue(r.Elem, jen.Add(src).Index(jen.Id(i)), false, true, depth+1)
		if err != nil {
			return nil, err
		}
		body := append([]jen.Code{jen.If(jen.Id(i).Op(">").Lit(0)).Block(appendByte(','))}, inner...)
		return []jen.Code{
			appendByte('['),
			jen.For(jen.Id(i).Op(":=").Range().Add(src)).Block(body...),
			appendByte(']'),
		}, nil
	case model.KindMap:
		if r.Elem.Kind == model.KindString {
			return appendTo(rt("AppendStringMap").Call(b, src)), nil
		}
		i, k := fmt.Sprintf("i%d", depth), fmt.Sprintf("k%d", depth)
		inner, err := e.appendValue(r.Elem, jen.Add(src).Index(jen.Id(k)), false, false, depth+1)
		if err != nil {
			return nil, err
		}
		body := []jen.Code{
			jen.If(jen.Id(i).Op(">").Lit(0)).Block(appendByte(',')),
			jen.Id("b").Op("=").Add(rt("AppendString")).Call(b, jen.Id(k)),
			appendByte(':'),
		}
		body = append(body, inner...)
		return []jen.Code{
			appendByte('{'),
			jen.For(jen.List(jen.Id(i), jen.Id(k)).Op(":=").Range().Qual("slices", "Sorted").Call(jen.Qual("maps", "Keys").Call(src))).Block(body...),
			appendByte('}'),
		}, nil
	}
	return nil, fmt.Errorf("type kind %d cannot be encoded", r.Kind)
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

// absent is the negation of present: the field is left out.
func absent(fd *model.Field, src jen.Code) jen.Code {
	if fd.Pointer {
		return jen.Add(src).Op("==").Nil()
	}
	switch fd.Ref.Kind {
	case model.KindString, model.KindEnum:
		return jen.Add(src).Op("==").Lit("")
	case model.KindInt32, model.KindInt64, model.KindFloat:
		return jen.Add(src).Op("==").Lit(0)
	case model.KindBool:
		return jen.Op("!").Add(src)
	case model.KindRaw:
		return jen.Len(src).Op("==").Lit(0)
	}
	return jen.Add(src).Op("==").Nil()
}

// commas tracks, while the members of an object are emitted, whether a
// member has been written before the next one for certain, certainly not,
// or maybe (only optional members so far): only then is the comma decided
// at run time.
type commas int

const (
	commaNever commas = iota
	commaAlways
	commaMaybe
)

// key appends the member name, with the comma the state asks for.
func (c commas) key(name string) jen.Code {
	quoted := `"` + name + `":`
	switch c {
	case commaNever:
		return jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit(quoted).Op("..."))
	case commaAlways:
		return jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit(","+quoted).Op("..."))
	}
	return jen.Id("b").Op("=").Add(rt("AppendKey")).Call(jen.Id("b"), jen.Id("open"), jen.Lit(quoted))
}

// after is the state after a member that was written (always) or may have
// been (not always).
func (c commas) after(always bool) commas {
	if always || c == commaAlways {
		return commaAlways
	}
	return commaMaybe
}

func genEncode(f *jen.File, t *model.Type) error {
	var enc encoder
	var body []jen.Code
	state := commaNever
	usesOpen := false
	key := func(name string) jen.Code {
		if state == commaMaybe {
			usesOpen = true
		}
		return state.key(name)
	}
	for _, fd := range t.Fields {
		var val []jen.Code
		var err error
		if fd.Pointer {
			val, err = enc.appendValue(fd.Ref, jen.Op("*").Id("x").Dot(fd.GoName), true, true, 0)
		} else {
			val, err = enc.appendValue(fd.Ref, jen.Id("x").Dot(fd.GoName), true, true, 0)
		}
		if err != nil {
			return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, fd.GoName, err)
		}
		if fd.Required && fd.Ref.Kind == model.KindStruct && !fd.Pointer {
			// A required free object is written as {} when nil (arrays and
			// maps are written as [] and {} by their loops).
			val = []jen.Code{jen.If(jen.Id("x").Dot(fd.GoName).Op("==").Nil()).Block(
				jen.Id("b").Op("=").Append(jen.Id("b"), jen.Lit("{}").Op("...")),
			).Else().Block(val...)}
		}
		stmts := append([]jen.Code{key(fd.JSON)}, val...)
		if fd.Required {
			// Required members are always written.
			body = append(body, stmts...)
			state = state.after(true)
			continue
		}
		body = append(body, jen.If(present(fd, jen.Id("x").Dot(fd.GoName))).Block(stmts...))
		state = state.after(false)
	}
	if o := t.OneOf; o != nil {
		var cases []jen.Code
		for _, m := range o.Members {
			var val []jen.Code
			var err error
			switch {
			case m.Wrapper == "":
				val, err = enc.appendValue(m.Ref, jen.Id("m"), true, true, 0)
			case m.Ref.Kind == model.KindValue:
				val, err = enc.appendValue(m.Ref, jen.Id("m").Dot("Value"), true, true, 0)
			default:
				val, err = enc.appendValue(m.Ref, jen.Add(goType(m.Ref, true)).Call(jen.Id("m")), true, false, 0)
			}
			if err != nil {
				return fmt.Errorf("%s: %s.%s: %w", t.Source, t.Name, m.JSON, err)
			}
			cases = append(cases, jen.Case(jen.Id(memberGoType(m))).Block(append([]jen.Code{key(m.JSON)}, val...)...))
		}
		body = append(body, jen.Switch(jen.Id("m").Op(":=").Id("x").Dot(o.GoName).Assert(jen.Type())).Block(cases...))
	}
	head := []jen.Code{}
	if enc.fails {
		head = append(head, jen.Var().Id("err").Error())
	}
	head = append(head, appendByte('{'))
	if usesOpen {
		head = append(head, jen.Id("open").Op(":=").Len(jen.Id("b")))
	}
	body = append(head, body...)
	body = append(body, appendByte('}'), jen.Return(jen.Id("b"), jen.Nil()))
	cmt(f, "AppendJSON appends the wire form of x to b, as MarshalJSON encodes it, so\nthat an envelope around it is built in one buffer. Optional members at\ntheir zero value are left out, as in ProtoJSON.")
	f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("AppendJSON").Params(jen.Id("b").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
	cmt(f, "MarshalJSON encodes x in its wire form.")
	f.Func().Params(jen.Id("x").Id(t.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Id("x").Dot("AppendJSON").Call(jen.Nil())),
	)
	return nil
}
