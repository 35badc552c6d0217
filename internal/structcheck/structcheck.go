// Package structcheck checks the structured results of tool calls
// against their output schemas, as sdk.ValidateStructured does, at a
// fraction of its cost: the host checks every structured result of every
// call.
package structcheck

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/sdk"
)

// A Validator checks structured results against one output
// schema, as sdk.ValidateStructured does, at a fraction of its cost: the
// host checks every structured result of every call.
//
// It compiles the schema once. A schema made only of what output
// schemas inferred by NewStructuredTool use (type, properties, required,
// additionalProperties, items, minimum, maximum, and annotations such
// as description) is compiled to a shape that the JSON text is checked
// against directly, as it is read, without decoding it. A result the
// shape accepts is one that sdk.ValidateStructured accepts; for any other
// (one that does not conform, or that the shape cannot judge: a key
// written with escapes, a number encoding/json cannot hold, a nesting
// deeper than maxShapeDepth) sdk.ValidateStructured decides and gives its
// error. A schema with any other keyword is always left to
// sdk.ValidateStructured. So the answers, errors included, are exactly
// sdk.ValidateStructured's.
type Validator struct {
	resolved *jsonschema.Resolved
	shape    *shape // nil: every result is sdk.ValidateStructured's
}

// New returns the validator of a resolved output
// schema.
func New(resolved *jsonschema.Resolved) *Validator {
	return &Validator{resolved: resolved, shape: compileShape(resolved.Schema())}
}

// Validate checks a structured result: it must be a JSON object that
// conforms to the schema. It returns what sdk.ValidateStructured returns.
func (v *Validator) Validate(structured json.RawMessage) error {
	if v.shape != nil && v.shape.accepts(structured) {
		return nil
	}
	return sdk.ValidateStructured(v.resolved, structured)
}

// kinds is a set of JSON types, as JSON Schema's "type" names them; an
// integer is a number without a fractional part.
type kinds uint8

const (
	kindNull kinds = 1 << iota
	kindBoolean
	kindInteger
	kindFraction // a number that is not an integer
	kindString
	kindArray
	kindObject

	kindAny = kindNull | kindBoolean | kindInteger | kindFraction | kindString | kindArray | kindObject
)

// kindOf is the kinds of a "type" name: "number" is any number.
var kindOf = map[string]kinds{
	"null": kindNull, "boolean": kindBoolean, "integer": kindInteger, "number": kindInteger | kindFraction,
	"string": kindString, "array": kindArray, "object": kindObject,
}

// A shape is a compiled schema: the kinds it allows and, for each kind,
// what it asks of a value of that kind. A schema says nothing of the
// kinds it does not name ("properties" of a string): the checks of a
// kind apply only to values of that kind, as in JSON Schema.
type shape struct {
	allow kinds
	// Objects: props are the named properties (a slice, read in order:
	// faster than a map for the few properties a result has); the
	// required ones have a bit in required. Another property must conform
	// to extra, or there is none when closed (additionalProperties false).
	props    []prop
	required uint64
	extra    *shape
	closed   bool
	// Arrays: every item conforms to items.
	items *shape
	// Numbers: minimum and maximum, inclusive, when set.
	min, max *float64
}

// A prop is a named property of an object shape.
type prop struct {
	name  string
	shape *shape
	bit   uint64 // its bit in the shape's required, 0 if optional
}

// anything is the shape of the empty schema, which any value conforms
// to: its properties and items too.
var anything = func() *shape {
	sh := &shape{allow: kindAny}
	sh.extra, sh.items = sh, sh
	return sh
}()

// maxShapeDepth bounds the nesting of a result that a shape judges:
// deeper results are left to sdk.ValidateStructured (encoding/json refuses
// nesting deeper than 10000).
const maxShapeDepth = 1000

