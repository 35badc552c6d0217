// Package argcheck checks a tool call's JSON arguments against the tool's
// resolved parameters schema, and words what is wrong in the model's
// terms. The sdk checks the calls of its tools with it, and the host the
// calls of tools whose plugins do not.
package argcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/toolcall"
)

// The argument checks answer in the model's terms: which argument is
// wrong and what it must be. Nothing of Go's reflection or of the JSON
// decoder's internals ("Go struct field", "<invalid reflect.Value>",
// "300/1") reaches the model, and nothing the model sent is echoed back
// unbounded: a name or value is quoted up to toolcall.MaxQuoted bytes and
// a whole message up to MaxError.

// MaxError bounds the text of an argument-check error.
const MaxError = 1 << 10

// Errorf is the error of a failed argument check: "invalid arguments: "
// and the message, bounded.
func Errorf(format string, args ...any) error {
	return errors.New(toolcall.Bound("invalid arguments: "+fmt.Sprintf(format, args...), MaxError))
}

// syntaxError explains JSON that could not be decoded into a generic
// value: not JSON at all, or a number out of float64's range.
func syntaxError(args json.RawMessage, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
		var fields map[string]json.RawMessage
		if json.Unmarshal(args, &fields) == nil {
			for name, raw := range fields {
				var v any
				if json.Unmarshal(raw, &v) != nil {
					return Errorf("%s: the number %s is out of range", argName(name), boundedValue(string(raw)))
				}
			}
		}
		return Errorf("a number is out of range: %s", boundedValue(strings.TrimPrefix(te.Value, "number ")))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Errorf("not valid JSON: %s", se.Error())
	}
	return Errorf("not valid JSON: %v", err)
}

// DecodeError explains why validated arguments did not decode into a
// typed tool's input: a number out of the Go field's range, say.
func DecodeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return Errorf("%v", err)
	}
	field := "an argument"
	if te.Field != "" {
		field = argName(te.Field)
	}
	got := te.Value
	if n, ok := strings.CutPrefix(got, "number "); ok {
		got = boundedValue(n)
	} else {
		got = withArticle(got)
	}
	return Errorf("%s: must be %s, not %s", field, goKind(te.Type), got)
}

// goKind says in JSON's terms what a Go type accepts.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32:
		return fmt.Sprintf("a number from %g to %g", -math.MaxFloat32, math.MaxFloat32)
	case reflect.Float64:
		return "a number within float64's range"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

func withArticle(kind string) string {
	switch kind {
	case "":
		return "this value"
	case "array", "object":
		return "an " + kind
	case "null":
		return kind
	}
	return "a " + kind
}

// argName is how an error names an argument: as is when it is short and
// printable, else quoted and bounded.
func argName(name string) string {
	if len(name) <= toolcall.MaxQuoted && plainName().MatchString(name) {
		return name
	}
	return toolcall.Quote(name)
}

