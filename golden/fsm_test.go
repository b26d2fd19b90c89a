package golden

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// machineFiles are the state machine schemas and the directory their
// generated code is in.
var machineFiles = []struct{ schema, out string }{
	{"../schema/fsm/handover.json", "../generated/fsm"},
	{"../schema/fsm/presence.json", "../generated/fsm"},
	{"../schema/fsm/pushbind.json", "../generated/fsm"},
	{"../schema/fsm/tasklife.json", "../generated/fsm"},
	{"cases/sample/schema/door.json", "cases/sample/want"},
}

// machineDoc is what these tests read of a machine schema.
type machineDoc struct {
	Name    string
	Initial string
	States  []struct {
		Name     string
		Terminal bool
	}
	Transitions []struct {
		From                   []string
		Event, Guard, To, Note string
		Outputs                []string
	}
}

// row is one expanded table row with the note it must carry: a rule's note
// leads its first row only.
type row struct {
	from, event, guard, to, note string
	outputs                      []string
}

func readMachine(t *testing.T, path string) (machineDoc, []row) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m machineDoc
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, tr := range m.Transitions {
		for i, from := range tr.From {
			r := row{from: from, event: tr.Event, guard: tr.Guard, to: tr.To, outputs: tr.Outputs}
			if i == 0 {
				r.note = tr.Note
			}
			rows = append(rows, r)
		}
	}
	return m, rows
}

// TestMachineNotesLeadTheirRows reads each generated table with go/parser
// and checks that every row carries, as its leading comment, exactly the
// note of the schema rule it comes from (on the rule's first row), and that
// the row is that rule's: a note shifted onto a neighbouring row fails.
func TestMachineNotesLeadTheirRows(t *testing.T) {
	for _, mf := range machineFiles {
		t.Run(filepath.Base(mf.schema), func(t *testing.T) {
			m, rows := readMachine(t, mf.schema)
			goFile := filepath.Join(mf.out, strings.TrimSuffix(filepath.Base(mf.schema), ".json")+".go")
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, goFile, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			table := strings.ToLower(m.Name[:1]) + m.Name[1:] + "Table"
			lit := findTable(f, table)
			if lit == nil {
				t.Fatalf("%s: no var %s", goFile, table)
			}
			if len(lit.Elts) != len(rows) {
				t.Fatalf("%s has %d rows, the schema %d", table, len(lit.Elts), len(rows))
			}
			// The comment ending on the line before a row leads it.
			leading := map[int]string{}
			for _, cg := range f.Comments {
				if cg.Pos() > lit.Lbrace && cg.End() < lit.Rbrace {
					leading[fset.Position(cg.End()).Line+1] = strings.Join(strings.Fields(cg.Text()), " ")
				}
			}
			for i, e := range lit.Elts {
				want := rows[i]
				got := leading[fset.Position(e.Pos()).Line]
				if got != strings.Join(strings.Fields(want.note), " ") {
					t.Errorf("row %d (%s --%s--> %s): leading comment %q, want %q", i, want.from, want.event, want.to, got, want.note)
				}
				fields := map[string]string{}
				for _, kv := range e.(*ast.CompositeLit).Elts {
					kv := kv.(*ast.KeyValueExpr)
					fields[kv.Key.(*ast.Ident).Name] = exprString(t, fset, kv.Value)
				}
				if fields["From"] != m.Name+"State"+want.from || fields["Event"] != m.Name+"Event"+want.event || fields["To"] != m.Name+"State"+want.to {
					t.Errorf("row %d is %v, want %s --%s--> %s", i, fields, want.from, want.event, want.to)
				}
				if want.guard != "" && fields["Guard"] != m.Name+"Guard"+want.guard {
					t.Errorf("row %d guard %q, want %s", i, fields["Guard"], want.guard)
				}
			}
		})
	}
}

func findTable(f *ast.File, name string) *ast.CompositeLit {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) == 1 && vs.Names[0].Name == name && len(vs.Values) == 1 {
				lit, _ := vs.Values[0].(*ast.CompositeLit)
				return lit
			}
		}
	}
	return nil
}

func exprString(t *testing.T, fset *token.FileSet, e ast.Expr) string {
	t.Helper()
	start, end := fset.Position(e.Pos()), fset.Position(e.End())
	data, err := os.ReadFile(start.Filename)
	if err != nil {
		t.Fatal(err)
	}
	return string(data[start.Offset:end.Offset])
}

var arrow = regexp.MustCompile(`^    (\S+) --> (\S+)(?: : (\S+)(?: \[(\S+)\])?(?: / (.+))?)?$`)

// TestMachineDiagramsDrawTheTable checks the Mermaid diagram generated
// beside each table: the initial state, one arrow per row in table order
// with its event, guard and outputs, and an end arrow per terminal state.
func TestMachineDiagramsDrawTheTable(t *testing.T) {
	for _, mf := range machineFiles {
		t.Run(filepath.Base(mf.schema), func(t *testing.T) {
			m, rows := readMachine(t, mf.schema)
			md := filepath.Join(mf.out, strings.TrimSuffix(filepath.Base(mf.schema), ".json")+".md")
			data, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			start := strings.Index(text, "```mermaid\nstateDiagram-v2\n")
			end := strings.LastIndex(text, "```\n")
			if start < 0 || end <= start {
				t.Fatalf("%s has no mermaid state diagram", md)
			}
			var want []string
			want = append(want, "[*] "+m.Initial)
			for _, r := range rows {
				want = append(want, r.from+" "+r.to+" "+r.event+" "+r.guard+" "+strings.Join(r.outputs, ", "))
			}
			for _, s := range m.States {
				if s.Terminal {
					want = append(want, s.Name+" [*]")
				}
			}
			var got []string
			for _, line := range strings.Split(strings.Trim(text[start+len("```mermaid\nstateDiagram-v2\n"):end], "\n"), "\n") {
				a := arrow.FindStringSubmatch(line)
				if a == nil {
					t.Fatalf("%s: not an arrow: %q", md, line)
				}
				if a[3] == "" {
					got = append(got, a[1]+" "+a[2])
				} else {
					got = append(got, a[1]+" "+a[2]+" "+a[3]+" "+a[4]+" "+a[5])
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s arrows:\n%s\nwant:\n%s", md, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