// compileShape compiles a resolved schema, or returns nil when it uses
// a keyword besides those a shape has, or the annotations.
func compileShape(s *jsonschema.Schema) *shape {
	if s == nil {
		return anything
	}
	if !onlyShapeKeywords(s) {
		return nil
	}
	sh := &shape{allow: kindAny, closed: isFalse(s.AdditionalProperties), min: s.Minimum, max: s.Maximum}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 {
		sh.allow = 0
		for _, t := range types {
			k, ok := kindOf[t]
			if !ok {
				return nil
			}
			sh.allow |= k
		}
	}
	// The required properties each have a bit: up to 64 of them, and
	// each one of the named properties (else its value is
	// additionalProperties' to check, which a shape does not do).
	if len(s.Required) > 64 {
		return nil
	}
	bits := make(map[string]uint64, len(s.Required))
	for i, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			return nil
		}
		bits[name] = 1 << i
		sh.required |= 1 << i
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := compileShape(s.Properties[name])
		if p == nil {
			return nil
		}
		sh.props = append(sh.props, prop{name: name, shape: p, bit: bits[name]})
	}
	if !sh.closed {
		if sh.extra = compileShape(s.AdditionalProperties); sh.extra == nil {
			return nil
		}
	}
	if sh.items = compileShape(s.Items); sh.items == nil {
		return nil
	}
	return sh
}

// onlyShapeKeywords reports whether s has no keyword but those a shape
// compiles and the annotations, which validation ignores. $schema and
// $id are allowed too: the drafts agree on the keywords of a shape, and
// an $id matters only to a $ref, which a shape does not have; nor do
// $defs matter without one.
func onlyShapeKeywords(s *jsonschema.Schema) bool {
	rest := *s
	rest.ID, rest.Schema, rest.Comment, rest.Defs, rest.Definitions = "", "", "", nil, nil
	rest.Title, rest.Description, rest.Default, rest.Examples = "", "", nil, nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly = false, false, false
	rest.Format, rest.Extra, rest.PropertyOrder = "", nil, nil
	rest.Type, rest.Types, rest.Minimum, rest.Maximum = "", nil, nil, nil
	rest.Properties, rest.Required, rest.AdditionalProperties, rest.Items = nil, nil, nil, nil
	return reflect.ValueOf(rest).IsZero()
}

// isFalse reports whether s is, as jsonschema-go judges it, the schema
// false, which it reads as {"not": {}}: whatever else s says, nothing
// conforms to it.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// accepts reports whether data, a structured result, is a JSON object
// that conforms to sh. False says that it does not, or that a shape
// cannot tell.
func (sh *shape) accepts(data []byte) bool {
	r := reader{data: data}
	r.space()
	if r.pos >= len(data) || data[r.pos] != '{' || !r.value(sh) {
		return false
	}
	r.space()
	return r.pos == len(data)
}

// A reader checks a JSON text against shapes as it reads it. Each of
// its methods reports false when the text is not JSON, or does not
// conform, or holds what the shapes leave to sdk.ValidateStructured.
type reader struct {
	data  []byte
	pos   int
	depth int
}

// space skips white space.
func (r *reader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// value reads one value, which must conform to sh.
func (r *reader) value(sh *shape) bool {
	if r.pos >= len(r.data) {
		return false
	}
	switch c := r.data[r.pos]; {
	case c == '{':
		return sh.allow&kindObject != 0 && r.object(sh)
	case c == '[':
		return sh.allow&kindArray != 0 && r.array(sh)
	case c == '"':
		_, _, ok := r.str()
		return ok && sh.allow&kindString != 0
	case c == 't':
		return sh.allow&kindBoolean != 0 && r.literal("true")
	case c == 'f':
		return sh.allow&kindBoolean != 0 && r.literal("false")
	case c == 'n':
		return sh.allow&kindNull != 0 && r.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return r.number(sh)
	}
	return false
}

// literal reads the literal word.
func (r *reader) literal(word string) bool {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return false
	}
	r.pos += len(word)
	return true
}

// open reads the opening bracket of an object or an array, and the
// closing one if it is empty, as it reports.
func (r *reader) open(closing byte) (empty, ok bool) {
	r.depth++
	r.pos++
	if r.depth > maxShapeDepth {
		return false, false
	}
	r.space()
	if r.pos < len(r.data) && r.data[r.pos] == closing {
		return true, r.close()
	}
	return false, true
}

// next reads what follows a member of an object or an item of an
// array: a comma, with more to come, or the closing bracket.
func (r *reader) next(closing byte) (more, ok bool) {
	r.space()
	switch {
	case r.pos >= len(r.data):
		return false, false
	case r.data[r.pos] == ',':
		r.pos++
		return true, true
	case r.data[r.pos] == closing:
		return false, r.close()
	}
	return false, false
}

