package gen

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/a2abind/a2abind/gen/model"
)

func genProperties(f *jen.File, props []*model.Property) {
	cmt(f, "User property keys.")
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, p := range props {
			cmt(g, doc("Prop"+p.Name, p.Description)+"\n\nAppears in: "+strings.Join(p.AppearsIn, ", ")+".")
			g.Id("Prop" + p.Name).Op("=").Lit(p.Key)
		}
	})
	cmt(f, "Allowed values of the properties that have a closed set.")
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, p := range props {
			for _, v := range p.Values {
				text := v.Description
				if text == "" {
					text = "the value " + v.Value + " of " + p.Key + "."
				}
				cmt(g, docAs(p.Name+v.Name, text, roleValue))
				g.Id(p.Name + v.Name).Op("=").Lit(v.Value)
			}
		}
	})
	cmt(f, "PropertyFormat is the format of an open property value.")
	f.Type().Id("PropertyFormat").String()
	cmt(f, "The formats.")
	f.Const().Defs(
		jen.Id("FormatEnum").Id("PropertyFormat").Op("=").Lit("enum"),
		jen.Id("FormatIdentifier").Id("PropertyFormat").Op("=").Lit("identifier"),
		jen.Id("FormatUUID").Id("PropertyFormat").Op("=").Lit("uuid"),
		jen.Id("FormatBearer").Id("PropertyFormat").Op("=").Lit("bearer"),
		jen.Id("FormatInteger").Id("PropertyFormat").Op("=").Lit("integer"),
		jen.Id("FormatBoolean").Id("PropertyFormat").Op("=").Lit("boolean"),
		jen.Id("FormatText").Id("PropertyFormat").Op("=").Lit("text"),
	)
	cmt(f, "PropertyInfo describes one user property.")
	f.Type().Id("PropertyInfo").Struct(
		jen.Id("Key").String(),
		jen.Comment("AppearsIn lists the kinds of message that carry it."),
		jen.Id("AppearsIn").Index().String(),
		jen.Comment("Values is the closed set of values (Format is FormatEnum), or nil."),
		jen.Id("Values").Index().String(),
		jen.Id("Format").Id("PropertyFormat"),
		jen.Comment("Secret properties are never echoed in any payload or property, and never logged."),
		jen.Id("Secret").Bool(),
	)
	f.Var().Id("propertyTable").Op("=").Index(jen.Op("...")).Id("PropertyInfo").ValuesFunc(func(g *jen.Group) {
		for _, p := range props {
			format := p.Format
			var vals []jen.Code
			for _, v := range p.Values {
				vals = append(vals, jen.Id(p.Name+v.Name))
			}
			if len(p.Values) > 0 {
				format = "enum"
			}
			var appears []jen.Code
			for _, a := range p.AppearsIn {
				appears = append(appears, jen.Lit(a))
			}
			d := jen.Dict{jen.Id("Key"): jen.Id("Prop" + p.Name), jen.Id("AppearsIn"): jen.Index().String().Values(appears...),
				jen.Id("Format"): jen.Id("PropertyFormat").Call(jen.Lit(format)), jen.Id("Secret"): jen.Lit(p.Secret)}
			if len(vals) > 0 {
				d[jen.Id("Values")] = jen.Index().String().Values(vals...)
			}
			g.Values(d)
		}
	})
	cmt(f, "Properties returns every known user property in table order.")
	f.Func().Id("Properties").Params().Index().Id("PropertyInfo").Block(
		jen.Return(jen.Append(jen.Index().Id("PropertyInfo").Values(), jen.Id("propertyTable").Index(jen.Op(":")).Op("..."))),
	)
	cmt(f, "LookupProperty returns the description of a key.")
	f.Func().Id("LookupProperty").Params(jen.Id("key").String()).Params(jen.Id("PropertyInfo"), jen.Bool()).Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("propertyTable")).Block(
			jen.If(jen.Id("p").Dot("Key").Op("==").Id("key")).Block(jen.Return(jen.Id("p"), jen.True())),
		),
		jen.Return(jen.Id("PropertyInfo").Values(), jen.False()),
	)
	cmt(f, "CheckProperty reports whether value is allowed for a known key. Unknown\nkeys are accepted (the binding ignores them).")
	f.Func().Id("CheckProperty").Params(jen.Id("key"), jen.Id("value").String()).Error().Block(
		jen.List(jen.Id("p"), jen.Id("ok")).Op(":=").Id("LookupProperty").Call(jen.Id("key")),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.Nil())),
		jen.Id("bad").Op(":=").Func().Params(jen.Id("want").String()).Error().Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("user property %s: %q is not %s"), jen.Id("key"), jen.Id("value"), jen.Id("want"))),
		),
		jen.Switch(jen.Id("p").Dot("Format")).Block(
			jen.Case(jen.Id("FormatEnum")).Block(
				jen.If(jen.Op("!").Qual("slices", "Contains").Call(jen.Id("p").Dot("Values"), jen.Id("value"))).Block(
					jen.Return(jen.Id("bad").Call(jen.Lit("one of ").Op("+").Qual("strings", "Join").Call(jen.Id("p").Dot("Values"), jen.Lit(", ")))),
				),
			),
			jen.Case(jen.Id("FormatIdentifier")).Block(
				jen.If(jen.Op("!").Id("ValidIdentifier").Call(jen.Id("value"))).Block(jen.Return(jen.Id("bad").Call(jen.Lit("an identifier")))),
			),
			jen.Case(jen.Id("FormatUUID")).Block(
				jen.If(jen.Op("!").Id("ValidUUID").Call(jen.Id("value"))).Block(jen.Return(jen.Id("bad").Call(jen.Lit("a UUID")))),
			),
			jen.Case(jen.Id("FormatBearer")).Block(
				jen.If(jen.List(jen.Id("tok"), jen.Id("ok")).Op(":=").Qual("strings", "CutPrefix").Call(jen.Id("value"), jen.Lit("Bearer ")), jen.Op("!").Id("ok").Op("||").Id("tok").Op("==").Lit("")).Block(
					jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("user property %s: not of the form \"Bearer <token>\""), jen.Id("key"))),
				),
			),
			jen.Case(jen.Id("FormatInteger")).Block(
				jen.If(jen.List(jen.Id("_"), jen.Id("err")).Op(":=").Qual("strconv", "ParseUint").Call(jen.Id("value"), jen.Lit(10), jen.Lit(64)), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Id("bad").Call(jen.Lit("a non-negative integer")))),
			),
			jen.Case(jen.Id("FormatBoolean")).Block(
				jen.If(jen.Id("value").Op("!=").Lit("true").Op("&&").Id("value").Op("!=").Lit("false")).Block(jen.Return(jen.Id("bad").Call(jen.Lit("true or false")))),
			),
		),
		jen.Return(jen.Nil()),
	)
	cmt(f, "ValidUUID reports whether s has the 8-4-4-4-12 hexadecimal form of an RFC\n9562 UUID (any version).")
	f.Func().Id("ValidUUID").Params(jen.Id("s").String()).Bool().Block(
		jen.If(jen.Len(jen.Id("s")).Op("!=").Lit(36)).Block(jen.Return(jen.False())),
		jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Lit(36), jen.Id("i").Op("++")).Block(
			jen.Id("c").Op(":=").Id("s").Index(jen.Id("i")),
			jen.Switch(jen.Id("i")).Block(
				jen.Case(jen.Lit(8), jen.Lit(13), jen.Lit(18), jen.Lit(23)).Block(
					jen.If(jen.Id("c").Op("!=").LitRune('-')).Block(jen.Return(jen.False())),
				),
				jen.Default().Block(
					jen.If(jen.Op("!").Parens(jen.LitRune('0').Op("<=").Id("c").Op("&&").Id("c").Op("<=").LitRune('9').Op("||").LitRune('a').Op("<=").Id("c").Op("&&").Id("c").Op("<=").LitRune('f').Op("||").LitRune('A').Op("<=").Id("c").Op("&&").Id("c").Op("<=").LitRune('F'))).Block(jen.Return(jen.False())),
				),
			),
		),
		jen.Return(jen.True()),
	)
}

