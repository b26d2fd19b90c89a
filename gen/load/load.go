// Package load reads a schema directory into a [model.Model]. It first
// compiles every type schema and validates every data document against its
// meta-schema with santhosh-tekuri/jsonschema/v6, so a broken schema fails
// with its file and JSON pointer before any Go is generated, then walks the
// documents, refusing keywords the generator does not support.
package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/a2abind/a2abind/gen/model"
)

// Draft2020 is the $schema of a type schema.
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// MetaDir is the directory whose files are meta-schemas for data documents;
// nothing is generated from it.
const MetaDir = "meta"

// Error is a problem in one schema file, located by JSON pointer.
type Error struct {
	File    string
	Pointer string
	Msg     string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + "#" + e.Pointer + ": " + e.Msg
}

func errAt(file, ptr, format string, args ...any) error {
	return &Error{File: file, Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
}

// file is one parsed schema file.
type file struct {
	rel     string // path relative to the schema root
	display string // path as shown in errors
	id      string
	schema  string
	plain   any     // for the JSON Schema engine
	doc     *object // ordered, for the model
	pkg     *model.Package
}

// Load reads every *.json file under fsys (the schema directory). Files at
// the top level form the package named pkgName; each sub-directory forms a
// package named after it. display is prefixed to file names in errors.
// importPath is the Go import path of the output directory, under which each
// package's import path is its directory; it may be empty when no type refers
// to a type of another package.
func Load(fsys fs.FS, display, pkgName, importPath string) (*model.Model, error) {
	var files []*file
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f := &file{rel: p, display: path.Join(display, p)}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&f.plain); err != nil {
			return errAt(f.display, "", "not JSON: %v", err)
		}
		doc, err := decodeOrdered(data)
		if err != nil {
			return errAt(f.display, "", "not JSON: %v", err)
		}
		o, ok := doc.(*object)
		if !ok {
			return errAt(f.display, "", "a schema file must hold a JSON object")
		}
		f.doc = o
		f.id, _ = str(o, "$id")
		f.schema, _ = str(o, "$schema")
		if f.schema == "" {
			return errAt(f.display, "", "missing $schema")
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errAt(display, "", "no *.json schema files")
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	byID := map[string]*file{}
	for _, f := range files {
		if f.id == "" {
			if f.schema == Draft2020 || isMeta(f) {
				return nil, errAt(f.display, "", "missing $id")
			}
			continue
		}
		if other, dup := byID[f.id]; dup {
			return nil, errAt(f.display, "/$id", "same $id as %s", other.display)
		}
		byID[f.id] = f
		if f.schema == Draft2020 {
			if err := c.AddResource(f.id, f.plain); err != nil {
				return nil, errAt(f.display, "", "%v", err)
			}
		}
	}

	l := &loader{files: files, byID: byID, compiler: c, pkgName: pkgName, importPath: importPath,
		pkgs: map[string]*model.Package{}, types: map[string]*model.Type{}}
	return l.run()
}

func isMeta(f *file) bool { return strings.HasPrefix(f.rel, MetaDir+"/") }

type loader struct {
	files    []*file
	byID     map[string]*file
	compiler *jsonschema.Compiler
	pkgName  string
	// importPath is the import path of the output directory ("" if unknown).
	importPath string
	pkgs       map[string]*model.Package
	// types maps "<file id>#/$defs/<name>" to named types.
	types map[string]*model.Type
	// refs lists, per package, the packages its types refer to, each with
	// the first reference (file and pointer) in schema order.
	refs map[*model.Package][]pkgRef
	// defs holds the definitions being read, to resolve references.
	pending []pendingType
}

type pkgRef struct {
	to        *model.Package
	file, ptr string
}

type pendingType struct {
	f    *file
	name string
	def  *object
	t    *model.Type
}

func (l *loader) pkgFor(f *file) *model.Package {
	dir := path.Dir(f.rel)
	if dir == "." {
		dir = ""
	}
	p := l.pkgs[dir]
	if p == nil {
		name := l.pkgName
		if dir != "" {
			name = path.Base(dir)
		}
		p = &model.Package{Name: name, Dir: dir}
		if l.importPath != "" {
			p.ImportPath = path.Join(l.importPath, dir)
		}
		l.pkgs[dir] = p
	}
	return p
}

func (l *loader) run() (*model.Model, error) {
	// 1. Compile every type schema definition and validate every data
	// document, so that errors in the schemas themselves come first.
	for _, f := range l.files {
		if isMeta(f) {
			continue
		}
		if f.schema == Draft2020 {
			defs, ok := obj(f.doc, "$defs")
			if !ok {
				return nil, errAt(f.display, "", "a type schema holds its types under $defs")
			}
			for _, name := range defs.keys {
				if _, err := l.compiler.Compile(f.id + "#/$defs/" + escapePtr(name)); err != nil {
					return nil, l.engineErr(f, err)
				}
			}
			continue
		}
		meta, ok := l.byID[f.schema]
		if !ok || !isMeta(meta) {
			return nil, errAt(f.display, "/$schema", "unknown $schema %q (neither JSON Schema 2020-12 nor a meta-schema under %s/)", f.schema, MetaDir)
		}
		if err := l.compiler.AddResource(meta.id, meta.plain); err != nil && !isExists(err) {
			return nil, errAt(meta.display, "", "%v", err)
		}
		sch, err := l.compiler.Compile(meta.id)
		if err != nil {
			return nil, l.engineErr(meta, err)
		}
		if err := sch.Validate(f.plain); err != nil {
			return nil, errAt(f.display, "", "does not satisfy %s: %v", meta.display, err)
		}
	}

	// 2. Declare named types, then read them (references may point forward).
	for _, f := range l.files {
		if isMeta(f) {
			continue
		}
		f.pkg = l.pkgFor(f)
		f.pkg.Sources = append(f.pkg.Sources, f.rel)
		if f.schema != Draft2020 {
			continue
		}
		if err := checkKeys(f, "", f.doc, fileKeywords); err != nil {
			return nil, err
		}
		defs, _ := obj(f.doc, "$defs")
		for _, name := range defs.keys {
			def, ok := defs.m[name].(*object)
			ptr := "/$defs/" + escapePtr(name)
			if !ok {
				return nil, errAt(f.display, ptr, "a definition must be an object")
			}
			kind, named := namedKind(def)
			if !named {
				continue
			}
			if !isGoName(name) {
				return nil, errAt(f.display, ptr, "definition name %q is not an exported Go name", name)
			}
			t := &model.Type{Name: name, Source: f.rel, Ptr: ptr, Kind: kind, ImportPath: f.pkg.ImportPath}
			t.Doc, _ = str(def, "description")
			for _, other := range f.pkg.Types {
				if other.Name == name {
					return nil, errAt(f.display, ptr, "type %s is also defined in %s", name, other.Source)
				}
			}
			f.pkg.Types = append(f.pkg.Types, t)
			l.types[f.id+"#"+ptr] = t
			l.pending = append(l.pending, pendingType{f: f, name: name, def: def, t: t})
		}
	}
	for _, p := range l.pending {
		var err error
		if p.t.Kind == model.KindEnum {
			err = l.readEnum(p)
		} else {
			err = l.readObject(p)
		}
		if err != nil {
			return nil, err
		}
	}

	// 3. Data documents.
	for _, f := range l.files {
		if isMeta(f) || f.schema == Draft2020 {
			continue
		}
		if err := l.readData(f); err != nil {
			return nil, err
		}
	}

	m := &model.Model{}
	for _, p := range l.pkgs {
		sort.Slice(p.Types, func(i, j int) bool { return p.Types[i].Name < p.Types[j].Name })
		sort.Slice(p.Constants, func(i, j int) bool { return p.Constants[i].Name < p.Constants[j].Name })
		sort.Slice(p.Machines, func(i, j int) bool { return p.Machines[i].Name < p.Machines[j].Name })
		if err := checkNames(p); err != nil {
			return nil, err
		}
		m.Packages = append(m.Packages, p)
	}
	sort.Slice(m.Packages, func(i, j int) bool { return m.Packages[i].Dir < m.Packages[j].Dir })
	if err := l.checkImportCycles(m); err != nil {
		return nil, err
	}
	return m, nil
}

func isExists(err error) bool {
	var e *jsonschema.ResourceExistsError
	return errors.As(err, &e)
}

// engineErr rewrites the engine's schema URLs into file names.
func (l *loader) engineErr(f *file, err error) error {
	msg := err.Error()
	for id, g := range l.byID {
		msg = strings.ReplaceAll(msg, id, g.display)
	}
	return &Error{File: f.display, Msg: "invalid schema: " + msg}
}

// namedKind reports whether a definition becomes a named Go type: an object
// with properties, or a string enum.
func namedKind(def *object) (model.Kind, bool) {
	if _, ok := def.get("properties"); ok {
		return model.KindObject, true
	}
	if _, ok := def.get("oneOf"); ok {
		return model.KindObject, true
	}
	if _, ok := def.get("enum"); ok {
		if t, _ := str(def, "type"); t == "string" {
			return model.KindEnum, true
		}
	}
	return 0, false
}

func escapePtr(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func str(o *object, k string) (string, bool) {
	v, ok := o.get(k)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func obj(o *object, k string) (*object, bool) {
	v, ok := o.get(k)
	if !ok {
		return nil, false
	}
	c, ok := v.(*object)
	return c, ok
}

func isGoName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkImportCycles refuses references across packages that would make Go
// packages import each other. The first reference of each edge is kept to
// name in the error.
func (l *loader) checkImportCycles(m *model.Model) error {
	var visit func(p *model.Package, stack []*model.Package) error
	state := map[*model.Package]int{} // 1: on the stack, 2: done
	visit = func(p *model.Package, stack []*model.Package) error {
		state[p] = 1
		stack = append(stack, p)
		for _, e := range l.refs[p] {
			switch state[e.to] {
			case 1:
				var names []string
				for i := len(stack) - 1; i >= 0; i-- {
					names = append([]string{stack[i].Name}, names...)
					if stack[i] == e.to {
						break
					}
				}
				names = append(names, e.to.Name)
				return errAt(e.file, e.ptr, "this reference makes the generated packages import each other (%s)", strings.Join(names, " -> "))
			case 0:
				if err := visit(e.to, stack); err != nil {
					return err
				}
			}
		}
		state[p] = 2
		return nil
	}
	for _, p := range m.Packages {
		if state[p] == 0 {
			if err := visit(p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
