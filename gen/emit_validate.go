package gen

import (
	"crypto/sha256"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

// checker emits the validation checks of one package.
type checker struct {
	// patterns collects the package's regular expressions, by variable name.
	patterns map[string]string
	// errors is the package's error-token table, for x-error-info.
	errors []*model.ErrorToken
	// reasons says a member needs errorInfoReasons, reasonsDone that it
	// has been emitted.
	reasons, reasonsDone bool
	// shallow is set while a checkAt is emitted: objects are not checked
	// there (see validateBody).
	shallow bool
}

func newChecker(errs []*model.ErrorToken) *checker {
	return &checker{patterns: map[string]string{}, errors: errs}
}

// patternVar names the package variable holding the compiled pattern p.
func (ck *checker) patternVar(p string) string {
	sum := sha256.Sum256([]byte(p))
	name := fmt.Sprintf("pattern%x", sum[:4])
	ck.patterns[name] = p
	return name
}

func add(p jen.Code, rule, msg string) jen.Code {
	return jen.Id("v").Dot("Add").Call(p, jen.Lit(rule), jen.Lit(msg))
}

func addf(p jen.Code, rule string, msg jen.Code) jen.Code {
	return jen.Id("v").Dot("Add").Call(p, jen.Lit(rule), msg)
}

// literalPattern recognises patterns that are a plain prefix, suffix or
// exact literal, which are checked without regexp.
func literalPattern(p string) (lit string, prefix, suffix bool, ok bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false, false, false
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	begin, end := false, false
	var l []rune
	for i, s := range subs {
		switch {
		case s.Op == syntax.OpBeginText && i == 0:
			begin = true
		case s.Op == syntax.OpEndText && i == len(subs)-1:
			end = true
		case s.Op == syntax.OpLiteral && s.Flags&syntax.FoldCase == 0 && l == nil:
			l = s.Rune
		default:
			return "", false, false, false
		}
	}
	if l == nil {
		return "", false, false, false
	}
	return string(l), begin, end, true
}

// stringChecks checks a string-typed expression against r's constraints.
func (ck *checker) stringChecks(r *model.Ref, s jen.Code, p jen.Code) []jen.Code {
	c := r.C
	var out []jen.Code
	if c.Const != nil {
		out = append(out, jen.If(jen.Add(s).Op("!=").Lit(*c.Const)).Block(add(p, "const", msgConst(*c.Const))))
	}
	if len(c.Enum) > 0 {
		var lits []jen.Code
		for _, e := range c.Enum {
			lits = append(lits, jen.Lit(e))
		}
		out = append(out, jen.Switch(s).Block(jen.Case(lits...), jen.Default().Block(add(p, "enum", msgEnum(c.Enum)))))
	}
	if c.NotConst != nil {
		out = append(out, jen.If(jen.Add(s).Op("==").Lit(*c.NotConst)).Block(add(p, "not", msgNot(*c.NotConst))))
	}
	if c.MinLength != nil {
		if *c.MinLength == 1 {
			out = append(out, jen.If(jen.Len(s).Op("==").Lit(0)).Block(add(p, "minLength", msgMinLength(1))))
		} else {
			out = append(out, jen.If(rt("RuneCount").Call(s).Op("<").Lit(*c.MinLength)).Block(add(p, "minLength", msgMinLength(*c.MinLength))))
		}
	}
	if c.MaxLength != nil {
		out = append(out, jen.If(rt("RuneCount").Call(s).Op(">").Lit(*c.MaxLength)).Block(add(p, "maxLength", fmt.Sprintf("longer than %d characters", *c.MaxLength))))
	}
	if c.Pattern != "" {
		msg := msgPattern(c.Pattern)
		if lit, pre, suf, ok := literalPattern(c.Pattern); ok {
			var cond jen.Code
			switch {
			case pre && suf:
				cond = jen.Add(s).Op("!=").Lit(lit)
			case pre:
				cond = jen.Op("!").Qual("strings", "HasPrefix").Call(s, jen.Lit(lit))
			case suf:
				cond = jen.Op("!").Qual("strings", "HasSuffix").Call(s, jen.Lit(lit))
			default:
				cond = jen.Op("!").Qual("strings", "Contains").Call(s, jen.Lit(lit))
			}
			out = append(out, jen.If(cond).Block(add(p, "pattern", msg)))
		} else if _, ok := parseSeqPattern(c.Pattern); ok {
			// A function of patterns.go reads it (seqPattern).
			out = append(out, jen.If(jen.Op("!").Id(ck.patternVar(c.Pattern)).Call(s)).Block(add(p, "pattern", msg)))
		} else {
			out = append(out, jen.If(jen.Op("!").Id(ck.patternVar(c.Pattern)).Dot("MatchString").Call(s)).Block(add(p, "pattern", msg)))
		}
	}
	switch c.Format {
	case "date-time":
		out = append(out, jen.If(jen.Op("!").Add(rt("DateTime")).Call(s)).Block(add(p, "format", msgFormat(c.Format))))
	case "uuid":
		out = append(out, jen.If(jen.Op("!").Add(rt("UUID")).Call(s)).Block(add(p, "format", msgFormat(c.Format))))
	}
	return out
}

// The messages of the checks, shared by the checks emitted for run time and
// the ones the generator settles for a zero value (zeroViolations).
func msgConst(v string) string  { return "must be " + strconv.Quote(v) }
func msgEnum(l []string) string { return "must be one of " + strings.Join(l, ", ") }
func msgNot(v string) string    { return "must not be " + strconv.Quote(v) }
func msgPattern(p string) string {
	return "does not match " + p
}

func msgMinLength(n int) string {
	if n == 1 {
		return "must not be empty"
	}
	return fmt.Sprintf("shorter than %d characters", n)
}

func msgFormat(f string) string {
	if f == "uuid" {
		return "not a UUID"
	}
	return "not an RFC 3339 date-time"
}

func msgBelow(min float64) string { return "below " + strconv.FormatFloat(min, 'f', -1, 64) }
func msgAbove(max float64) string { return "above " + strconv.FormatFloat(max, 'f', -1, 64) }

func intRange(k model.Kind) (int64, int64) {
	if k == model.KindInt32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func numberChecks(r *model.Ref, n jen.Code, p jen.Code) []jen.Code {
	var out []jen.Code
	lit := func(f float64) jen.Code {
		if r.Kind == model.KindFloat {
			return jen.Lit(f)
		}
		return jen.Lit(int(f))
	}
	if r.Kind != model.KindFloat {
		// Bounds that the Go type already enforces need no check.
		lo, hi := intRange(r.Kind)
		if r.C.Minimum != nil && *r.C.Minimum <= float64(lo) {
			r = &model.Ref{Kind: r.Kind, C: model.Constraints{Maximum: r.C.Maximum}}
		}
		if r.C.Maximum != nil && *r.C.Maximum >= float64(hi) {
			r = &model.Ref{Kind: r.Kind, C: model.Constraints{Minimum: r.C.Minimum}}
		}
	}
	if r.C.Minimum != nil {
		out = append(out, jen.If(jen.Add(n).Op("<").Add(lit(*r.C.Minimum))).Block(add(p, "minimum", msgBelow(*r.C.Minimum))))
	}
	if r.C.Maximum != nil {
		out = append(out, jen.If(jen.Add(n).Op(">").Add(lit(*r.C.Maximum))).Block(add(p, "maximum", msgAbove(*r.C.Maximum))))
	}
	return out
}

// valueChecks checks a present value (never called for an absent optional
// field); pv names the variable holding the value's path.
func (ck *checker) valueChecks(r *model.Ref, x jen.Code, pv string, depth int) []jen.Code {
	p := jen.Op("&").Id(pv)
	switch r.Kind {
	case model.KindString:
		return ck.stringChecks(r, x, p)
	case model.KindEnum:
		out := []jen.Code{jen.If(jen.Op("!").Add(x).Dot("Valid").Call()).Block(
			addf(p, "enum", jen.Lit("unknown value ").Op("+").Qual("strconv", "Quote").Call(jen.String().Call(x))))}
		return append(out, ck.stringChecks(r, jen.String().Call(x), p)...)
	case model.KindInt32, model.KindInt64, model.KindFloat:
		return numberChecks(r, x, p)
	case model.KindBool:
		if r.C.ConstBool != nil {
			return []jen.Code{jen.If(jen.Add(x).Op("!=").Lit(*r.C.ConstBool)).Block(add(p, "const", "must be "+strconv.FormatBool(*r.C.ConstBool)))}
		}
	case model.KindRaw:
		if len(r.RawKinds) > 0 {
			args := []jen.Code{jen.Id("v"), p, x}
			for _, k := range r.RawKinds {
				args = append(args, jen.Lit(k))
			}
			return []jen.Code{rt("CheckRaw").Call(args...)}
		}
	case model.KindObject:
		if ck.shallow {
			return nil // checked by the checking decoder as it read it
		}
		return []jen.Code{jen.Add(x).Dot("ValidateAt").Call(jen.Id("v"), p)}
	case model.KindArray:
		var out []jen.Code
		if n := r.C.MinItems; n != nil {
			out = append(out, jen.If(jen.Len(x).Op("<").Lit(*n)).Block(add(p, "minItems", fmt.Sprintf("fewer than %d items", *n))))
		}
		if n := r.C.MaxItems; n != nil {
			out = append(out, jen.If(jen.Len(x).Op(">").Lit(*n)).Block(add(p, "maxItems", fmt.Sprintf("more than %d items", *n))))
		}
		i := fmt.Sprintf("i%d", depth)
		ip := fmt.Sprintf("ip%d", depth)
		inner := ck.valueChecks(r.Elem, jen.Add(x).Index(jen.Id(i)), ip, depth+1)
		if r.Elem.Kind == model.KindObject && !ck.shallow {
			inner = []jen.Code{jen.Add(x).Index(jen.Id(i)).Dot("ValidateAt").Call(jen.Id("v"), jen.Op("&").Id(ip))}
		}
		if len(inner) > 0 {
			body := append([]jen.Code{jen.Id(ip).Op(":=").Id(pv).Dot("Index").Call(jen.Id(i))}, inner...)
			out = append(out, jen.For(jen.Id(i).Op(":=").Range().Add(x)).Block(body...))
		}
		return out
	case model.KindMap, model.KindStruct:
		var out []jen.Code
		if n := r.C.MinProperties; n != nil {
			out = append(out, jen.If(jen.Len(x).Op("<").Lit(*n)).Block(add(p, "minProperties", fmt.Sprintf("fewer than %d members", *n))))
		}
		if r.Kind == model.KindStruct {
			return out
		}
		k := fmt.Sprintf("k%d", depth)
		kp := fmt.Sprintf("kp%d", depth)
		// Map members are visited in Go's map order (no allocation); the
		// violations are sorted by pointer when reported.
		e := fmt.Sprintf("e%d", depth)
		var inner []jen.Code
		if r.Elem.Kind == model.KindObject {
			if !ck.shallow {
				inner = []jen.Code{jen.Id(e).Dot("ValidateAt").Call(jen.Id("v"), jen.Op("&").Id(kp))}
			}
		} else {
			inner = ck.valueChecks(r.Elem, jen.Id(e), kp, depth+1)
		}
		if len(inner) > 0 {
			body := append([]jen.Code{jen.Id(kp).Op(":=").Id(pv).Dot("Key").Call(jen.Id(k))}, inner...)
			out = append(out, jen.For(jen.List(jen.Id(k), jen.Id(e)).Op(":=").Range().Add(x)).Block(body...))
		}
		return out
	}
	return nil
}

// zeroChecks are the decoder's checks for an optional, non-pointer scalar
// that was present with its zero value, which Validate cannot tell from
// absent.
func (ck *checker) zeroChecks(fd *model.Field) []jen.Code {
	var out []jen.Code
	for _, v := range zeroViolations(fd.Ref) {
		out = append(out, add(jen.Op("&").Id("fp"), v[0], v[1]))
	}
	return out
}

// zeroViolations settles, at generation time, the rules of a scalar that its
// zero value ("", 0, false) breaks, as (rule, message) pairs in the order
// valueChecks checks them.
func zeroViolations(r *model.Ref) [][2]string {
	var out [][2]string
	c := r.C
	switch r.Kind {
	case model.KindEnum:
		valid := false
		for _, v := range r.Named.Values {
			valid = valid || v.Wire == ""
		}
		if !valid {
			out = append(out, [2]string{"enum", "unknown value " + strconv.Quote("")})
		}
		fallthrough
	case model.KindString:
		if c.Const != nil && *c.Const != "" {
			out = append(out, [2]string{"const", msgConst(*c.Const)})
		}
		if len(c.Enum) > 0 && !slices.Contains(c.Enum, "") {
			out = append(out, [2]string{"enum", msgEnum(c.Enum)})
		}
		if c.NotConst != nil && *c.NotConst == "" {
			out = append(out, [2]string{"not", msgNot("")})
		}
		if c.MinLength != nil && *c.MinLength > 0 {
			out = append(out, [2]string{"minLength", msgMinLength(*c.MinLength)})
		}
		if re, err := regexp.Compile(c.Pattern); c.Pattern != "" && (err != nil || !re.MatchString("")) {
			out = append(out, [2]string{"pattern", msgPattern(c.Pattern)})
		}
		if c.Format == "date-time" || c.Format == "uuid" {
			out = append(out, [2]string{"format", msgFormat(c.Format)})
		}
	case model.KindInt32, model.KindInt64, model.KindFloat:
		if c.Minimum != nil && *c.Minimum > 0 {
			out = append(out, [2]string{"minimum", msgBelow(*c.Minimum)})
		}
		if c.Maximum != nil && *c.Maximum < 0 {
			out = append(out, [2]string{"maximum", msgAbove(*c.Maximum)})
		}
	case model.KindBool:
		if c.ConstBool != nil && *c.ConstBool {
			out = append(out, [2]string{"const", "must be true"})
		}
	}
	return out
}

func zeroValue(r *model.Ref) jen.Code {
	switch r.Kind {
	case model.KindString, model.KindEnum:
		return jen.Lit("")
	case model.KindBool:
		return jen.False()
	}
	return jen.Lit(0)
}

func (ck *checker) genValidate(f *jen.File, types []*model.Type) error {
	for _, t := range types {
		if t.Kind != model.KindObject {
			continue
		}
		var body []jen.Code
		if holdsObjects(t) {
			// ValidateAt is checkAt, the rules a checking decoder runs as
			// each object's reading ends, and the rules of the members
			// holding objects, which the checking decoder runs elsewhere.
			own, err := ck.validateBody(t, ownRules)
			if err != nil {
				return err
			}
			cmt(f, "checkAt records the rules of x's own members: ValidateAt without the\nobjects x holds, which a checking decoder (Decoder.Checking) has checked\nas it read them.")
			f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("checkAt").Params(sigParams(
				len("func (x *) checkAt(v *runtime.Validator, p *runtime.Path) {")+len(t.Name),
				jen.Id("v").Op("*").Add(rt("Validator")), jen.Id("p").Op("*").Add(rt("Path")))...).Block(own...)
			rest, err := ck.validateBody(t, objectRules)
			if err != nil {
				return err
			}
			body = append([]jen.Code{jen.Id("x").Dot("checkAt").Call(jen.Id("v"), jen.Id("p"))}, rest...)
		} else {
			all, err := ck.validateBody(t, allRules)
			if err != nil {
				return err
			}
			body = all
		}
		if ck.reasons && !ck.reasonsDone {
			ck.reasonsDone = true
			ck.genReasons(f)
		}
		cmt(f, fmt.Sprintf("ValidateAt records at p every rule of the %s schema that x breaks.\nIt is for generated code; call Validate.", t.Name))
		f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("ValidateAt").Params(sigParams(
			len("func (x *) ValidateAt(v *runtime.Validator, p *runtime.Path) {")+len(t.Name),
			jen.Id("v").Op("*").Add(rt("Validator")), jen.Id("p").Op("*").Add(rt("Path")))...).Block(body...)
		cmt(f, fmt.Sprintf("Validate checks x against every rule of the %s schema and returns a\n*ValidationError listing each violation, or nil. Required members that x\nalways marshals (numbers, booleans, maps, strings that may be empty)\ncount as present.", t.Name))
		f.Func().Params(jen.Id("x").Op("*").Id(t.Name)).Id("Validate").Params().Error().Block(
			jen.Var().Id("v").Add(rt("Validator")),
			jen.Id("x").Dot("ValidateAt").Call(jen.Op("&").Id("v"), jen.Nil()),
			jen.Return(jen.Id("v").Dot("Err").Call()),
		)
	}
	return nil
}

// rulePart says which of a type's rules validateBody emits.
type rulePart int

const (
	// allRules: ValidateAt of a type that holds no object.
	allRules rulePart = iota
	// ownRules: checkAt, without the members a checking decoder checked
	// (streamed ones, objects nested in the others, pointer members of the
	// oneof group).
	ownRules
	// objectRules: the rest of ValidateAt after checkAt, the rules of the
	// members holding objects.
	objectRules
)

// validateBody gives the statements that check part of t's rules.
func (ck *checker) validateBody(t *model.Type, part rulePart) ([]jen.Code, error) {
	shallow := part == ownRules
	ck.shallow = shallow
	defer func() { ck.shallow = false }()
	var body []jen.Code
	for _, fd := range t.Fields {
		holds := streamed(fd) || refHoldsObject(fd.Ref)
		if (shallow && streamed(fd)) || (part == objectRules && !holds) {
			continue
		}
		fp := jen.Op("&").Id("fp")
		x := jen.Id("x").Dot(fd.GoName)
		var checks []jen.Code
		val := jen.Code(x)
		if fd.Pointer {
			val = jen.Op("*").Add(x)
		}
		ref := fd.Ref
		if fd.Required && !fd.Pointer && ref.Kind == model.KindString && ref.C.MinLength != nil && *ref.C.MinLength == 1 {
			// Present means non-empty here: minLength 1 holds already.
			cp := *ref
			cp.C.MinLength = nil
			ref = &cp
		}
		inner := ck.valueChecks(ref, val, "fp", 0)
		if fd.Ref.Kind == model.KindObject && !shallow {
			inner = []jen.Code{jen.Add(x).Dot("ValidateAt").Call(jen.Id("v"), fp)}
		}
		if t.Discriminated != nil && t.Discriminated.Field == fd {
			inner = append(inner, ck.discriminatedChecks(t.Discriminated)...)
		}
		switch {
		case fd.Required && !invisibleWhenMissing(fd):
			// An empty string breaks the rules its zero value breaks
			// ("must not be empty"); the decoder reports a member that
			// is not there as missing.
			onAbsent := []jen.Code{add(fp, "required", "missing property \""+fd.JSON+"\"")}
			if k := fd.Ref.Kind; !fd.Pointer && (k == model.KindString || k == model.KindEnum) {
				if zv := zeroViolations(fd.Ref); len(zv) > 0 {
					onAbsent = nil
					for _, z := range zv {
						onAbsent = append(onAbsent, add(fp, z[0], z[1]))
					}
				}
			}
			missing := jen.If(absent(fd, x)).Block(onAbsent...)
			if len(inner) > 0 {
				missing = missing.Else().Block(inner...)
			}
			checks = append(checks, missing)
		case fd.Required:
			checks = inner
		default:
			if len(inner) > 0 {
				checks = append(checks, jen.If(present(fd, x)).Block(inner...))
			}
		}
		if t.Discriminated != nil && t.Discriminated.Field == fd && !fd.Required {
			checks = append(checks, jen.If(absent(fd, x)).Block(discriminatedMissing(t.Discriminated)...))
		}
		if fd.ErrorInfoCode != "" {
			c, err := ck.errorInfoCheck(t, fd)
			if err != nil {
				return nil, err
			}
			checks = append(checks, c)
		}
		if len(checks) == 0 {
			continue
		}
		body = append(body, jen.Block(append([]jen.Code{fieldPath(fd.JSON)}, checks...)...))
	}
	if o := t.OneOf; o != nil {
		var cases []jen.Code
		for _, m := range o.Members {
			fp := jen.Op("&").Id("fp")
			var inner []jen.Code
			holds := m.Wrapper == "" || refHoldsObject(m.Ref)
			switch {
			case m.Wrapper == "" && shallow:
				// The checking decoder checked it.
			case part == objectRules && !holds:
			case m.Wrapper == "":
				inner = []jen.Code{jen.If(jen.Id("m").Op("==").Nil()).Block(add(jen.Id("p"), "oneOf", "member \""+m.JSON+"\" is a nil pointer")).Else().Block(
					jen.Id("m").Dot("ValidateAt").Call(jen.Id("v"), fp))}
			case m.Ref.Kind == model.KindValue:
			default:
				inner = ck.valueChecks(m.Ref, jen.Add(goType(m.Ref, true)).Call(jen.Id("m")), "fp", 0)
			}
			if len(inner) == 0 {
				continue // a member with no rule of its own
			}
			cases = append(cases, jen.Case(jen.Id(memberGoType(m))).Block(append([]jen.Code{fieldPath(m.JSON)}, inner...)...))
		}
		none := add(jen.Id("p"), "oneOf", "exactly one of "+memberList(o)+" is required")
		switch {
		case part == objectRules:
			// checkAt checked that one member is set.
			if len(cases) > 0 {
				body = append(body, jen.Switch(jen.Id("m").Op(":=").Id("x").Dot(o.GoName).Assert(jen.Type())).Block(cases...))
			}
		case len(cases) == 0:
			body = append(body, jen.If(jen.Id("x").Dot(o.GoName).Op("==").Nil()).Block(none))
		default:
			cases = append(cases, jen.Case(jen.Nil()).Block(none))
			body = append(body, jen.Switch(jen.Id("m").Op(":=").Id("x").Dot(o.GoName).Assert(jen.Type())).Block(cases...))
		}
	}
	return body, nil
}

// errorInfoCheck checks the data member fd of a JSON-RPC error object (see
// model.Field.ErrorInfoCode).
func (ck *checker) errorInfoCheck(t *model.Type, fd *model.Field) (jen.Code, error) {
	var code *model.Field
	for _, c := range t.Fields {
		if c.JSON == fd.ErrorInfoCode {
			code = c
		}
	}
	switch {
	case code == nil || code.Pointer || (code.Ref.Kind != model.KindInt32 && code.Ref.Kind != model.KindInt64):
		return nil, fmt.Errorf("%s: %s.%s: x-error-info names %q, which is not an integer member", t.Source, t.Name, fd.JSON, fd.ErrorInfoCode)
	case fd.Ref.Kind != model.KindValue:
		return nil, fmt.Errorf("%s: %s.%s: x-error-info is for a member holding any JSON value", t.Source, t.Name, fd.JSON)
	case ck.errors == nil:
		return nil, fmt.Errorf("%s: %s.%s: x-error-info needs the package's error table", t.Source, t.Name, fd.JSON)
	}
	if ck.reasons {
		return nil, fmt.Errorf("%s: %s.%s: x-error-info is supported on one member per package", t.Source, t.Name, fd.JSON)
	}
	ck.reasons = true
	c := jen.Int64().Call(jen.Id("x").Dot(code.GoName))
	return rt("CheckErrorInfo").Call(jen.Id("v"), jen.Op("&").Id("fp"), c, jen.Id("x").Dot(fd.GoName), jen.Id("errorInfoReasons").Call(c)), nil
}

// genReasons emits errorInfoReasons, which gives the ErrorInfo reasons of
// the error codes of the A2A range that the error table assigns.
func (ck *checker) genReasons(f *jen.File) {
	byCode := map[int][]string{}
	var codes []int
	for _, e := range ck.errors {
		if e.Code > -32001 || e.Code < -32099 {
			continue
		}
		if byCode[e.Code] == nil {
			codes = append(codes, e.Code)
		}
		byCode[e.Code] = append(byCode[e.Code], strings.ToUpper(e.Token))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(codes)))
	var cases []jen.Code
	for _, c := range codes {
		cases = append(cases, jen.Case(jen.Lit(c)).Block(jen.Return(jen.Lit(strings.Join(byCode[c], " ")))))
	}
	cmt(f, "errorInfoReasons returns the ErrorInfo reasons an A2A error of code may\ncarry, separated by spaces: the upper-case tokens of the code in the error\ntable (one code has a token in each profile that uses it). It returns \"\"\nfor a code the table does not assign.")
	f.Func().Id("errorInfoReasons").Params(jen.Id("code").Int64()).String().Block(
		jen.Switch(jen.Id("code")).Block(cases...),
		jen.Return(jen.Lit("")),
	)
}

func (ck *checker) discriminatedChecks(d *model.Discriminated) []jen.Code {
	var cases []jen.Code
	for _, c := range d.Cases {
		cases = append(cases, jen.Case(jen.Lit(c.Value)).Block(
			jen.Var().Id("params").Add(named(c.Type)),
			rt("DecodeAt").Call(jen.Id("v"), jen.Op("&").Id("fp"), jen.Id("x").Dot(d.Field.GoName),
				jen.Func().Params(jen.Id("d").Op("*").Add(rt("Decoder")), jen.Id("p").Op("*").Add(rt("Path"))).Block(
					jen.Id("params").Op("=").Add(named(c.Type)).Values(),
					jen.Id("params").Dot("DecodeJSONAt").Call(jen.Id("d"), jen.Id("p")),
				)),
		))
	}
	return []jen.Code{jen.Switch(jen.String().Call(jen.Id("x").Dot(d.Key.GoName))).Block(cases...)}
}

func discriminatedMissing(d *model.Discriminated) []jen.Code {
	var lits []jen.Code
	for _, c := range d.Cases {
		if c.Required {
			lits = append(lits, jen.Lit(c.Value))
		}
	}
	if len(lits) == 0 {
		return nil
	}
	return []jen.Code{jen.Switch(jen.String().Call(jen.Id("x").Dot(d.Key.GoName))).Block(
		jen.Case(lits...).Block(add(jen.Op("&").Id("fp"), "required", "missing property \""+d.Field.JSON+"\"")),
	)}
}

func genPatterns(f *jen.File, pats map[string]string) {
	names := make([]string, 0, len(pats))
	for n := range pats {
		names = append(names, n)
	}
	sort.Strings(names)
	var compiled []string
	for _, n := range names {
		sp, ok := parseSeqPattern(pats[n])
		if !ok {
			compiled = append(compiled, n)
			continue
		}
		f.Comment(n + " reports whether s matches the pattern below, reading it once,")
		f.Comment("left to right:")
		for p := pats[n]; p != ""; {
			line := p[:min(len(p), 90)]
			f.Comment("  " + line)
			p = p[len(line):]
		}
		f.Func().Id(n).Params(jen.Id("s").String()).Bool().Block(sp.matchFunc()...)
	}
	if len(compiled) == 0 {
		return
	}
	f.Var().DefsFunc(func(g *jen.Group) {
		for _, n := range compiled {
			g.Id(n).Op("=").Qual("regexp", "MustCompile").Call(jen.Lit(pats[n]))
		}
	})
}
