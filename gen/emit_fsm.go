package gen

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

func genConstants(f *jen.File, c *model.ConstantSet) {
	goT := func(unit string) jen.Code {
		switch unit {
		case "ms", "s":
			return jen.Qual("time", "Duration")
		case "count":
			return jen.Int()
		case "bytes":
			return jen.Int64()
		}
		return jen.Float64()
	}
	val := func(unit string, v float64) jen.Code {
		switch unit {
		case "ms":
			if int(v)%1000 == 0 {
				return jen.Lit(int(v)/1000).Op("*").Qual("time", "Second")
			}
			return jen.Lit(int(v)).Op("*").Qual("time", "Millisecond")
		case "s":
			return jen.Lit(int(v)).Op("*").Qual("time", "Second")
		case "count":
			return jen.Lit(int(v))
		case "bytes":
			return jen.Lit(int64(v))
		}
		return jen.Lit(v)
	}
	cmt(f, doc(c.Name, c.Description))
	f.Type().Id(c.Name).StructFunc(func(g *jen.Group) {
		for _, k := range c.Constants {
			text := doc(k.Name, k.Description)
			if k.Key != "" {
				text += "\n\nSpecification name: " + k.Key + "."
			}
			cmt(g, text)
			g.Id(k.Name).Add(goT(k.Unit))
		}
		for _, l := range c.Lists {
			text := doc(l.Name, l.Description)
			if l.Key != "" {
				text += "\n\nSpecification name: " + l.Key + "."
			}
			cmt(g, text)
			g.Id(l.Name).Index().Add(goT(l.Unit))
		}
	})
	cmt(f, fmt.Sprintf("Default%s returns the reference defaults (a fresh copy each call).", c.Name))
	f.Func().Id("Default" + c.Name).Params().Id(c.Name).Block(
		jen.Return(jen.Id(c.Name).Values(jen.DictFunc(func(d jen.Dict) {
			for _, k := range c.Constants {
				d[jen.Id(k.Name)] = val(k.Unit, k.Default)
			}
			for _, l := range c.Lists {
				var items []jen.Code
				for _, v := range l.Default {
					items = append(items, val(l.Unit, v))
				}
				d[jen.Id(l.Name)] = jen.Index().Add(goT(l.Unit)).Values(items...)
			}
		}))),
	)
}

func genTransitionError(f *jen.File) {
	cmt(f, "TransitionError reports an event that a machine's table does not define in\nthe current state. The machines never ignore such an event silently.")
	f.Type().Id("TransitionError").Struct(
		jen.Id("Machine").String(),
		jen.Id("State").String(),
		jen.Id("Event").String(),
	)
	f.Func().Params(jen.Id("e").Op("*").Id("TransitionError")).Id("Error").Params().String().Block(
		jen.Return(jen.Id("e").Dot("Machine").Op("+").Lit(": no transition for event ").Op("+").Id("e").Dot("Event").Op("+").Lit(" in state ").Op("+").Id("e").Dot("State")),
	)
}

