package load

import (
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/a2abind/a2abind/gen/model"
)

// Keywords the generator understands, by place.
var (
	fileKeywords = set("$schema", "$id", "$defs", "description", "title", "$comment")
	nodeKeywords = set("$ref", "type", "properties", "required", "additionalProperties", "items",
		"enum", "const", "description", "title", "$comment", "examples", "minLength", "maxLength",
		"minItems", "maxItems", "minimum", "maximum", "pattern", "format", "contentEncoding",
		"not", "oneOf", "allOf", "minProperties",
		"x-go-name", "x-go-pointer", "x-go-raw", "x-enum-names", "x-enum-docs", "x-oneof", "x-error-info", "x-item-bound")
	formats = set("date-time", "uuid")
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range s {
		m[k] = true
	}
	return m
}

func checkKeys(f *file, ptr string, o *object, allowed map[string]bool) error {
	for _, k := range o.keys {
		if !allowed[k] {
			return errAt(f.display, ptr+"/"+escapePtr(k), "keyword %q is not supported by a2agen (see schema/README.md)", k)
		}
	}
	return nil
}

func (l *loader) readEnum(p pendingType) error {
	f, def, t := p.f, p.def, p.t
	if err := checkKeys(f, t.Ptr, def, set("type", "enum", "description", "title", "$comment", "x-enum-names", "x-enum-docs")); err != nil {
		return err
	}
	vals, _ := def.get("enum")
	list, ok := vals.([]any)
	if !ok || len(list) == 0 {
		return errAt(f.display, t.Ptr+"/enum", "an enum needs a non-empty list of strings")
	}
	names, err := strList(f, t.Ptr+"/x-enum-names", def, "x-enum-names")
	if err != nil {
		return err
	}
	docs, err := strList(f, t.Ptr+"/x-enum-docs", def, "x-enum-docs")
	if err != nil {
		return err
	}
	if names != nil && len(names) != len(list) {
		return errAt(f.display, t.Ptr+"/x-enum-names", "has %d names for %d values", len(names), len(list))
	}
	if docs != nil && len(docs) != len(list) {
		return errAt(f.display, t.Ptr+"/x-enum-docs", "has %d docs for %d values", len(docs), len(list))
	}
	prefix := upperSnake(t.Name) + "_"
	seen := map[string]bool{}
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return errAt(f.display, t.Ptr+"/enum/"+strconv.Itoa(i), "enum values must be strings")
		}
		var suffix string
		if names != nil {
			suffix = names[i]
		} else {
			suffix = camel(strings.TrimPrefix(s, prefix), true)
		}
		ev := &model.EnumValue{Wire: s, GoName: t.Name + suffix}
		if !isGoName(ev.GoName) {
			return errAt(f.display, t.Ptr+"/enum/"+strconv.Itoa(i), "value %q gives no Go name; set x-enum-names", s)
		}
		if seen[ev.GoName] {
			return errAt(f.display, t.Ptr+"/enum/"+strconv.Itoa(i), "two values are named %s", ev.GoName)
		}
		seen[ev.GoName] = true
		if docs != nil {
			ev.Doc = docs[i]
		}
		t.Values = append(t.Values, ev)
	}
	return nil
}

func strList(f *file, ptr string, o *object, k string) ([]string, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, errAt(f.display, ptr, "must be an array of strings")
	}
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, errAt(f.display, ptr+"/"+strconv.Itoa(i), "must be a string")
		}
		out[i] = s
	}
	return out, nil
}

