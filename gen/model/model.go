// Package model is the generator's intermediate representation: the schemas
// under schema/ read into plain Go values, sorted and checked, with no I/O and
// no code generation. gen/load builds it; the emitters in gen read it.
package model

// Model is everything one a2agen run generates from.
type Model struct {
	// Packages are sorted by Dir.
	Packages []*Package
}

// Package is one generated Go package: the files of one schema directory.
type Package struct {
	// Name is the Go package name.
	Name string
	// Dir is the output directory relative to the -out directory ("" for the
	// top level).
	Dir string
	// ImportPath is the package's Go import path, or "" when the import path
	// of the output is not known (then no type may refer to another
	// package's).
	ImportPath string
	// Sources are the schema files that fed the package, relative to the
	// schema directory, sorted.
	Sources []string
	// Types are the named types of the package's type schemas, sorted by name.
	Types []*Type
	// Errors is the error-token table, in the order of the document.
	Errors []*ErrorToken
	// ErrorsSource is the file the error table came from.
	ErrorsSource string
	// Properties are MQTT user properties, in document order.
	Properties       []*Property
	PropertiesSource string
	// Topics is the topic table, if the package has one.
	Topics *Topics
	// Constants are the tables of named defaults, sorted by name.
	Constants []*ConstantSet
	// Machines are the state machine tables, sorted by name.
	Machines []*Machine
}

// Kind says what a named type or type reference is.
type Kind int

// The kinds of type.
const (
	KindString Kind = iota
	KindBytes
	KindInt32
	KindInt64
	KindFloat
	KindBool
	KindStruct // free JSON object: map[string]any
	KindValue  // free JSON value: any
	KindRaw    // JSON kept as bytes: json.RawMessage
	KindArray
	KindMap
	KindObject // a named object type
	KindEnum   // a named string enum type
)

// Type is a named type: an object or an enum.
type Type struct {
	Name   string
	Doc    string
	Source string // schema file, relative
	// ImportPath is the import path of the type's package (see
	// Package.ImportPath).
	ImportPath string
	Ptr        string // JSON pointer of the definition in its file
	Kind       Kind   // KindObject or KindEnum

	// Objects.
	Fields []*Field
	OneOf  *OneOf
	// Discriminated binds a raw field's schema to the value of a string
	// field (JSON-RPC params by method).
	Discriminated *Discriminated
	MinProperties int

	// Enums.
	Values []*EnumValue
}

// EnumValue is one value of an enum.
type EnumValue struct {
	Wire   string
	GoName string // full constant name
	Doc    string
}

// OneOf is a group of member fields of which exactly one is present.
type OneOf struct {
	// GoName is the name of the struct field holding the member.
	GoName string
	// Interface is the name of the sealed interface type.
	Interface string
	// Members are the member fields, in schema order.
	Members []*Field
}

// Discriminated binds the raw field Field to a type per value of Key.
type Discriminated struct {
	Key   *Field
	Field *Field
	Cases []DiscriminatedCase
}

// DiscriminatedCase binds one value to one type.
type DiscriminatedCase struct {
	Value string
	Type  *Type
	// Required says the bound field must be present for this value.
	Required bool
}

// Field is a property of an object.
type Field struct {
	JSON     string
	GoName   string
	Doc      string
	Required bool
	// Pointer marks a scalar with explicit presence (x-go-pointer).
	Pointer bool
	Ref     *Ref
	// Member is set for oneof members: the Go type wrapping a scalar member
	// (empty for object members, which use *T).
	Wrapper string
	// ErrorInfoCode, set by x-error-info on the data member of a JSON-RPC
	// error object, names the member holding the error code: when the code
	// claims an A2A error, data in its array form must hold a well-formed
	// google.rpc.ErrorInfo.
	ErrorInfoCode string
	// ItemBound, set by x-item-bound on an array member, lets a reader
	// bound the member's items at run time (runtime.Decoder.BoundItems):
	// past the bound the reading stops, for a reader with another way to
	// answer (a message's parts, under a responder's part limit).
	ItemBound bool
}

// Ref is the type of a field, an array element or a map value, with the
// constraints written on it.
type Ref struct {
	Kind  Kind
	Named *Type // KindObject, KindEnum
	Elem  *Ref  // KindArray, KindMap
	// RawKinds lists the JSON kinds a KindRaw value may have (nil: any).
	RawKinds []string
	C        Constraints
}

// Constraints are the validation keywords on one schema node.
type Constraints struct {
	MinLength, MaxLength *int
	MinItems, MaxItems   *int
	Minimum, Maximum     *float64
	Pattern              string
	Format               string
	Const                *string // string constants
	ConstBool            *bool
	NotConst             *string
	Enum                 []string // inline string enum
	MinProperties        *int
}

// ErrorToken is one row of the error table.
type ErrorToken struct {
	Token, Name, Profile, Data, Message, Description, Reference string
	Code                                                        int
	HTTPStatus                                                  int
	Retryable                                                   bool
}

// Property is an MQTT user property.
type Property struct {
	Key, Name, Format, Description string
	AppearsIn                      []string
	Values                         []PropertyValue
	Secret                         bool
}

// PropertyValue is one allowed value of a property.
type PropertyValue struct {
	Value, Name, Description string
}

// Topics is a binding's topic table.
type Topics struct {
	Source            string
	IdentifierPattern string
	// Root is the topic root placeholder, if the templates have one.
	Root        *TopicRoot
	Identifiers []Identifier
	Topics      []Topic
	SharedGroup *SharedGroup
}

// TopicRoot is the placeholder of the first levels of a binding's topics,
// chosen at run time.
type TopicRoot struct {
	Placeholder, Default, Description string
	MaxLength                         int
	ReservedFirstLevels               []string
}

// Identifier is a topic placeholder.
type Identifier struct {
	Placeholder, Name, Description string
}

// Topic is a topic template.
type Topic struct {
	Name, Template, Description string
	Filter                      bool
}

// SharedGroup says how a shared-subscription group id is derived.
type SharedGroup struct {
	DefaultTemplate, Allowed, Replacement string
	MaxLength, HashHexDigits              int
}

// ConstantSet is a named table of defaults.
type ConstantSet struct {
	Name, Description, Source string
	Constants                 []Constant
	Lists                     []ConstantList
}

// Constant is one named default.
type Constant struct {
	Name, Key, Unit, Description string
	Default                      float64
	Minimum                      *float64
}

// ConstantList is a named list of defaults.
type ConstantList struct {
	Name, Key, Unit, Description string
	Default                      []float64
}

// Machine is a state machine table.
type Machine struct {
	Name, Description, Source, Origin string
	Initial                           string
	States                            []State
	Events, Guards, Outputs           []Named
	Transitions                       []Transition
}

// State is one state of a machine.
type State struct {
	Name, Wire, Description string
	Terminal                bool
	Tags                    []string
}

// Named is an event, guard or output.
type Named struct {
	Name, Description string
}

// Transition is one row of a table (with From expanded to one state).
type Transition struct {
	From, Event, Guard, To, Note string
	Outputs                      []string
	// Rule is the index of the document's transition the row comes from:
	// the rows of one rule (one per From state) are consecutive.
	Rule int
}