// genMachine emits the typed enums and the transition table of a machine.
func genMachine(f *jen.File, m *model.Machine) error {
	n := m.Name
	stateT, eventT, guardT, outT := n+"State", n+"Event", n+"Guard", n+"Output"
	enum := func(typ, kind string, names []model.Named, zeroDoc string) {
		cmt(f, fmt.Sprintf("%s is a%s of the %s machine.", typ, map[bool]string{true: "n", false: ""}[strings.ContainsAny(kind[:1], "aeiou")]+" "+kind, n))
		f.Type().Id(typ).Uint8()
		f.Const().DefsFunc(func(g *jen.Group) {
			if zeroDoc != "" {
				cmt(g, zeroDoc)
				g.Id(typ + "None").Id(typ).Op("=").Lit(0)
			}
			for i, x := range names {
				cmt(g, docAs(typ+x.Name, x.Description, map[string]docRole{
					"state": roleValue, "event": roleEvent, "guard": roleGuard, "output": roleOutput}[kind]))
				g.Id(typ + x.Name).Id(typ).Op("=").Lit(i + 1)
			}
		})
		quoted := []string{`""`}
		consts := []string{}
		for _, x := range names {
			quoted = append(quoted, strconv.Quote(x.Name))
			consts = append(consts, typ+x.Name)
		}
		f.Var().Id(lowerFirst(typ) + "Names").Op("=").Index(jen.Op("...")).String().Values(packed(quoted, len("var Names = [...]string{")+len(typ)))
		cmt(f, "String returns the name the table uses.")
		f.Func().Params(jen.Id("x").Id(typ)).Id("String").Params().String().Block(
			jen.If(jen.Int().Call(jen.Id("x")).Op("<").Len(jen.Id(lowerFirst(typ)+"Names"))).Block(jen.Return(jen.Id(lowerFirst(typ)+"Names").Index(jen.Id("x")))),
			jen.Return(jen.Qual("strconv", "Itoa").Call(jen.Int().Call(jen.Id("x")))),
		)
		cmt(f, fmt.Sprintf("Valid reports whether x is one of the declared %ss.", kind))
		f.Func().Params(jen.Id("x").Id(typ)).Id("Valid").Params().Bool().Block(
			jen.Return(jen.Id("x").Op(">=").Lit(1).Op("&&").Int().Call(jen.Id("x")).Op("<=").Lit(len(names))),
		)
		cmt(f, fmt.Sprintf("%ss lists every %s in table order.", typ, kind))
		f.Func().Id(typ + "s").Params().Index().Id(typ).Block(
			jen.Return(jen.Index().Id(typ).Values(packed(consts, len("\treturn []{")+len(typ)))),
		)
	}
	var states []model.Named
	for _, s := range m.States {
		states = append(states, model.Named{Name: s.Name, Description: s.Description})
	}
	text := m.Description
	if m.Origin != "" {
		text += "\n\nSource: " + m.Origin
	}
	cmt(f, fmt.Sprintf("The %s machine (schema/%s).\n\n%s", n, m.Source, text))
	f.Line()
	enum(stateT, "state", states, "")
	enum(eventT, "event", m.Events, "")
	if len(m.Guards) > 64 || len(m.Outputs) > 64 {
		return fmt.Errorf("%s: machine %s has more than 64 guards or outputs", m.Source, n)
	}
	enum(guardT, "guard", m.Guards, fmt.Sprintf("%sNone is the absent guard: a row without one always applies.", guardT))
	enum(outT, "output", m.Outputs, "")

	cmt(f, fmt.Sprintf("%sInitial is the state a new %s machine starts in.", n, n))
	f.Const().Id(n + "Initial").Op("=").Id(stateT + m.Initial)

	// Terminal, wire and tags.
	var terminal []string
	tags := map[string][]string{}
	var tagNames []string
	for _, s := range m.States {
		if s.Terminal {
			terminal = append(terminal, stateT+s.Name)
		}
		for _, t := range s.Tags {
			if tags[t] == nil {
				tagNames = append(tagNames, t)
			}
			tags[t] = append(tags[t], stateT+s.Name)
		}
	}
	sort.Strings(tagNames)
	pred := func(name, comment string, members []string) {
		cmt(f, comment)
		if len(members) == 0 {
			f.Func().Params(jen.Id(stateT)).Id(name).Params().Bool().Block(jen.Return(jen.False()))
			return
		}
		f.Func().Params(jen.Id("s").Id(stateT)).Id(name).Params().Bool().Block(
			jen.Switch(jen.Id("s")).Block(jen.Case(packed(members, len("\tcase "))).Block(jen.Return(jen.True()))),
			jen.Return(jen.False()),
		)
	}
	pred("Terminal", "Terminal reports whether s is absorbing: no transition leaves it.", terminal)
	for _, t := range tagNames {
		pred("Is"+camelTag(t), fmt.Sprintf("Is%s reports whether s carries the tag %q.", camelTag(t), t), tags[t])
	}
	hasWire := false
	for _, s := range m.States {
		if s.Wire != "" {
			hasWire = true
		}
	}
	if hasWire {
		cmt(f, "Wire returns the wire value the state stands for, or \"\".")
		f.Func().Params(jen.Id("s").Id(stateT)).Id("Wire").Params().String().Block(
			jen.Switch(jen.Id("s")).BlockFunc(func(g *jen.Group) {
				for _, s := range m.States {
					if s.Wire != "" {
						g.Case(jen.Id(stateT + s.Name)).Block(jen.Return(jen.Lit(s.Wire)))
					}
				}
			}),
			jen.Return(jen.Lit("")),
		)
		cmt(f, fmt.Sprintf("%sFromWire returns the state a wire value stands for.", stateT))
		f.Func().Id(stateT+"FromWire").Params(jen.Id("w").String()).Params(jen.Id(stateT), jen.Bool()).Block(
			jen.Switch(jen.Id("w")).BlockFunc(func(g *jen.Group) {
				for _, s := range m.States {
					if s.Wire != "" {
						g.Case(jen.Lit(s.Wire)).Block(jen.Return(jen.Id(stateT+s.Name), jen.True()))
					}
				}
			}),
			jen.Return(jen.Lit(0), jen.False()),
		)
	}

	// Sets.
	for _, x := range []struct{ typ, kind string }{{guardT, "guards"}, {outT, "outputs"}} {
		set := x.typ + "Set"
		cmt(f, fmt.Sprintf("%s is a set of %s.", set, x.kind))
		f.Type().Id(set).Uint64()
		cmt(f, "Has reports whether x is in the set.")
		f.Func().Params(jen.Id("s").Id(set)).Id("Has").Params(jen.Id("x").Id(x.typ)).Bool().Block(
			jen.Return(jen.Id("x").Op("!=").Lit(0).Op("&&").Id("s").Op("&").Parens(jen.Lit(1).Op("<<").Parens(jen.Id("x").Op("-").Lit(1))).Op("!=").Lit(0)),
		)
		cmt(f, "With returns the set with x added.")
		f.Func().Params(jen.Id("s").Id(set)).Id("With").Params(jen.Id("x").Id(x.typ)).Id(set).Block(
			jen.If(jen.Id("x").Op("==").Lit(0)).Block(jen.Return(jen.Id("s"))),
			jen.Return(jen.Id("s").Op("|").Lit(1).Op("<<").Parens(jen.Id("x").Op("-").Lit(1))),
		)
		cmt(f, "List returns the members in declaration order.")
		f.Func().Params(jen.Id("s").Id(set)).Id("List").Params().Index().Id(x.typ).Block(
			jen.Var().Id("out").Index().Id(x.typ),
			jen.For(jen.Id("x").Op(":=").Id(x.typ).Call(jen.Lit(1)), jen.Id("x").Dot("Valid").Call(), jen.Id("x").Op("++")).Block(
				jen.If(jen.Id("s").Dot("Has").Call(jen.Id("x"))).Block(jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("x"))),
			),
			jen.Return(jen.Id("out")),
		)
	}

	trT := n + "Transition"
	cmt(f, fmt.Sprintf("%s is one row of the %s table.", trT, n))
	f.Type().Id(trT).Struct(
		jen.Id("From").Id(stateT),
		jen.Id("Event").Id(eventT),
		jen.Comment("Guard is the guard that must hold, or "+guardT+"None."),
		jen.Id("Guard").Id(guardT),
		jen.Id("To").Id(stateT),
		jen.Comment("Outputs are the decisions the caller acts on."),
		jen.Id("Outputs").Id(outT+"Set"),
	)
	// The table is written as source text so that each rule's note is the
	// leading comment of its first row, and each row is one line.
	var rows strings.Builder
	rows.WriteString("{\n")
	for i, t := range m.Transitions {
		if t.Note != "" && (i == 0 || m.Transitions[i-1].Rule != t.Rule) {
			for _, line := range wrapText(t.Note, commentWidth-len("\t// ")) {
				rows.WriteString("// " + line + "\n")
			}
		}
		rows.WriteString(tableRow(m, t) + ",\n")
	}
	rows.WriteString("}")
	cmt(f, fmt.Sprintf("%sTable is the %s table: one row per (state, event, guard), a rule's\nnote before its first row.", lowerFirst(n), n))
	f.Var().Id(lowerFirst(n) + "Table").Op("=").Index(jen.Op("...")).Id(trT).Op(rows.String())
	// Index: rows by (state, event), in table order.
	type span struct{ start, n int }
	idx := make([][]span, len(m.States)+1)
	for i := range idx {
		idx[i] = make([]span, len(m.Events)+1)
	}
	sIdx := map[string]int{}
	for i, s := range m.States {
		sIdx[s.Name] = i + 1
	}
	eIdx := map[string]int{}
	for i, e := range m.Events {
		eIdx[e.Name] = i + 1
	}
	// The table is grouped so each (state, event) is contiguous: build an
	// ordering of rows by (state, event) keeping table order inside.
	order := make([][][]int, len(m.States)+1)
	for i := range order {
		order[i] = make([][]int, len(m.Events)+1)
	}
	for i, t := range m.Transitions {
		order[sIdx[t.From]][eIdx[t.Event]] = append(order[sIdx[t.From]][eIdx[t.Event]], i)
	}
	var flat []int
	for s := range order {
		for e := range order[s] {
			idx[s][e] = span{len(flat), len(order[s][e])}
			flat = append(flat, order[s][e]...)
		}
	}
	cmt(f, fmt.Sprintf("%sRows lists, per (state, event), the table rows in table order.", lowerFirst(n)))
	var rowList []string
	for _, r := range flat {
		rowList = append(rowList, strconv.Itoa(r))
	}
	f.Var().Id(lowerFirst(n) + "Rows").Op("=").Index(jen.Op("...")).Uint16().Values(packed(rowList, len("var Rows = [...]uint16{")+len(n)))
	// One line (or more) per state: its (start, count) per event.
	var index strings.Builder
	index.WriteString("{\n")
	for s := range idx {
		var spans []string
		for e := range idx[s] {
			spans = append(spans, fmt.Sprintf("{%d, %d}", idx[s][e].start, idx[s][e].n))
		}
		fmt.Fprintf(&index, "{%s},\n", packedText(spans, len("\t{")))
	}
	index.WriteString("}")
	cmt(f, fmt.Sprintf("%sIndex holds, per state and event, the first entry of %sRows and the\nnumber of rows.", lowerFirst(n), lowerFirst(n)))
	f.Var().Id(lowerFirst(n) + "Index").Op("=").Index(jen.Lit(len(m.States) + 1)).Index(jen.Lit(len(m.Events) + 1)).Index(jen.Lit(2)).Uint16().Op(index.String())
	cmt(f, fmt.Sprintf("%sStep looks up the transition for event ev in state from. Rows of the same\n(state, event) are tried in table order and the first whose guard is in held\n(or that has no guard) applies. An undefined transition is a\n*TransitionError, never a silent no-op. It does not allocate on success.", n))
	f.Func().Id(n+"Step").Params(sigParams(
		len("func Step(from , ev , held Set) (, error) {")+len(n)+len(stateT)+len(eventT)+len(guardT)+len(trT),
		jen.Id("from").Id(stateT), jen.Id("ev").Id(eventT), jen.Id("held").Id(guardT+"Set"))...).Params(jen.Id(trT), jen.Error()).Block(
		jen.If(jen.Id("from").Dot("Valid").Call().Op("&&").Id("ev").Dot("Valid").Call()).Block(
			jen.Id("span").Op(":=").Id(lowerFirst(n)+"Index").Index(jen.Id("from")).Index(jen.Id("ev")),
			jen.For(jen.List(jen.Id("_"), jen.Id("r")).Op(":=").Range().Id(lowerFirst(n)+"Rows").Index(jen.Id("span").Index(jen.Lit(0)).Op(":").Id("span").Index(jen.Lit(0)).Op("+").Id("span").Index(jen.Lit(1)))).Block(
				jen.Id("t").Op(":=").Id(lowerFirst(n)+"Table").Index(jen.Id("r")),
				jen.If(jen.Id("t").Dot("Guard").Op("==").Id(guardT+"None").Op("||").Id("held").Dot("Has").Call(jen.Id("t").Dot("Guard"))).Block(
					jen.Return(jen.Id("t"), jen.Nil()),
				),
			),
		),
		jen.Return(jen.Id(trT).Values(), jen.Op("&").Id("TransitionError").Values(jen.Dict{jen.Id("Machine"): jen.Lit(n), jen.Id("State"): jen.Id("from").Dot("String").Call(), jen.Id("Event"): jen.Id("ev").Dot("String").Call()})),
	)
	cmt(f, fmt.Sprintf("%sTable returns a copy of every row in table order.", n))
	f.Func().Id(n + "Table").Params().Index().Id(trT).Block(
		jen.Return(jen.Append(jen.Index().Id(trT).Values(), jen.Id(lowerFirst(n)+"Table").Index(jen.Op(":")).Op("..."))),
	)
	return nil
}

