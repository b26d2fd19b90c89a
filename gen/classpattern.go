package gen

import (
	"strings"

	"github.com/dave/jennifer/jen"
)

// classPattern is a pattern of the form ^[class]+$ or ^[class]*$ over ASCII:
// every byte of the string belongs to one of the ranges.
type classPattern struct {
	ranges   [][2]byte // inclusive
	nonEmpty bool
}

// parseClassPattern recognises ^[class]+$ and ^[class]*$ where the class
// holds ASCII letters, digits and punctuation, single or as ranges (a-z), a
// '-' only first or last. Anything else (negation, escapes, other
// quantifiers) is not recognised: the caller falls back to regexp.
func parseClassPattern(p string) (classPattern, bool) {
	var cp classPattern
	body, ok := strings.CutPrefix(p, "^[")
	if !ok {
		return cp, false
	}
	switch {
	case strings.HasSuffix(body, "]+$"):
		cp.nonEmpty = true
		body = strings.TrimSuffix(body, "]+$")
	case strings.HasSuffix(body, "]*$"):
		body = strings.TrimSuffix(body, "]*$")
	default:
		return cp, false
	}
	if body == "" || body[0] == '^' || strings.ContainsAny(body, `\[]`) {
		return cp, false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c < 0x21 || c > 0x7e {
			return cp, false
		}
		if i+2 < len(body) && body[i+1] == '-' {
			hi := body[i+2]
			if hi < c || hi > 0x7e {
				return cp, false
			}
			cp.ranges = append(cp.ranges, [2]byte{c, hi})
			i += 2
			continue
		}
		if c == '-' && i != 0 && i != len(body)-1 {
			return cp, false
		}
		cp.ranges = append(cp.ranges, [2]byte{c, c})
	}
	return cp, true
}

// matchFunc emits the body of func(s string) bool matching the pattern
// byte by byte.
func (cp classPattern) matchFunc() []jen.Code {
	var conds []jen.Code
	for _, r := range cp.ranges {
		if r[0] == r[1] {
			conds = append(conds, jen.Id("c").Op("==").LitRune(rune(r[0])))
		} else {
			conds = append(conds, jen.LitRune(rune(r[0])).Op("<=").Id("c").Op("&&").Id("c").Op("<=").LitRune(rune(r[1])))
		}
	}
	var in jen.Code = conds[0]
	for _, c := range conds[1:] {
		in = jen.Add(in).Op("||").Line().Add(c)
	}
	var body []jen.Code
	if cp.nonEmpty {
		body = append(body, jen.If(jen.Id("s").Op("==").Lit("")).Block(jen.Return(jen.False())))
	}
	body = append(body,
		jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Len(jen.Id("s")), jen.Id("i").Op("++")).Block(
			jen.Id("c").Op(":=").Id("s").Index(jen.Id("i")),
			jen.If(jen.Op("!").Parens(in)).Block(jen.Return(jen.False())),
		),
		jen.Return(jen.True()),
	)
	return body
}