func (l *loader) readObject(p pendingType) error {
	f, def, t := p.f, p.def, p.t
	if err := checkKeys(f, t.Ptr, def, nodeKeywords); err != nil {
		return err
	}
	if ty, ok := def.get("type"); ok && ty != "object" {
		return errAt(f.display, t.Ptr+"/type", "an object definition must have type object")
	}
	for _, k := range []string{"$ref", "items", "enum", "const", "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "pattern", "format", "contentEncoding", "not", "x-go-name", "x-go-pointer", "x-go-raw", "x-enum-names", "x-enum-docs", "x-error-info", "x-item-bound"} {
		if _, ok := def.get(k); ok {
			return errAt(f.display, t.Ptr+"/"+k, "keyword %q is not supported on an object definition", k)
		}
	}
	if ap, ok := def.get("additionalProperties"); ok {
		return errAt(f.display, t.Ptr+"/additionalProperties", "an object with properties may not restrict additional properties (got %v): unknown fields are accepted", ap)
	}
	props, _ := obj(def, "properties")
	if props == nil {
		props = &object{m: map[string]any{}}
	}
	required := map[string]bool{}
	if rv, ok := def.get("required"); ok {
		rl, _ := rv.([]any)
		for i, r := range rl {
			s, _ := r.(string)
			if _, ok := props.get(s); !ok {
				return errAt(f.display, t.Ptr+"/required/"+strconv.Itoa(i), "required property %q is not declared under properties", s)
			}
			required[s] = true
		}
	}
	if n, ok := def.get("minProperties"); ok {
		v, err := intOf(n)
		if err != nil {
			return errAt(f.display, t.Ptr+"/minProperties", "%v", err)
		}
		t.MinProperties = v
	}
	goNames := map[string]string{}
	for _, name := range props.keys {
		ptr := t.Ptr + "/properties/" + escapePtr(name)
		node, ok := props.m[name].(*object)
		if !ok {
			return errAt(f.display, ptr, "a property schema must be an object")
		}
		fd := &model.Field{JSON: name, Required: required[name]}
		fd.Doc, _ = str(node, "description")
		fd.GoName = camel(name, true)
		if gn, ok := str(node, "x-go-name"); ok {
			fd.GoName = gn
		}
		if !isGoName(fd.GoName) {
			return errAt(f.display, ptr, "property %q gives no Go name; set x-go-name", name)
		}
		if other, dup := goNames[fd.GoName]; dup {
			return errAt(f.display, ptr, "Go name %s is also used by property %q", fd.GoName, other)
		}
		goNames[fd.GoName] = name
		if b, ok := node.get("x-go-pointer"); ok && b == true {
			fd.Pointer = true
		}
		if _, ok := node.get("x-error-info"); ok {
			code, ok := str(node, "x-error-info")
			if !ok || code == "" {
				return errAt(f.display, ptr+"/x-error-info", "x-error-info names the member holding the error code")
			}
			fd.ErrorInfoCode = code
		}
		r, err := l.ref(f, ptr, node)
		if err != nil {
			return err
		}
		fd.Ref = r
		if b, ok := node.get("x-item-bound"); ok {
			if b != true || r.Kind != model.KindArray || r.Elem.Kind != model.KindObject {
				return errAt(f.display, ptr+"/x-item-bound", "x-item-bound is true on a member that is an array of objects, or absent")
			}
			fd.ItemBound = true
		}
		if fd.Pointer {
			switch r.Kind {
			case model.KindString, model.KindInt32, model.KindInt64, model.KindFloat, model.KindBool:
			default:
				return errAt(f.display, ptr+"/x-go-pointer", "x-go-pointer is for scalar properties")
			}
		}
		t.Fields = append(t.Fields, fd)
	}
	if err := l.readOneOf(f, def, t); err != nil {
		return err
	}
	return l.readAllOf(f, def, t)
}

func (l *loader) field(t *model.Type, json string) *model.Field {
	for _, fd := range t.Fields {
		if fd.JSON == json {
			return fd
		}
	}
	return nil
}