var plainName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]+$`) })

// boundedValue is a value's text, cut to toolcall.MaxQuoted bytes.
func boundedValue(s string) string {
	if len(s) <= toolcall.MaxQuoted {
		return s
	}
	return toolcall.Quote(s)
}

// TidyValidationError turns a JSON Schema validation error into the
// argument check's words. The schema walk becomes the argument's name
// ("validating root: validating /properties/path: type: ..." becomes
// "path: type: ..."; a nested one "n.a", an item "l[]"), and what
// the validator prints from Go's side is said as JSON says it.
func TidyValidationError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	var path []string
	for {
		rest, ok := strings.CutPrefix(msg, "validating /")
		if !ok {
			break
		}
		ptr, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		path = schemaPath(ptr)
		msg = tail
	}
	msg = tidyDetail(msg)
	if len(path) > 0 {
		msg = argName(strings.Join(path, "")) + ": " + msg
	}
	return msg
}

// schemaPath turns a schema location ("properties/n/properties/a",
// "properties/l/items") into the parts of an argument's name ("n", ".a";
// "l", "[]").
func schemaPath(ptr string) []string {
	var parts []string
	segs := strings.Split(ptr, "/")
	for i := 0; i < len(segs); i++ {
		seg := strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i])
		switch {
		case seg == "properties" && i+1 < len(segs):
			name := strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i+1])
			if len(parts) > 0 {
				name = "." + name
			}
			parts = append(parts, name)
			i++
		case seg == "items" || seg == "prefixItems" || seg == "additionalItems":
			parts = append(parts, "[]")
		case seg == "additionalProperties":
			parts = append(parts, ".*")
		}
	}
	return parts
}

// The patterns of the validator's messages are compiled on the first
// message to tidy, not at every start of every plugin and host.
var detailPatterns = sync.OnceValue(func() (p struct{ typeError, ratNumber, fixedNumber, quotedList *regexp.Regexp }) {
	// typeError is the validator's "type: VALUE has type "GOT", want ...".
	p.typeError = regexp.MustCompile(`(?s)^type: (.*) has type "([a-z]+)", (want .*)$`)
	// A number as the validator prints it: a big.Rat ("300/1") or %f
	// ("127.000000").
	p.ratNumber = regexp.MustCompile(`(^|[ :])(-?[0-9]+)/([0-9]+)\b`)
	p.fixedNumber = regexp.MustCompile(`\b([0-9]+)\.([0-9]*?)0+\b`)
	// A list of names the validator quotes with %q: ["a" "b"].
	p.quotedList = regexp.MustCompile(`^(unexpected additional properties|required: missing properties:?) (\[.*\])$`)
	return p
})

// tidyDetail rewrites what the validator says of one value.
func tidyDetail(msg string) string {
	p := detailPatterns()
	typeError, ratNumber, fixedNumber, quotedList := p.typeError, p.ratNumber, p.fixedNumber, p.quotedList
	if m := typeError.FindStringSubmatch(msg); m != nil {
		value, got := m[1], m[2]
		switch got {
		case "null":
			value = "null"
		case "object":
			value = "{…}"
		case "array":
			value = "[…]"
		default:
			value = boundedValue(value)
		}
		return "type: " + value + ` has type "` + got + `", ` + boundedValue(m[3])
	}
	if m := quotedList.FindStringSubmatch(msg); m != nil {
		return m[1] + " " + requote(m[2])
	}
	if strings.HasPrefix(msg, "minimum: ") || strings.HasPrefix(msg, "maximum: ") ||
		strings.HasPrefix(msg, "exclusiveMinimum: ") || strings.HasPrefix(msg, "exclusiveMaximum: ") ||
		strings.HasPrefix(msg, "multipleOf: ") {
		msg = ratNumber.ReplaceAllStringFunc(msg, func(s string) string {
			m := ratNumber.FindStringSubmatch(s)
			r, ok := new(big.Rat).SetString(m[2] + "/" + m[3])
			if !ok {
				return s
			}
			if r.IsInt() {
				return m[1] + r.Num().String()
			}
			f, _ := r.Float64()
			return m[1] + strconv.FormatFloat(f, 'g', -1, 64)
		})
		msg = fixedNumber.ReplaceAllStringFunc(msg, func(s string) string {
			return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
		})
	}
	return msg
}

// requote re-renders a %q list of names, each name bounded.
func requote(list string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(list, "["), "]")
	var names []string
	for inner != "" {
		q, err := strconv.QuotedPrefix(inner)
		if err != nil {
			return boundedValue(list)
		}
		name, err := strconv.Unquote(q)
		if err != nil {
			return boundedValue(list)
		}
		names = append(names, toolcall.Quote(name))
		inner = strings.TrimPrefix(inner[len(q):], " ")
		if len(names) == 20 && inner != "" {
			names = append(names, "…")
			break
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}

// Check checks JSON arguments against a resolved schema, exactly as the
// schema says: unlike a tool of sdk.NewTool, it does not take a null
// optional property for an absent one. Its error starts with "invalid
// arguments: ".
func Check(schema *jsonschema.Resolved, args json.RawMessage) error {
	if err := toolcall.CheckUnicode(args); err != nil {
		return err
	}
	_, err := Validate(schema, args)
	return err
}

// Validate is Check on arguments of valid Unicode, returning the decoded
// arguments.
func Validate(schema *jsonschema.Resolved, args json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, syntaxError(args, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, Errorf("expected a JSON object, got %s", JSONKind(v))
	}
	if err := schema.Validate(v); err != nil {
		return nil, Errorf("%s", TidyValidationError(err))
	}
	return v, nil
}

// JSONKind names the kind of a decoded JSON value: "an array", "null"...
func JSONKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
