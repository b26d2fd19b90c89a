package load

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/a2abind/a2abind/gen/model"
)

const metaPrefix = "https://a2abind.dev/schema/meta/"

// readData reads a data document (already validated against its
// meta-schema) into the package model.
func (l *loader) readData(f *file) error {
	raw, err := json.Marshal(f.plain)
	if err != nil {
		return errAt(f.display, "", "%v", err)
	}
	kind := strings.TrimSuffix(strings.TrimPrefix(f.schema, metaPrefix), ".json")
	p := f.pkg
	switch kind {
	case "errors":
		var doc struct{ Errors []*model.ErrorToken }
		if err := json.Unmarshal(raw, &doc); err != nil {
			return errAt(f.display, "", "%v", err)
		}
		if p.Errors != nil {
			return errAt(f.display, "", "a package may have one error table (also %s)", p.ErrorsSource)
		}
		seen := map[string]int{}
		names := map[string]int{}
		for i, e := range doc.Errors {
			if j, dup := seen[e.Token]; dup {
				return errAt(f.display, fmt.Sprintf("/errors/%d/token", i), "token %q also at /errors/%d", e.Token, j)
			}
			if j, dup := names[e.Name]; dup {
				return errAt(f.display, fmt.Sprintf("/errors/%d/name", i), "name %q also at /errors/%d", e.Name, j)
			}
			seen[e.Token], names[e.Name] = i, i
		}
		p.Errors, p.ErrorsSource = doc.Errors, f.rel
	case "properties":
		var doc struct{ Properties []*model.Property }
		if err := json.Unmarshal(raw, &doc); err != nil {
			return errAt(f.display, "", "%v", err)
		}
		if p.Properties != nil {
			return errAt(f.display, "", "a package may have one property table (also %s)", p.PropertiesSource)
		}
		seen := map[string]bool{}
		for i, pr := range doc.Properties {
			if seen[pr.Key] || seen[pr.Name] {
				return errAt(f.display, fmt.Sprintf("/properties/%d", i), "key %q or name %q is used twice", pr.Key, pr.Name)
			}
			seen[pr.Key], seen[pr.Name] = true, true
		}
		p.Properties, p.PropertiesSource = doc.Properties, f.rel
	case "topics":
		var t model.Topics
		if err := json.Unmarshal(raw, &t); err != nil {
			return errAt(f.display, "", "%v", err)
		}
		t.Source = f.rel
		if p.Topics != nil {
			return errAt(f.display, "", "a package may have one topic table (also %s)", p.Topics.Source)
		}
		if _, err := regexp.Compile(t.IdentifierPattern); err != nil {
			return errAt(f.display, "/identifierPattern", "%v", err)
		}
		known := map[string]bool{}
		for _, id := range t.Identifiers {
			known[id.Placeholder] = true
		}
		if err := checkRoot(f.display, &t); err != nil {
			return err
		}
		ph := regexp.MustCompile(`\{([^}]*)\}`)
		for i, tp := range t.Topics {
			for _, m := range ph.FindAllStringSubmatch(tp.Template, -1) {
				if t.Root != nil && m[1] == t.Root.Placeholder {
					continue
				}
				if !known[m[1]] {
					return errAt(f.display, fmt.Sprintf("/topics/%d/template", i), "placeholder {%s} is not listed in identifiers", m[1])
				}
			}
		}
		p.Topics = &t
	case "constants":
		var cs model.ConstantSet
		if err := json.Unmarshal(raw, &cs); err != nil {
			return errAt(f.display, "", "%v", err)
		}
		cs.Source = f.rel
		for _, other := range p.Constants {
			if other.Name == cs.Name {
				return errAt(f.display, "/name", "%s is also defined in %s", cs.Name, other.Source)
			}
		}
		p.Constants = append(p.Constants, &cs)
	case "fsm":
		m, err := readMachine(f, raw)
		if err != nil {
			return err
		}
		for _, other := range p.Machines {
			if other.Name == m.Name {
				return errAt(f.display, "/name", "machine %s is also defined in %s", m.Name, other.Source)
			}
		}
		p.Machines = append(p.Machines, m)
	default:
		return errAt(f.display, "/$schema", "no generator for data documents of kind %q", kind)
	}
	return nil
}