// readOneOf reads a oneof group: "oneOf": [{"required":["a"]}, …] with
// "x-oneof" naming the group.
func (l *loader) readOneOf(f *file, def *object, t *model.Type) error {
	v, ok := def.get("oneOf")
	if !ok {
		if _, ok := def.get("x-oneof"); ok {
			return errAt(f.display, t.Ptr+"/x-oneof", "x-oneof without oneOf")
		}
		return nil
	}
	ptr := t.Ptr + "/oneOf"
	group, ok := str(def, "x-oneof")
	if !ok || group == "" {
		return errAt(f.display, ptr, "a oneOf on an object must name its group with x-oneof")
	}
	branches, _ := v.([]any)
	if len(branches) < 2 {
		return errAt(f.display, ptr, "a oneof group needs at least two members")
	}
	o := &model.OneOf{GoName: camel(group, true)}
	o.Interface = t.Name + o.GoName
	for i, b := range branches {
		bp := ptr + "/" + strconv.Itoa(i)
		bo, ok := b.(*object)
		if !ok || len(bo.keys) != 1 || bo.keys[0] != "required" {
			return errAt(f.display, bp, `each oneOf branch must be exactly {"required":["<member>"]}`)
		}
		rl, _ := bo.m["required"].([]any)
		if len(rl) != 1 {
			return errAt(f.display, bp+"/required", "each oneOf branch names exactly one member")
		}
		name, _ := rl[0].(string)
		fd := l.field(t, name)
		if fd == nil {
			return errAt(f.display, bp+"/required/0", "member %q is not declared under properties", name)
		}
		if fd.Required || fd.Pointer {
			return errAt(f.display, bp+"/required/0", "member %q may not also be required or x-go-pointer", name)
		}
		if fd.Ref.Kind != model.KindObject {
			fd.Wrapper = t.Name + fd.GoName
		}
		o.Members = append(o.Members, fd)
	}
	// Members leave the plain field list.
	var rest []*model.Field
	for _, fd := range t.Fields {
		member := false
		for _, m := range o.Members {
			if m == fd {
				member = true
			}
		}
		if !member {
			rest = append(rest, fd)
		}
		if fd.GoName == o.GoName {
			return errAt(f.display, t.Ptr+"/x-oneof", "group name %s clashes with a property", o.GoName)
		}
	}
	t.Fields = rest
	t.OneOf = o
	return nil
}

// readAllOf reads discriminated parameters: "allOf": [{"if": {"properties":
// {K: {"const": V}}, "required": [K]}, "then": {"properties": {F: {"$ref":
// T}}, "required": [F]}}, …].
func (l *loader) readAllOf(f *file, def *object, t *model.Type) error {
	v, ok := def.get("allOf")
	if !ok {
		return nil
	}
	ptr := t.Ptr + "/allOf"
	items, _ := v.([]any)
	d := &model.Discriminated{}
	bad := func(i int, what string) error {
		return errAt(f.display, ptr+"/"+strconv.Itoa(i), "allOf is supported only as if/then discriminated parameters: %s", what)
	}
	for i, it := range items {
		io, ok := it.(*object)
		if !ok || len(io.keys) != 2 {
			return bad(i, "want exactly if and then")
		}
		ifo, ok1 := obj(io, "if")
		then, ok2 := obj(io, "then")
		if !ok1 || !ok2 {
			return bad(i, "want exactly if and then")
		}
		ip, _ := obj(ifo, "properties")
		if ip == nil || len(ip.keys) != 1 {
			return bad(i, "if names one property")
		}
		key := ip.keys[0]
		ko, _ := ip.m[key].(*object)
		var cv string
		if ko != nil {
			cv, _ = str(ko, "const")
		}
		if cv == "" {
			return bad(i, "if holds a string const")
		}
		tp, _ := obj(then, "properties")
		if tp == nil || len(tp.keys) != 1 {
			return bad(i, "then names one property")
		}
		fname := tp.keys[0]
		fo, _ := tp.m[fname].(*object)
		var target string
		if fo != nil {
			target, _ = str(fo, "$ref")
		}
		if target == "" {
			return bad(i, "then binds the property with $ref")
		}
		r, err := l.ref(f, ptr+"/"+strconv.Itoa(i)+"/then/properties/"+escapePtr(fname), fo)
		if err != nil {
			return err
		}
		if r.Kind != model.KindObject {
			return bad(i, "then's $ref must name an object type")
		}
		kf, ff := l.field(t, key), l.field(t, fname)
		if kf == nil || ff == nil {
			return bad(i, "both properties must be declared under properties")
		}
		if d.Key == nil {
			d.Key, d.Field = kf, ff
		} else if d.Key != kf || d.Field != ff {
			return bad(i, "every branch must use the same two properties")
		}
		c := model.DiscriminatedCase{Value: cv, Type: r.Named}
		if rq, ok := then.get("required"); ok {
			if rl, _ := rq.([]any); len(rl) == 1 && rl[0] == fname {
				c.Required = true
			} else {
				return bad(i, "then's required may only name the bound property")
			}
		}
		d.Cases = append(d.Cases, c)
	}
	if d.Field.Ref.Kind == model.KindObject || d.Field.Ref.Kind == model.KindEnum {
		return errAt(f.display, ptr, "the bound property must be untyped or a plain object")
	}
	d.Field.Ref = &model.Ref{Kind: model.KindRaw, RawKinds: rawKindsOf(d.Field.Ref), C: d.Field.Ref.C}
	t.Discriminated = d
	return nil
}

