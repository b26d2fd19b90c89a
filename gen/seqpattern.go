package gen

import (
	"regexp/syntax"

	"github.com/dave/jennifer/jen"
)

// seqPattern is a pattern the validators check without regexp: anchored at
// both ends, a sequence of ASCII byte classes, each repeated between min
// and max times, and optional groups of such. It is recognised only when a
// greedy left-to-right reading decides it: what a repetition of variable
// length or an optional group could take, what follows it could not begin
// with, so the reading never has to take a step back. A timestamp pattern
// such as ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](\.[0-9]{1,9})?Z$
// is one; ^[0-9]{1,3}[0-9]$ is not (it stays a regexp).
type seqPattern struct {
	items []seqItem
}

// seqItem is a class repeated min to max times (max -1: no bound), or an
// optional group of items (group non-nil).
type seqItem struct {
	class    byteSet
	min, max int
	group    []seqItem
}

// byteSet is a set of bytes.
type byteSet [256]bool

func (s *byteSet) union(o *byteSet) {
	for i := range s {
		s[i] = s[i] || o[i]
	}
}

func (s *byteSet) meets(o *byteSet) bool {
	for i := range s {
		if s[i] && o[i] {
			return true
		}
	}
	return false
}

// seqRepeatMax bounds the counts parseSeqPattern accepts, as regexp/syntax
// bounds its own repetitions.
const seqRepeatMax = 1000

// parseSeqPattern recognises a seqPattern.
func parseSeqPattern(p string) (seqPattern, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil || re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return seqPattern{}, false
	}
	subs := re.Sub
	if subs[0].Op != syntax.OpBeginText || subs[len(subs)-1].Op != syntax.OpEndText {
		return seqPattern{}, false
	}
	items, ok := seqItems(subs[1:len(subs)-1], true)
	if !ok || len(items) == 0 {
		return seqPattern{}, false
	}
	var end byteSet
	if _, ok := checkSeq(items, end); !ok {
		return seqPattern{}, false
	}
	return seqPattern{items: items}, true
}

// seqItems turns a concatenation's parts into items; groups are allowed
// only at the top level.
func seqItems(subs []*syntax.Regexp, groups bool) ([]seqItem, bool) {
	var out []seqItem
	for _, s := range subs {
		switch s.Op {
		case syntax.OpLiteral:
			if s.Flags&syntax.FoldCase != 0 {
				return nil, false
			}
			for _, r := range s.Rune {
				if r >= 0x80 {
					return nil, false
				}
				var c byteSet
				c[r] = true
				out = append(out, seqItem{class: c, min: 1, max: 1})
			}
		case syntax.OpCharClass:
			c, ok := classSet(s)
			if !ok {
				return nil, false
			}
			out = append(out, seqItem{class: c, min: 1, max: 1})
		case syntax.OpRepeat, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
			if s.Flags&syntax.NonGreedy != 0 {
				return nil, false
			}
			lo, hi := s.Min, s.Max
			switch s.Op {
			case syntax.OpStar:
				lo, hi = 0, -1
			case syntax.OpPlus:
				lo, hi = 1, -1
			case syntax.OpQuest:
				lo, hi = 0, 1
			}
			if hi > seqRepeatMax || lo > seqRepeatMax || (hi >= 0 && hi < lo) {
				return nil, false
			}
			sub := s.Sub[0]
			if sub.Op == syntax.OpCapture {
				sub = sub.Sub[0]
			}
			if one, ok := singleByte(sub); ok {
				out = append(out, seqItem{class: one, min: lo, max: hi})
				continue
			}
			// An optional group: (…)?
			if s.Op != syntax.OpQuest || !groups {
				return nil, false
			}
			parts := []*syntax.Regexp{sub}
			if sub.Op == syntax.OpConcat {
				parts = sub.Sub
			}
			inner, ok := seqItems(parts, false)
			if !ok || len(inner) == 0 || inner[0].min == 0 {
				return nil, false
			}
			out = append(out, seqItem{group: inner})
		case syntax.OpCapture:
			parts := []*syntax.Regexp{s.Sub[0]}
			if s.Sub[0].Op == syntax.OpConcat {
				parts = s.Sub[0].Sub
			}
			inner, ok := seqItems(parts, groups)
			if !ok {
				return nil, false
			}
			out = append(out, inner...)
		default:
			return nil, false
		}
	}
	return out, true
}

// singleByte returns the set of a pattern that matches one ASCII byte.
func singleByte(re *syntax.Regexp) (byteSet, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 1 && re.Rune[0] < 0x80 && re.Flags&syntax.FoldCase == 0 {
			var c byteSet
			c[re.Rune[0]] = true
			return c, true
		}
	case syntax.OpCharClass:
		return classSet(re)
	}
	return byteSet{}, false
}

