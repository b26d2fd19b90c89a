package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

// Checking decodes: Validate<Type>JSON reads a document with a decoder that
// checks as it reads (runtime.Decoder.Checking). Each DecodeJSONAt then runs
// its own object's checks when it ends, so a member holding objects (an
// object, an array or a map of objects) is read into a local value that is
// checked and dropped instead of being kept, and the members' container
// rules (minItems, maxItems, minProperties) are checked where the members
// are counted. What remains for the object itself is its shallow check,
// checkAt: ValidateAt without the members the decoder checked.

// streamed reports whether a checking decoder drops member fd after checking
// it (see above).
func streamed(fd *model.Field) bool {
	switch r := fd.Ref; r.Kind {
	case model.KindObject:
		return true
	case model.KindArray, model.KindMap:
		return r.Elem.Kind == model.KindObject
	}
	return false
}

// holdsObjects reports whether t has a member whose checks a checking
// decoder runs elsewhere, so that its shallow check differs from ValidateAt.
func holdsObjects(t *model.Type) bool {
	for _, fd := range t.Fields {
		if streamed(fd) || refHoldsObject(fd.Ref) {
			return true
		}
	}
	if t.OneOf != nil {
		for _, m := range t.OneOf.Members {
			if m.Wrapper == "" || refHoldsObject(m.Ref) {
				return true
			}
		}
	}
	return false
}

func refHoldsObject(r *model.Ref) bool {
	switch r.Kind {
	case model.KindObject:
		return true
	case model.KindArray, model.KindMap:
		return refHoldsObject(r.Elem)
	}
	return false
}

// checkCall is the statement that ends DecodeJSONAt: a checking decoder,
// and one that stops at the first violation, run the object's own checks
// (Decoder.ChecksEach).
func checkCall(t *model.Type) jen.Code {
	method := "ValidateAt"
	if holdsObjects(t) {
		method = "checkAt"
	}
	return jen.If(dec().Dot("ChecksEach").Call()).Block(
		jen.Id("x").Dot(method).Call(dec().Dot("Validator").Call(), jen.Id("p")))
}

// checkingBody gives the statements a checking decoder runs for a struct
// member of type r that holds objects (see streamed), in place of those that
// keep it: read each object into a local value (which checks itself), count
// them and check the container's rules. The object, array or map is open
// (the caller's condition); the member's path is fp.
func checkingBody(r *model.Ref) []jen.Code {
	fp := jen.Op("&").Id("fp")
	addRule := func(rule, msg string) jen.Code {
		return dec().Dot("Validator").Call().Dot("Add").Call(fp, jen.Lit(rule), jen.Lit(msg))
	}
	switch r.Kind {
	case model.KindObject:
		return []jen.Code{
			jen.Var().Id("m").Add(named(r.Named)),
			jen.Id("m").Dot("DecodeJSONAt").Call(dec(), fp),
		}
	case model.KindArray:
		out := []jen.Code{jen.Id("n").Op(":=").Lit(0),
			jen.For(jen.Id("it0").Dot("Next").Call(dec())).Block(
				jen.Var().Id("e0").Add(named(r.Elem.Named)),
				jen.Id("e0").Dot("DecodeJSONAt").Call(dec(), jen.Id("it0").Dot("At").Call()),
				jen.Id("n").Op("++"),
			)}
		if n := r.C.MinItems; n != nil {
			out = append(out, jen.If(jen.Id("n").Op("<").Lit(*n)).Block(addRule("minItems", fmt.Sprintf("fewer than %d items", *n))))
		}
		if n := r.C.MaxItems; n != nil {
			out = append(out, jen.If(jen.Id("n").Op(">").Lit(*n)).Block(addRule("maxItems", fmt.Sprintf("more than %d items", *n))))
		}
		return out
	case model.KindMap:
		out := []jen.Code{
			jen.Var().Id("keys0").Add(rt("Keys")),
			jen.Id("n").Op(":=").Lit(0),
			jen.For(jen.Id("first0").Op(":=").True(), jen.Empty(), jen.Empty()).Block(
				jen.List(jen.Id("k0"), jen.Id("ok")).Op(":=").Add(dec()).Dot("NextMember").Call(jen.Op("&").Id("first0")),
				jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
				jen.Id("kp0").Op(":=").Id("fp").Dot("Key").Call(jen.Id("k0")),
				jen.If(jen.Id("keys0").Dot("Add").Call(jen.Id("k0"))).Block(dec().Dot("Duplicate").Call(jen.Op("&").Id("kp0"))),
				jen.Var().Id("e0").Add(named(r.Elem.Named)),
				jen.Id("e0").Dot("DecodeJSONAt").Call(dec(), jen.Op("&").Id("kp0")),
				jen.Id("n").Op("++"),
			),
		}
		if n := r.C.MinProperties; n != nil {
			out = append(out, jen.If(jen.Id("n").Op("<").Lit(*n)).Block(addRule("minProperties", fmt.Sprintf("fewer than %d members", *n))))
		}
		return out
	}
	return nil
}

// orChecking puts keep, the statements that keep a member, behind a
// checking decoder's statements check, when there are any.
func orChecking(check, keep []jen.Code) []jen.Code {
	if check == nil {
		return keep
	}
	return []jen.Code{jen.If(dec().Dot("Checking").Call()).Block(check...).Else().Block(keep...)}
}