func rawKindsOf(r *model.Ref) []string {
	switch r.Kind {
	case model.KindStruct:
		return []string{"object"}
	case model.KindRaw:
		return r.RawKinds
	}
	return nil
}

// ref reads the schema of a property, an array element or a map value.
func (l *loader) ref(f *file, ptr string, node *object) (*model.Ref, error) {
	if err := checkKeys(f, ptr, node, nodeKeywords); err != nil {
		return nil, err
	}
	for _, k := range []string{"properties", "required", "oneOf", "allOf", "x-oneof", "x-enum-names", "x-enum-docs"} {
		if _, ok := node.get(k); ok {
			return nil, errAt(f.display, ptr+"/"+k, "keyword %q belongs on a named definition under $defs, not inline", k)
		}
	}
	var r *model.Ref
	if target, ok := str(node, "$ref"); ok {
		tf, tptr, err := l.resolve(f, ptr, target)
		if err != nil {
			return nil, err
		}
		if nt, ok := l.types[tf.id+"#"+tptr]; ok {
			if tf.pkg != f.pkg {
				if err := l.crossRef(f, ptr+"/$ref", target, tf.pkg); err != nil {
					return nil, err
				}
			}
			r = &model.Ref{Kind: nt.Kind, Named: nt}
		} else {
			tn := lookup(tf.doc, tptr)
			if tn == nil {
				return nil, errAt(f.display, ptr+"/$ref", "%q does not resolve", target)
			}
			inner, err := l.ref(tf, tptr, tn)
			if err != nil {
				return nil, err
			}
			cp := *inner
			r = &cp
		}
		if ty, ok := node.get("type"); ok {
			return nil, errAt(f.display, ptr+"/type", "type beside $ref is not supported (got %v)", ty)
		}
	} else {
		var err error
		r, err = l.inline(f, ptr, node)
		if err != nil {
			return nil, err
		}
	}
	if b, ok := node.get("x-go-raw"); ok && b == true {
		if r.Kind != model.KindValue && r.Kind != model.KindStruct {
			return nil, errAt(f.display, ptr+"/x-go-raw", "x-go-raw is for free JSON values")
		}
		r = &model.Ref{Kind: model.KindRaw, RawKinds: rawKindsOf(r), C: r.C}
	}
	if err := l.constraints(f, ptr, node, r); err != nil {
		return nil, err
	}
	return r, nil
}

// crossRef records a reference from f's package to another one, which the
// generated code imports: it needs the import path of the output.
func (l *loader) crossRef(f *file, ptr, target string, to *model.Package) error {
	if to.ImportPath == "" || f.pkg.ImportPath == "" {
		return errAt(f.display, ptr, "%q is in another package; a reference across packages needs the import path of the output (a2agen -import)", target)
	}
	if l.refs == nil {
		l.refs = map[*model.Package][]pkgRef{}
	}
	for _, e := range l.refs[f.pkg] {
		if e.to == to {
			return nil
		}
	}
	l.refs[f.pkg] = append(l.refs[f.pkg], pkgRef{to: to, file: f.display, ptr: ptr})
	return nil
}