// close reads a closing bracket.
func (r *reader) close() bool {
	r.depth--
	r.pos++
	return true
}

// object reads an object that conforms to sh.
func (r *reader) object(sh *shape) bool {
	empty, ok := r.open('}')
	var seen uint64
	for more := !empty; ok && more; more, ok = r.next('}') {
		r.space()
		if r.pos >= len(r.data) || r.data[r.pos] != '"' {
			return false
		}
		key, plain, read := r.str()
		// A key with escapes, or not UTF-8, is another name once decoded.
		if !read || !plain {
			return false
		}
		r.space()
		if r.pos >= len(r.data) || r.data[r.pos] != ':' {
			return false
		}
		r.pos++
		r.space()
		// A key given twice is checked each time: encoding/json keeps the
		// last value, which conforms if every one does.
		value := sh.extra
		if p := sh.lookup(key); p != nil {
			seen |= p.bit
			value = p.shape
		} else if sh.closed {
			return false
		}
		if !r.value(value) {
			return false
		}
	}
	return ok && seen&sh.required == sh.required
}

// lookup returns the named property called key, or nil.
func (sh *shape) lookup(key []byte) *prop {
	for i := range sh.props {
		if sh.props[i].name == string(key) {
			return &sh.props[i]
		}
	}
	return nil
}

// array reads an array whose items conform to sh.items.
func (r *reader) array(sh *shape) bool {
	empty, ok := r.open(']')
	for more := !empty; ok && more; more, ok = r.next(']') {
		r.space()
		if !r.value(sh.items) {
			return false
		}
	}
	return ok
}

// str reads a string and returns its text between the quotes; plain
// says that it is what the string decodes to: no escapes, valid UTF-8.
func (r *reader) str() (text []byte, plain, ok bool) {
	start := r.pos + 1
	plain, ascii := true, true
	for i := start; i < len(r.data); i++ {
		switch c := r.data[i]; {
		case c == '"':
			r.pos = i + 1
			text = r.data[start:i]
			return text, plain && (ascii || utf8.Valid(text)), true
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '\\':
			plain = false
			i++
			if i >= len(r.data) {
				return nil, false, false
			}
			switch r.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(r.data) {
					return nil, false, false
				}
				for _, h := range r.data[i+1 : i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				i += 4
			default:
				return nil, false, false
			}
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a number that conforms to sh.
func (r *reader) number(sh *shape) bool {
	start := r.pos
	i := r.pos
	if r.data[i] == '-' {
		i++
	}
	// An integer part: 0, or digits not led by 0.
	switch {
	case i < len(r.data) && r.data[i] == '0':
		i++
	case i < len(r.data) && '1' <= r.data[i] && r.data[i] <= '9':
		i = digits(r.data, i)
	default:
		return false
	}
	whole := true
	if i < len(r.data) && r.data[i] == '.' {
		whole = false
		if j := digits(r.data, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(r.data) && (r.data[i] == 'e' || r.data[i] == 'E') {
		whole = false
		i++
		if i < len(r.data) && (r.data[i] == '+' || r.data[i] == '-') {
			i++
		}
		if j := digits(r.data, i); j > i {
			i = j
		} else {
			return false
		}
	}
	r.pos = i
	token := r.data[start:i]
	// A whole number of up to 15 digits is exactly a float64, and an
	// integer; any other is read as encoding/json reads it, which fails
	// beyond float64's range.
	var f float64
	if whole && len(token) <= 15 {
		if sh.allow&kindInteger == 0 {
			return false
		}
		if sh.min == nil && sh.max == nil {
			return true
		}
		n, _ := strconv.ParseInt(string(token), 10, 64)
		f = float64(n)
	} else {
		var err error
		if f, err = strconv.ParseFloat(string(token), 64); err != nil {
			return false
		}
		kind := kindFraction
		if _, frac := math.Modf(f); frac == 0 {
			kind = kindInteger
		}
		if sh.allow&kind == 0 {
			return false
		}
	}
	return (sh.min == nil || f >= *sh.min) && (sh.max == nil || f <= *sh.max)
}

// digits returns the index past the digits at data[i:].
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}