var placeholderRE = regexp.MustCompile(`\{([^}]*)\}`)

func genTopics(f *jen.File, t *model.Topics) {
	names := map[string]model.Identifier{}
	for _, id := range t.Identifiers {
		names[id.Placeholder] = id
	}
	cmt(f, "IdentifierPattern is the pattern every topic identifier matches.")
	f.Const().Id("IdentifierPattern").Op("=").Lit(t.IdentifierPattern)
	cmt(f, "ValidIdentifier reports whether s may stand in a topic level.")
	if cp, ok := parseClassPattern(t.IdentifierPattern); ok {
		// A plain character class: matched byte by byte, with no regexp
		// on the path of every topic the binding builds.
		f.Func().Id("ValidIdentifier").Params(jen.Id("s").String()).Bool().Block(cp.matchFunc()...)
	} else {
		f.Var().Id("identifierRE").Op("=").Qual("regexp", "MustCompile").Call(jen.Id("IdentifierPattern"))
		f.Func().Id("ValidIdentifier").Params(jen.Id("s").String()).Bool().Block(
			jen.Return(jen.Id("identifierRE").Dot("MatchString").Call(jen.Id("s"))),
		)
	}
	cmt(f, "IdentifierError reports an identifier that may not stand in a topic.")
	f.Type().Id("IdentifierError").Struct(
		jen.Comment("Name says which identifier (org_id, agent_id, …)."),
		jen.Id("Name").String(),
		jen.Id("Value").String(),
	)
	f.Func().Params(jen.Id("e").Op("*").Id("IdentifierError")).Id("Error").Params().String().Block(
		jen.Return(jen.Qual("fmt", "Sprintf").Call(jen.Lit("invalid %s %q: must match %s (no /, +, #, spaces, not empty)"), jen.Id("e").Dot("Name"), jen.Id("e").Dot("Value"), jen.Id("IdentifierPattern"))),
	)
	cmt(f, "CheckIdentifier returns an *IdentifierError when value may not stand in a\ntopic level.")
	f.Func().Id("CheckIdentifier").Params(jen.Id("name"), jen.Id("value").String()).Error().Block(
		jen.If(jen.Op("!").Id("ValidIdentifier").Call(jen.Id("value"))).Block(
			jen.Return(jen.Op("&").Id("IdentifierError").Values(jen.Dict{jen.Id("Name"): jen.Id("name"), jen.Id("Value"): jen.Id("value")})),
		),
		jen.Return(jen.Nil()),
	)
	if t.Root != nil {
		genRoot(f, t)
	}
	genSplitLevels(f)
	for _, tp := range t.Topics {
		genTopic(f, t, tp)
	}
	if sg := t.SharedGroup; sg != nil {
		phs := placeholderRE.FindAllStringSubmatch(sg.DefaultTemplate, -1)
		var params []jen.Code
		var repl []jen.Code
		for _, ph := range phs {
			params = append(params, jen.Id(camel(ph[1])))
			repl = append(repl, jen.Lit(ph[0]), jen.Id(camel(ph[1])))
		}
		params[len(params)-1] = jen.Add(params[len(params)-1]).String()
		cmt(f, "GroupIDMaxLength is the longest shared-subscription group id.")
		f.Const().Id("GroupIDMaxLength").Op("=").Lit(sg.MaxLength)
		f.Var().Id("groupDisallowed").Op("=").Qual("regexp", "MustCompile").Call(jen.Lit("[^" + sg.Allowed + "]"))
		cmt(f, fmt.Sprintf("GroupID makes a deterministic shared-subscription group id from a label:\ncharacters outside [%s] become %q, and an id longer than %d is cut and\nends with %q and the first %d hex digits of the SHA-256 of the uncut id.", sg.Allowed, sg.Replacement, sg.MaxLength, sg.Replacement, sg.HashHexDigits))
		f.Func().Id("GroupID").Params(jen.Id("label").String()).String().Block(
			jen.Id("id").Op(":=").Id("groupDisallowed").Dot("ReplaceAllString").Call(jen.Id("label"), jen.Lit(sg.Replacement)),
			jen.If(jen.Len(jen.Id("id")).Op("<=").Id("GroupIDMaxLength")).Block(jen.Return(jen.Id("id"))),
			jen.Id("sum").Op(":=").Qual("crypto/sha256", "Sum256").Call(jen.Index().Byte().Call(jen.Id("id"))),
			jen.Id("suffix").Op(":=").Lit(sg.Replacement).Op("+").Qual("encoding/hex", "EncodeToString").Call(jen.Id("sum").Index(jen.Op(":"))).Index(jen.Op(":").Lit(sg.HashHexDigits)),
			jen.Return(jen.Id("id").Index(jen.Op(":").Id("GroupIDMaxLength").Op("-").Len(jen.Id("suffix"))).Op("+").Id("suffix")),
		)
		cmt(f, fmt.Sprintf("DefaultGroupID is GroupID of the default label %s.", sg.DefaultTemplate))
		f.Func().Id("DefaultGroupID").Params(params...).String().Block(
			jen.Return(jen.Id("GroupID").Call(jen.Qual("strings", "NewReplacer").Call(repl...).Dot("Replace").Call(jen.Lit(sg.DefaultTemplate)))),
		)
	}
}