func (l *loader) inline(f *file, ptr string, node *object) (*model.Ref, error) {
	tv, hasType := node.get("type")
	if list, ok := tv.([]any); ok {
		var kinds []string
		for _, k := range list {
			s, _ := k.(string)
			kinds = append(kinds, s)
		}
		return &model.Ref{Kind: model.KindRaw, RawKinds: kinds}, nil
	}
	ty, _ := tv.(string)
	if !hasType {
		if c, ok := node.get("const"); ok {
			switch c.(type) {
			case string:
				ty = "string"
			case bool:
				ty = "boolean"
			default:
				return nil, errAt(f.display, ptr+"/const", "const must be a string or a boolean")
			}
		} else if _, ok := node.get("enum"); ok {
			ty = "string"
		} else {
			return &model.Ref{Kind: model.KindValue}, nil
		}
	}
	switch ty {
	case "string":
		if ce, ok := str(node, "contentEncoding"); ok {
			if ce != "base64" {
				return nil, errAt(f.display, ptr+"/contentEncoding", "only base64 is supported")
			}
			return &model.Ref{Kind: model.KindBytes}, nil
		}
		return &model.Ref{Kind: model.KindString}, nil
	case "integer":
		lo, hi := math.Inf(-1), math.Inf(1)
		if v, ok := node.get("minimum"); ok {
			lo, _ = floatOf(v)
		}
		if v, ok := node.get("maximum"); ok {
			hi, _ = floatOf(v)
		}
		if lo >= math.MinInt32 && hi <= math.MaxInt32 {
			return &model.Ref{Kind: model.KindInt32}, nil
		}
		if lo < math.MinInt64 || hi > math.MaxInt64 {
			// JSON Schema integers are unbounded; Go's are not. Refuse
			// rather than reject valid values at run time.
			return nil, errAt(f.display, ptr, "an integer needs a minimum and a maximum within int64 (-9223372036854775808 to 9223372036854775807) to be represented in Go")
		}
		return &model.Ref{Kind: model.KindInt64}, nil
	case "number":
		return &model.Ref{Kind: model.KindFloat}, nil
	case "boolean":
		return &model.Ref{Kind: model.KindBool}, nil
	case "array":
		items, ok := obj(node, "items")
		if !ok {
			return nil, errAt(f.display, ptr, "an array needs items")
		}
		e, err := l.ref(f, ptr+"/items", items)
		if err != nil {
			return nil, err
		}
		return &model.Ref{Kind: model.KindArray, Elem: e}, nil
	case "object":
		ap, ok := obj(node, "additionalProperties")
		if !ok {
			if v, has := node.get("additionalProperties"); has {
				return nil, errAt(f.display, ptr+"/additionalProperties", "must be a schema (got %v)", v)
			}
			return &model.Ref{Kind: model.KindStruct}, nil
		}
		e, err := l.ref(f, ptr+"/additionalProperties", ap)
		if err != nil {
			return nil, err
		}
		return &model.Ref{Kind: model.KindMap, Elem: e}, nil
	}
	return nil, errAt(f.display, ptr+"/type", "type %q is not supported", ty)
}

func (l *loader) constraints(f *file, ptr string, node *object, r *model.Ref) error {
	c := &r.C
	ints := []struct {
		key  string
		dst  **int
		kind []model.Kind
	}{
		{"minLength", &c.MinLength, []model.Kind{model.KindString}},
		{"maxLength", &c.MaxLength, []model.Kind{model.KindString}},
		{"minItems", &c.MinItems, []model.Kind{model.KindArray}},
		{"maxItems", &c.MaxItems, []model.Kind{model.KindArray}},
		{"minProperties", &c.MinProperties, []model.Kind{model.KindMap, model.KindStruct}},
	}
	for _, it := range ints {
		v, ok := node.get(it.key)
		if !ok {
			continue
		}
		if !kindIn(r.Kind, it.kind) {
			return errAt(f.display, ptr+"/"+it.key, "%s does not apply to this type", it.key)
		}
		n, err := intOf(v)
		if err != nil {
			return errAt(f.display, ptr+"/"+it.key, "%v", err)
		}
		*it.dst = &n
	}
	for _, it := range []struct {
		key string
		dst **float64
	}{{"minimum", &c.Minimum}, {"maximum", &c.Maximum}} {
		v, ok := node.get(it.key)
		if !ok {
			continue
		}
		if !kindIn(r.Kind, []model.Kind{model.KindInt32, model.KindInt64, model.KindFloat}) {
			return errAt(f.display, ptr+"/"+it.key, "%s applies to numbers only", it.key)
		}
		x, err := floatOf(v)
		if err != nil {
			return errAt(f.display, ptr+"/"+it.key, "%v", err)
		}
		*it.dst = &x
	}
	if p, ok := str(node, "pattern"); ok {
		if r.Kind != model.KindString {
			return errAt(f.display, ptr+"/pattern", "pattern applies to strings only")
		}
		if _, err := regexp.Compile(p); err != nil {
			return errAt(f.display, ptr+"/pattern", "%v", err)
		}
		c.Pattern = p
	}
	if fm, ok := str(node, "format"); ok {
		if !formats[fm] {
			return errAt(f.display, ptr+"/format", "format %q is not supported (date-time, uuid)", fm)
		}
		if r.Kind != model.KindString {
			return errAt(f.display, ptr+"/format", "format applies to strings only")
		}
		c.Format = fm
	}
	if cv, ok := node.get("const"); ok {
		switch v := cv.(type) {
		case string:
			if r.Kind != model.KindString {
				return errAt(f.display, ptr+"/const", "a string const needs type string")
			}
			c.Const = &v
		case bool:
			if r.Kind != model.KindBool {
				return errAt(f.display, ptr+"/const", "a boolean const needs type boolean")
			}
			c.ConstBool = &v
		default:
			return errAt(f.display, ptr+"/const", "const must be a string or a boolean")
		}
	}
	if ev, ok := node.get("enum"); ok {
		if r.Kind != model.KindString {
			return errAt(f.display, ptr+"/enum", "an inline enum must list strings")
		}
		list, _ := ev.([]any)
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return errAt(f.display, ptr+"/enum/"+strconv.Itoa(i), "enum values must be strings")
			}
			c.Enum = append(c.Enum, s)
		}
	}
	if nv, ok := obj(node, "not"); ok {
		cv, _ := str(nv, "const")
		if len(nv.keys) != 1 || cv == "" {
			return errAt(f.display, ptr+"/not", `only {"not": {"const": "<string>"}} is supported`)
		}
		if r.Kind != model.KindString && r.Kind != model.KindEnum {
			return errAt(f.display, ptr+"/not", "not-const applies to strings and enums")
		}
		c.NotConst = &cv
	}
	return nil
}