// tableRow is the composite literal of one row: From, Event and To always,
// Guard and Outputs when set.
func tableRow(m *model.Machine, t model.Transition) string {
	n := m.Name
	fields := []string{"From: " + n + "State" + t.From, "Event: " + n + "Event" + t.Event}
	if t.Guard != "" {
		fields = append(fields, "Guard: "+n+"Guard"+t.Guard)
	}
	fields = append(fields, "To: "+n+"State"+t.To)
	if len(t.Outputs) > 0 {
		var outs []string
		for _, o := range t.Outputs {
			outs = append(outs, "1<<("+n+"Output"+o+"-1)")
		}
		fields = append(fields, "Outputs: "+strings.Join(outs, " | "))
	}
	row := "{" + strings.Join(fields, ", ") + "}"
	if len("    ")+len(row)+len(",") <= maxLine {
		return row
	}
	// One field per line; outputs one per line when they do not fit.
	for i, fd := range fields {
		if len("        ")+len(fd)+len(",") > maxLine {
			fields[i] = strings.ReplaceAll(fd, " | ", " |\n")
		}
	}
	return "{\n" + strings.Join(fields, ",\n") + ",\n}"
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func camelTag(t string) string {
	parts := strings.Split(t, "_")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "")
}

// genDiagram writes a Markdown page beside a machine's table with the
// machine drawn as a Mermaid state diagram: an arrow per table row, labelled
// with its event, its guard in brackets and its outputs after a slash.
func genDiagram(m *model.Machine) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- %s -->\n<!-- source: schema/%s -->\n\n", Header, m.Source)
	fmt.Fprintf(&b, "# The %s machine\n\n", m.Name)
	for _, line := range wrapComment(m.Description, commentWidth) {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	about := fmt.Sprintf("The table is `%sTable` in %s; this diagram is generated from the same schema. An arrow is a row: its event, `[guard]` when the row has one, and `/ outputs` when it has any.", lowerFirst(m.Name), dataName(m.Source))
	for _, line := range wrapText(about, commentWidth) {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", m.Initial)
	for _, t := range m.Transitions {
		label := t.Event
		if t.Guard != "" {
			label += " [" + t.Guard + "]"
		}
		if len(t.Outputs) > 0 {
			label += " / " + strings.Join(t.Outputs, ", ")
		}
		fmt.Fprintf(&b, "    %s --> %s : %s\n", t.From, t.To, label)
	}
	for _, s := range m.States {
		if s.Terminal {
			fmt.Fprintf(&b, "    %s --> [*]\n", s.Name)
		}
	}
	b.WriteString("```\n")
	return []byte(b.String())
}