// genRoot emits the Root type: the run-time topic root every Root method
// builds and parses topics under, DefaultRoot when zero.
func genRoot(f *jen.File, t *model.Topics) {
	r := t.Root
	cmt(f, "DefaultRoot is the topic root of the profile, the first levels of every\ntopic of the binding unless a deployment chooses another (Root).")
	f.Const().Id("DefaultRoot").Op("=").Lit(r.Default)
	cmt(f, "RootMaxLength is the longest topic root ParseRoot accepts, in bytes.")
	f.Const().Id("RootMaxLength").Op("=").Lit(r.MaxLength)
	cmt(f, wrap("Root is the first levels of every topic the binding builds and parses. The zero Root is DefaultRoot; ParseRoot makes another.\n\n"+r.Description, 76))
	f.Type().Id("Root").Struct(
		jen.Comment("prefix is the root and a level separator; \"\" stands for DefaultRoot."),
		jen.Id("prefix").String(),
	)
	cmt(f, "RootError reports a topic root that may not be used.")
	f.Type().Id("RootError").Struct(
		jen.Comment("Root is the root refused."),
		jen.Id("Root").String(),
		jen.Comment("Reason says why."),
		jen.Id("Reason").String(),
	)
	f.Func().Params(jen.Id("e").Op("*").Id("RootError")).Id("Error").Params().String().Block(
		jen.Return(jen.Qual("fmt", "Sprintf").Call(jen.Lit("invalid topic root %q: %s"), jen.Id("e").Dot("Root"), jen.Id("e").Dot("Reason"))),
	)
	var reserved []jen.Code
	for _, lv := range r.ReservedFirstLevels {
		reserved = append(reserved, jen.Lit(lv))
	}
	bad := func(reason jen.Code) jen.Code {
		return jen.Return(jen.Id("Root").Values(), jen.Op("&").Id("RootError").Values(jen.Dict{jen.Id("Root"): jen.Id("s"), jen.Id("Reason"): reason}))
	}
	first := []jen.Code{}
	if len(reserved) > 0 {
		first = append(first, jen.Switch(jen.Id("level")).Block(
			jen.Case(reserved...).Block(bad(jen.Lit("its first level ").Op("+").Id("level").Op("+").Lit(" is reserved by brokers"))),
		))
	}
	first = append(first, jen.Id("level").Op("=").Qual("strings", "TrimPrefix").Call(jen.Id("level"), jen.Lit("$")))
	reservedDoc := ""
	if len(r.ReservedFirstLevels) > 0 {
		reservedDoc = ", but not be " + strings.Join(r.ReservedFirstLevels, ", ")
	}
	cmt(f, "ParseRoot returns the root s names, checked: at most RootMaxLength bytes,\nlevels separated by /, each matching IdentifierPattern; the first may begin\nwith $"+reservedDoc+". \"\" and DefaultRoot are the zero Root.")
	f.Func().Id("ParseRoot").Params(jen.Id("s").String()).Params(jen.Id("Root"), jen.Error()).Block(
		jen.If(jen.Id("s").Op("==").Lit("").Op("||").Id("s").Op("==").Id("DefaultRoot")).Block(jen.Return(jen.Id("Root").Values(), jen.Nil())),
		jen.If(jen.Len(jen.Id("s")).Op(">").Id("RootMaxLength")).Block(
			bad(jen.Lit("longer than ").Op("+").Qual("strconv", "Itoa").Call(jen.Id("RootMaxLength")).Op("+").Lit(" bytes")),
		),
		jen.For(jen.List(jen.Id("i"), jen.Id("level")).Op(":=").Range().Qual("strings", "Split").Call(jen.Id("s"), jen.Lit("/"))).Block(
			jen.If(jen.Id("i").Op("==").Lit(0)).Block(first...),
			jen.If(jen.Op("!").Id("ValidIdentifier").Call(jen.Id("level"))).Block(
				bad(jen.Lit("every level must match ").Op("+").Id("IdentifierPattern").Op("+").Lit(" (the first may begin with $): no empty level, no +, # or space")),
			),
		),
		jen.Return(jen.Id("Root").Values(jen.Dict{jen.Id("prefix"): jen.Id("s").Op("+").Lit("/")}), jen.Nil()),
	)
	cmt(f, "String returns the root, DefaultRoot for the zero Root.")
	f.Func().Params(jen.Id("r").Id("Root")).Id("String").Params().String().Block(
		jen.If(jen.Id("r").Dot("prefix").Op("==").Lit("")).Block(jen.Return(jen.Id("DefaultRoot"))),
		jen.Return(jen.Id("r").Dot("prefix").Index(jen.Op(":").Len(jen.Id("r").Dot("prefix")).Op("-").Lit(1))),
	)
	cmt(f, "IsDefault reports whether r is DefaultRoot, the profile's root.")
	f.Func().Params(jen.Id("r").Id("Root")).Id("IsDefault").Params().Bool().Block(
		jen.Return(jen.Id("r").Dot("prefix").Op("==").Lit("")),
	)
	cmt(f, "Wildcard returns the subscription filter of every topic under the root\n(the root followed by /#).")
	f.Func().Params(jen.Id("r").Id("Root")).Id("Wildcard").Params().String().Block(
		jen.Return(jen.Id("r").Dot("path").Call().Op("+").Lit("#")),
	)
	cmt(f, "Relative returns what follows the root and its level separator in topic;\nok is false when topic is not under the root.")
	f.Func().Params(jen.Id("r").Id("Root")).Id("Relative").Params(jen.Id("topic").String()).Params(jen.Id("rest").String(), jen.Id("ok").Bool()).Block(
		jen.Return(jen.Qual("strings", "CutPrefix").Call(jen.Id("topic"), jen.Id("r").Dot("path").Call())),
	)
	cmt(f, "MarshalText returns the root as text (encoding.TextMarshaler).")
	f.Func().Params(jen.Id("r").Id("Root")).Id("MarshalText").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Index().Byte().Call(jen.Id("r").Dot("String").Call()), jen.Nil()),
	)
	cmt(f, "UnmarshalText sets r to the root text names, checked as ParseRoot checks\nit (encoding.TextUnmarshaler, so a Root can be a flag.TextVar).")
	f.Func().Params(jen.Id("r").Op("*").Id("Root")).Id("UnmarshalText").Params(jen.Id("text").Index().Byte()).Error().Block(
		jen.List(jen.Id("v"), jen.Err()).Op(":=").Id("ParseRoot").Call(jen.String().Call(jen.Id("text"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id("r").Op("=").Id("v"),
		jen.Return(jen.Nil()),
	)
	cmt(f, "path returns the root and a level separator.")
	f.Func().Params(jen.Id("r").Id("Root")).Id("path").Params().String().Block(
		jen.If(jen.Id("r").Dot("prefix").Op("==").Lit("")).Block(jen.Return(jen.Id("DefaultRoot").Op("+").Lit("/"))),
		jen.Return(jen.Id("r").Dot("prefix")),
	)
}

// genTopic emits the builder of one topic and, for a topic that is not a
// filter, its parser: methods of Root with a package-level function for
// DefaultRoot when the template has the root, package-level functions
// otherwise.
func genTopic(f *jen.File, t *model.Topics, tp model.Topic) {
	rootPH, profile := "", tp.Template
	if t.Root != nil {
		rootPH = "{" + t.Root.Placeholder + "}"
		profile = strings.ReplaceAll(tp.Template, rootPH, t.Root.Default)
	}
	rooted := rootPH != "" && strings.Contains(tp.Template, rootPH)
	phs := placeholderRE.FindAllStringSubmatch(tp.Template, -1)
	var params, args, checks, parts []jen.Code
	rest := tp.Template
	for _, ph := range phs {
		idx := strings.Index(rest, ph[0])
		if idx > 0 {
			parts = append(parts, jen.Lit(rest[:idx]))
		}
		rest = rest[idx+len(ph[0]):]
		if ph[0] == rootPH {
			// The root's path ends with its level separator.
			parts = append(parts, jen.Id("r").Dot("path").Call())
			rest = strings.TrimPrefix(rest, "/")
			continue
		}
		v := camel(ph[1])
		params = append(params, jen.Id(v))
		args = append(args, jen.Id(v))
		checks = append(checks, jen.If(jen.Id("err").Op(":=").Id("CheckIdentifier").Call(jen.Lit(ph[1]), jen.Id(v)), jen.Id("err").Op("!=").Nil()).Block(jen.Return(jen.Lit(""), jen.Id("err"))))
		parts = append(parts, jen.Id(v))
	}
	if rest != "" {
		parts = append(parts, jen.Lit(rest))
	}
	var expr *jen.Statement
	for i, p := range parts {
		if i == 0 {
			expr = jen.Add(p)
		} else {
			expr = expr.Op("+").Add(p)
		}
	}
	if len(params) > 0 {
		params[len(params)-1] = jen.Add(params[len(params)-1]).String()
	}
	if rooted {
		cmt(f, fmt.Sprintf("%sTemplate is the %s topic template under DefaultRoot.", tp.Name, tp.Name))
	} else {
		cmt(f, fmt.Sprintf("%sTemplate is the %s topic template.", tp.Name, tp.Name))
	}
	f.Const().Id(tp.Name + "Template").Op("=").Lit(profile)
	kind := "topic"
	if tp.Filter {
		kind = "subscription filter"
	}
	body := append(checks, jen.Return(expr, jen.Nil()))
	name := tp.Name + "Topic"
	if rooted {
		cmt(f, doc(name, "builds the "+kind+" "+tp.Template+" under the root r. "+tp.Description)+"\nEvery identifier is checked first.")
		f.Func().Params(jen.Id("r").Id("Root")).Id(name).Params(params...).Params(jen.String(), jen.Error()).Block(body...)
		cmt(f, fmt.Sprintf("%s builds the %s %s: Root.%s of the zero Root.", name, kind, profile, name))
		f.Func().Id(name).Params(params...).Params(jen.String(), jen.Error()).Block(
			jen.Return(jen.Id("Root").Values().Dot(name).Call(args...)),
		)
	} else {
		cmt(f, doc(name, "builds the "+kind+" "+tp.Template+". "+tp.Description)+"\nEvery identifier is checked first.")
		f.Func().Id(name).Params(params...).Params(jen.String(), jen.Error()).Block(body...)
	}
	if !tp.Filter && len(args) > 0 {
		genParse(f, tp, rootPH, rooted, profile)
	}
}

// genParse emits Parse<Name>Topic, which splits a topic by levels without
// allocating: a method of Root when the template has the root, with a
// package-level function for DefaultRoot.
func genParse(f *jen.File, tp model.Topic, rootPH string, rooted bool, profile string) {
	tmpl := tp.Template
	if rooted {
		tmpl = strings.TrimPrefix(tmpl, rootPH+"/")
	}
	levels := strings.Split(tmpl, "/")
	var results []jen.Code
	var body []jen.Code
	if rooted {
		body = append(body,
			jen.List(jen.Id("rest"), jen.Id("found")).Op(":=").Id("r").Dot("Relative").Call(jen.Id("topic")),
			jen.If(jen.Op("!").Id("found")).Block(jen.Return()),
		)
	} else {
		body = append(body, jen.Id("rest").Op(":=").Id("topic"))
	}
	body = append(body,
		jen.Var().Id("levels").Index(jen.Lit(len(levels))).String(),
		jen.If(jen.Op("!").Id("splitLevels").Call(jen.Id("rest"), jen.Id("levels").Index(jen.Op(":")))).Block(jen.Return()),
	)
	for i, lv := range levels {
		if m := placeholderRE.FindStringSubmatch(lv); m != nil && m[0] == lv {
			v := camel(m[1])
			results = append(results, jen.Id(v))
			body = append(body,
				jen.If(jen.Op("!").Id("ValidIdentifier").Call(jen.Id("levels").Index(jen.Lit(i)))).Block(jen.Return()),
				jen.Id(v).Op("=").Id("levels").Index(jen.Lit(i)))
			continue
		}
		body = append(body, jen.If(jen.Id("levels").Index(jen.Lit(i)).Op("!=").Lit(lv)).Block(jen.Return()))
	}
	body = append(body, jen.Id("ok").Op("=").True(), jen.Return())
	results[len(results)-1] = jen.Add(results[len(results)-1]).String()
	results = append(results, jen.Id("ok").Bool())
	name := "Parse" + tp.Name + "Topic"
	if rooted {
		cmt(f, fmt.Sprintf("%s splits a %s topic under the root r into its\nidentifiers; ok is false when topic does not have the form %s\nor an identifier is invalid.", name, tp.Name, tp.Template))
		f.Func().Params(jen.Id("r").Id("Root")).Id(name).Params(jen.Id("topic").String()).Params(results...).Block(body...)
		cmt(f, fmt.Sprintf("%s splits a %s topic of the form %s: Root.%s of the\nzero Root.", name, tp.Name, profile, name))
		f.Func().Id(name).Params(jen.Id("topic").String()).Params(results...).Block(
			jen.Return(jen.Id("Root").Values().Dot(name).Call(jen.Id("topic"))),
		)
		return
	}
	cmt(f, fmt.Sprintf("%s splits a %s topic into its identifiers; ok is false when\ntopic does not have the form %s or an identifier is invalid.", name, tp.Name, tp.Template))
	f.Func().Id(name).Params(jen.Id("topic").String()).Params(results...).Block(body...)
}

// genSplitLevels emits splitLevels, which cuts a topic into exactly
// len(levels) levels without allocating.
func genSplitLevels(f *jen.File) {
	cmt(f, "splitLevels cuts s at every / into exactly len(levels) levels; it reports\nfalse when s has another number of levels.")
	f.Func().Id("splitLevels").Params(jen.Id("s").String(), jen.Id("levels").Index().String()).Bool().Block(
		jen.For(jen.Id("i").Op(":=").Range().Id("levels")).Block(
			jen.List(jen.Id("level"), jen.Id("tail"), jen.Id("more")).Op(":=").Qual("strings", "Cut").Call(jen.Id("s"), jen.Lit("/")),
			jen.If(jen.Id("more").Op("==").Parens(jen.Id("i").Op("==").Len(jen.Id("levels")).Op("-").Lit(1))).Block(jen.Return(jen.False())),
			jen.Id("levels").Index(jen.Id("i")).Op("=").Id("level"),
			jen.Id("s").Op("=").Id("tail"),
		),
		jen.Return(jen.True()),
	)
}

// wrap fills the paragraphs of text (separated by blank lines) to lines of
// at most width columns, breaking at spaces.
func wrap(text string, width int) string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, line, "")
	}
	return strings.Join(out[:len(out)-1], "\n")
}

// camel turns org_id into org and reply_suffix into replySuffix.
func camel(s string) string {
	s = strings.TrimSuffix(s, "_id")
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