func kindIn(k model.Kind, list []model.Kind) bool {
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}

func intOf(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errf("want a number")
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i < 0 {
		return 0, errf("want a non-negative integer")
	}
	return i, nil
}

func floatOf(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errf("want a number")
	}
	return strconv.ParseFloat(string(n), 64)
}

type strErr string

func (e strErr) Error() string { return string(e) }

func errf(s string) error { return strErr(s) }

// resolve finds the file and pointer a $ref names.
func (l *loader) resolve(f *file, ptr, target string) (*file, string, error) {
	base, err := url.Parse(f.id)
	if err != nil {
		return nil, "", errAt(f.display, "/$id", "%v", err)
	}
	u, err := base.Parse(target)
	if err != nil {
		return nil, "", errAt(f.display, ptr+"/$ref", "%v", err)
	}
	frag := u.Fragment
	u.Fragment = ""
	tf, ok := l.byID[u.String()]
	if !ok {
		return nil, "", errAt(f.display, ptr+"/$ref", "%q names no schema file", target)
	}
	if !strings.HasPrefix(frag, "/$defs/") || strings.Count(frag, "/") != 2 {
		return nil, "", errAt(f.display, ptr+"/$ref", "%q: only references to #/$defs/<Name> are supported", target)
	}
	if lookup(tf.doc, frag) == nil {
		return nil, "", errAt(f.display, ptr+"/$ref", "%q does not resolve", target)
	}
	return tf, frag, nil
}

func lookup(doc *object, ptr string) *object {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for _, p := range parts {
		p = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
		next, ok := obj(cur, p)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// Go naming.

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "api": "API", "http": "HTTP", "json": "JSON",
	"jws": "JWS", "tls": "TLS", "oidc": "OIDC", "jsonrpc": "JSONRPC", "mtls": "MTLS", "lwt": "LWT",
}

// camel turns json_names, camelNames and UPPER_SNAKE into PascalCase.
func camel(s string, upperFirst bool) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	allUpper := strings.ToUpper(s) == s
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ' || r == '/':
			flush()
		case unicode.IsUpper(r) && !allUpper:
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	var b strings.Builder
	for i, w := range words {
		lw := strings.ToLower(w)
		if i == 0 && !upperFirst {
			b.WriteString(lw)
			continue
		}
		if in, ok := initialisms[lw]; ok {
			b.WriteString(in)
			continue
		}
		b.WriteString(strings.ToUpper(lw[:1]) + lw[1:])
	}
	return b.String()
}

// upperSnake turns TaskState into TASK_STATE.
func upperSnake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