func readMachine(f *file, raw []byte) (*model.Machine, error) {
	var doc struct {
		Name, Description, Source, Initial string
		States                             []model.State
		Events, Guards, Outputs            []model.Named
		Transitions                        []struct {
			From                   []string
			Event, Guard, To, Note string
			Outputs                []string
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errAt(f.display, "", "%v", err)
	}
	m := &model.Machine{Name: doc.Name, Description: doc.Description, Origin: doc.Source, Source: f.rel,
		Initial: doc.Initial, States: doc.States, Events: doc.Events, Guards: doc.Guards, Outputs: doc.Outputs}
	states := map[string]*model.State{}
	declare := func(ptr, name string, seen map[string]bool) error {
		if seen[name] {
			return errAt(f.display, ptr, "%q is declared twice", name)
		}
		seen[name] = true
		return nil
	}
	all := map[string]bool{}
	for i := range m.States {
		if err := declare(fmt.Sprintf("/states/%d/name", i), m.States[i].Name, all); err != nil {
			return nil, err
		}
		states[m.States[i].Name] = &m.States[i]
	}
	events, guards, outputs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, e := range m.Events {
		if err := declare(fmt.Sprintf("/events/%d/name", i), e.Name, events); err != nil {
			return nil, err
		}
	}
	for i, g := range m.Guards {
		if err := declare(fmt.Sprintf("/guards/%d/name", i), g.Name, guards); err != nil {
			return nil, err
		}
	}
	for i, o := range m.Outputs {
		if err := declare(fmt.Sprintf("/outputs/%d/name", i), o.Name, outputs); err != nil {
			return nil, err
		}
	}
	if states[m.Initial] == nil {
		return nil, errAt(f.display, "/initial", "initial state %q is not declared", m.Initial)
	}
	// The generated sets of guards and outputs are bits of a uint64.
	if len(m.Guards) > 64 {
		return nil, errAt(f.display, "/guards", "%d guards; a machine may have at most 64", len(m.Guards))
	}
	if len(m.Outputs) > 64 {
		return nil, errAt(f.display, "/outputs", "%d outputs; a machine may have at most 64", len(m.Outputs))
	}
	rows := map[string]int{}
	for i, t := range doc.Transitions {
		ptr := "/transitions/" + strconv.Itoa(i)
		if !events[t.Event] {
			return nil, errAt(f.display, ptr+"/event", "event %q is not declared", t.Event)
		}
		if t.Guard != "" && !guards[t.Guard] {
			return nil, errAt(f.display, ptr+"/guard", "guard %q is not declared", t.Guard)
		}
		if states[t.To] == nil {
			return nil, errAt(f.display, ptr+"/to", "state %q is not declared", t.To)
		}
		for j, o := range t.Outputs {
			if !outputs[o] {
				return nil, errAt(f.display, ptr+"/outputs/"+strconv.Itoa(j), "output %q is not declared", o)
			}
		}
		for j, from := range t.From {
			st := states[from]
			if st == nil {
				return nil, errAt(f.display, ptr+"/from/"+strconv.Itoa(j), "state %q is not declared", from)
			}
			if st.Terminal {
				return nil, errAt(f.display, ptr+"/from/"+strconv.Itoa(j), "state %q is terminal: no transition may leave it", from)
			}
			key := from + "\x00" + t.Event + "\x00" + t.Guard
			if k, dup := rows[key]; dup {
				return nil, errAt(f.display, ptr, "(%s, %s, guard %q) is already defined by /transitions/%d", from, t.Event, t.Guard, k)
			}
			rows[key] = i
			m.Transitions = append(m.Transitions, model.Transition{From: from, Event: t.Event, Guard: t.Guard, To: t.To, Note: t.Note, Outputs: t.Outputs, Rule: i})
		}
	}
	// Reachability from the initial state.
	reach := map[string]bool{m.Initial: true}
	for changed := true; changed; {
		changed = false
		for _, t := range m.Transitions {
			if reach[t.From] && !reach[t.To] {
				reach[t.To] = true
				changed = true
			}
		}
	}
	var unreachable []string
	for _, s := range m.States {
		if !reach[s.Name] {
			unreachable = append(unreachable, s.Name)
		}
	}
	if len(unreachable) > 0 {
		sort.Strings(unreachable)
		return nil, errAt(f.display, "/states", "unreachable from %s: %s", m.Initial, strings.Join(unreachable, ", "))
	}
	return m, nil
}

// checkNames refuses Go identifiers that two generated declarations would
// both use.
func checkNames(p *model.Package) error {
	owner := map[string]string{}
	claim := func(name, by string) error {
		if prev, dup := owner[name]; dup {
			return &Error{File: by, Msg: fmt.Sprintf("Go name %s is generated twice (also for %s)", name, prev)}
		}
		owner[name] = by
		return nil
	}
	for _, t := range p.Types {
		if err := claim(t.Name, t.Source+"#"+t.Ptr); err != nil {
			return err
		}
		for _, v := range t.Values {
			if err := claim(v.GoName, t.Source+"#"+t.Ptr); err != nil {
				return err
			}
		}
		if t.OneOf != nil {
			if err := claim(t.OneOf.Interface, t.Source+"#"+t.Ptr); err != nil {
				return err
			}
			for _, m := range t.OneOf.Members {
				if m.Wrapper != "" {
					if err := claim(m.Wrapper, t.Source+"#"+t.Ptr); err != nil {
						return err
					}
				}
			}
		}
		if t.Kind == model.KindObject {
			if err := claim("Validate"+t.Name+"JSON", t.Source+"#"+t.Ptr); err != nil {
				return err
			}
			if err := claim("Parse"+t.Name+"JSON", t.Source+"#"+t.Ptr); err != nil {
				return err
			}
		}
	}
	for _, c := range p.Constants {
		if err := claim(c.Name, c.Source); err != nil {
			return err
		}
		if err := claim("Default"+c.Name, c.Source); err != nil {
			return err
		}
	}
	for _, m := range p.Machines {
		for _, suffix := range []string{"State", "Event", "Guard", "Output", "Transition", "Table"} {
			if err := claim(m.Name+suffix, m.Source); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRoot checks a topic table's root: its default is a valid root, and
// every template it stands in begins with it, or with $share/{group}/ and
// then it, followed by a level separator.
func checkRoot(display string, t *model.Topics) error {
	r := t.Root
	if r == nil {
		return nil
	}
	if r.Placeholder == "" {
		return errAt(display, "/root/placeholder", "the root needs a placeholder")
	}
	id := regexp.MustCompile(t.IdentifierPattern)
	if len(r.Default) > r.MaxLength {
		return errAt(display, "/root/default", "%q is longer than maxLength %d", r.Default, r.MaxLength)
	}
	for i, level := range strings.Split(r.Default, "/") {
		name := level
		if i == 0 {
			name = strings.TrimPrefix(level, "$")
		}
		if !id.MatchString(name) {
			return errAt(display, "/root/default", "level %q of %q does not match %s", level, r.Default, t.IdentifierPattern)
		}
		if i == 0 && slices.Contains(r.ReservedFirstLevels, level) {
			return errAt(display, "/root/default", "%q begins with the reserved level %s", r.Default, level)
		}
	}
	ph := "{" + r.Placeholder + "}/"
	share := regexp.MustCompile(`^\$share/\{[a-z_]+\}/`)
	for i, tp := range t.Topics {
		n := strings.Count(tp.Template, "{"+r.Placeholder+"}")
		if n == 0 {
			continue
		}
		rest := share.ReplaceAllString(tp.Template, "")
		if n != 1 || !strings.HasPrefix(rest, ph) {
			return errAt(display, fmt.Sprintf("/topics/%d/template", i), "{%s} must begin the template (or follow $share/{group}/), once, followed by /", r.Placeholder)
		}
	}
	return nil
}