// classSet returns the bytes of a character class, which must be ASCII.
func classSet(re *syntax.Regexp) (byteSet, bool) {
	var c byteSet
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi >= 0x80 {
			return byteSet{}, false
		}
		for r := lo; r <= hi; r++ {
			c[r] = true
		}
	}
	return c, true
}

// checkSeq reports whether items followed by what may begin with follow
// (empty: the end of the string) read deterministically, and returns what
// items may begin with, follow included when they may match nothing.
func checkSeq(items []seqItem, follow byteSet) (byteSet, bool) {
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if it.group != nil {
			first, ok := checkSeq(it.group, follow)
			if !ok || first.meets(&follow) {
				return byteSet{}, false
			}
			first.union(&follow)
			follow = first
			continue
		}
		if it.min != it.max && it.class.meets(&follow) {
			return byteSet{}, false
		}
		next := it.class
		if it.min == 0 {
			next.union(&follow)
		}
		follow = next
	}
	return follow, true
}

// match interprets the pattern the way the emitted function reads.
func (sp seqPattern) match(s string) bool {
	i, ok := matchItems(sp.items, s, 0)
	return ok && i == len(s)
}

func matchItems(items []seqItem, s string, i int) (int, bool) {
	for _, it := range items {
		if it.group != nil {
			if i < len(s) && firstOf(it.group)[s[i]] {
				var ok bool
				if i, ok = matchItems(it.group, s, i); !ok {
					return i, false
				}
			}
			continue
		}
		n := 0
		for (it.max < 0 || n < it.max) && i < len(s) && it.class[s[i]] {
			i++
			n++
		}
		if n < it.min {
			return i, false
		}
	}
	return i, true
}

// firstOf is what a group begins with: its first item's class (a group's
// first item matches at least once).
func firstOf(group []seqItem) *byteSet { return &group[0].class }

// matchFunc emits the body of func(s string) bool reading the string once,
// left to right.
func (sp seqPattern) matchFunc() []jen.Code {
	body := []jen.Code{jen.Id("i").Op(":=").Lit(0)}
	if needsCount(sp.items) {
		body = append(body, jen.Var().Id("n").Int())
	}
	body = append(body, emitItems(sp.items)...)
	return append(body, jen.Return(jen.Id("i").Op("==").Len(jen.Id("s"))))
}

func needsCount(items []seqItem) bool {
	for _, it := range items {
		if it.group != nil && needsCount(it.group) || it.group == nil && !(it.min == 1 && it.max == 1) {
			return true
		}
	}
	return false
}

func emitItems(items []seqItem) []jen.Code {
	var out []jen.Code
	at := jen.Id("s").Index(jen.Id("i"))
	for _, it := range items {
		switch {
		case it.group != nil:
			out = append(out, jen.If(jen.Id("i").Op("<").Len(jen.Id("s")).Op("&&").Parens(classCond(firstOf(it.group), at))).Block(emitItems(it.group)...))
		case it.min == 1 && it.max == 1:
			out = append(out, jen.If(jen.Id("i").Op(">=").Len(jen.Id("s")).Op("||").Op("!").Parens(classCond(&it.class, at))).Block(jen.Return(jen.False())),
				jen.Id("i").Op("++"))
		default:
			cond := jen.Id("i").Op("<").Len(jen.Id("s")).Op("&&").Parens(classCond(&it.class, at))
			if it.max >= 0 {
				cond = jen.Id("n").Op("<").Lit(it.max).Op("&&").Add(cond)
			}
			out = append(out, jen.For(jen.Id("n").Op("=").Lit(0), cond, jen.Id("n").Op("++")).Block(jen.Id("i").Op("++")))
			if it.min > 0 {
				out = append(out, jen.If(jen.Id("n").Op("<").Lit(it.min)).Block(jen.Return(jen.False())))
			}
		}
	}
	return out
}

// classCond is the condition that byte c is in set, as ranges.
func classCond(set *byteSet, c jen.Code) jen.Code {
	var conds []jen.Code
	for lo := 0; lo < 256; lo++ {
		if !set[lo] {
			continue
		}
		hi := lo
		for hi+1 < 256 && set[hi+1] {
			hi++
		}
		if lo == hi {
			conds = append(conds, jen.Add(c).Op("==").LitRune(rune(lo)))
		} else {
			conds = append(conds, jen.LitRune(rune(lo)).Op("<=").Add(c).Op("&&").Add(c).Op("<=").LitRune(rune(hi)))
		}
		lo = hi
	}
	out := conds[0]
	for _, x := range conds[1:] {
		out = jen.Add(out).Op("||").Add(x)
	}
	return out
}
