package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/argcheck"
)

// Titler is implemented by tools that have a title: a short name for
// people, such as "Read file", which MCP clients show in place of the
// tool's name. A tool built with [NewTool] or [NewStructuredTool] has
// its [Info.Title].
type Titler interface {
	Title() string
}

// TitleOf returns t's title, or "" when t does not implement [Titler].
func TitleOf(t Tool) string {
	if tt, ok := t.(Titler); ok {
		return tt.Title()
	}
	return ""
}

// StructuredTool is implemented by tools whose results have a structured
// form besides their text: a JSON object that conforms to the tool's
// output schema, which MCP clients receive as the result's
// structuredContent, beside the text as its content. A tool built with
// [NewStructuredTool] is one.
//
// The text stays what a model reads; the structured result is for
// programs, and for the clients that hand it to their model instead.
// The host checks every structured result against the output schema
// before it passes it on, and fails a call whose result does not
// conform.
type StructuredTool interface {
	Tool
	// OutputSchema returns the JSON Schema of the structured results,
	// an object schema ("type": "object"). A wrapper that forwards to a
	// tool without one returns nil: then the tool has none.
	OutputSchema() json.RawMessage
	// ExecuteStructured runs the tool as Execute does, and returns its
	// structured result with its text. On error both are ignored.
	ExecuteStructured(ctx context.Context, args json.RawMessage) (text string, structured json.RawMessage, err error)
}

// OutputSchemaOf returns t's output schema, or nil when t has none: it
// does not implement [StructuredTool], or says nil.
func OutputSchemaOf(t Tool) json.RawMessage {
	if st, ok := t.(StructuredTool); ok {
		return st.OutputSchema()
	}
	return nil
}

// NewStructuredTool returns a Tool like [NewTool], whose handler returns,
// besides the text the model reads, the same answer as an Out: the
// tool's structured result. The tool implements [StructuredTool].
//
// The output schema is inferred from Out as the parameter schema is from
// In, and Out must be a struct too: each exported field is a property
// named by its json tag, described by its jsonschema tag, and required
// unless its json tag says omitempty or omitzero. The structured result
// is Out encoded by encoding/json, but for a nil slice or map that the
// schema does not leave optional, which is encoded empty ([] or {})
// rather than as null, as the schema says. An Out that implements
// json.Marshaler is taken at its word instead: its MarshalJSON is the
// structured result, as it is, without encoding/json's second pass over
// it (which would validate and compact it) and without the empty slices
// and maps filled in. It should write compact JSON; the host checks the
// result against the output schema all the same.
//
// The text is what models that read text get, so it should say
// everything the structured result says. On error, the Out is ignored:
// a failed call has no structured result.
//
// NewStructuredTool panics if info.Name is invalid, or In or Out has no
// JSON Schema or is not a struct: all are programming errors, found the
// first time the plugin starts.
func NewStructuredTool[In, Out any](info Info, handler func(ctx context.Context, in In) (string, Out, error)) Tool {
	if t := reflect.TypeFor[Out](); t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk.NewStructuredTool(%q): the output type must be a struct, not %s", info.Name, t))
	}
	schema, err := inferSchema[Out]()
	if err != nil {
		panic(fmt.Sprintf("sdk.NewStructuredTool(%q): inferring the output schema: %v", info.Name, err))
	}
	output, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("sdk.NewStructuredTool(%q): encoding the output schema: %v", info.Name, err))
	}
	// The tool's input side is NewTool's; the handler it is given is
	// never called, as run replaces it.
	typed := NewTool(info, func(context.Context, In) (string, error) { return "", nil }).(*typedTool[In])
	typed.run = func(ctx context.Context, in In) (string, json.RawMessage, error) {
		text, out, err := handler(ctx, in)
		if err != nil {
			return text, nil, err
		}
		structured, err := encodeOutput(schema, out)
		if err != nil {
			return "", nil, fmt.Errorf("encoding the structured result: %w", err)
		}
		return text, structured, nil
	}
	textOnly := func(ctx context.Context, in In) (string, error) {
		text, _, err := handler(ctx, in)
		return text, err
	}
	return &structuredTool[In]{typedTool: typed, output: output, textOnly: textOnly}
}

// structuredTool is a typed tool with an output schema.
type structuredTool[In any] struct {
	*typedTool[In]
	output json.RawMessage
	// textOnly runs the handler for its text alone: Execute makes no
	// structured result that nobody reads.
	textOnly func(context.Context, In) (string, error)
}

var _ StructuredTool = (*structuredTool[struct{}])(nil)

func (t *structuredTool[In]) OutputSchema() json.RawMessage { return t.output }

func (t *structuredTool[In]) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := t.decode(NormalizeArgs(args))
	if err != nil {
		return "", err
	}
	return t.textOnly(ctx, in)
}

func (t *structuredTool[In]) ExecuteStructured(ctx context.Context, args json.RawMessage) (string, json.RawMessage, error) {
	in, err := t.decode(NormalizeArgs(args))
	if err != nil {
		return "", nil, err
	}
	return t.run(ctx, in)
}

// encodeOutput encodes out, a value of the type s was inferred from,
// with the nil slices and maps that s requires encoded empty. An out
// that implements json.Marshaler is its MarshalJSON's, as it is.
func encodeOutput(s *jsonschema.Schema, out any) (json.RawMessage, error) {
	if m, ok := out.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(data, []byte("null")) {
		return data, nil
	}
	filled, _ := fillNulls(s, data)
	return filled, nil
}

// emptyOf is the empty value of a schema's type, for the types
// encoding/json writes as null when nil.
var emptyOf = map[string]json.RawMessage{"array": json.RawMessage("[]"), "object": json.RawMessage("{}")}

// fillNulls returns raw with each null that s types as an array or an
// object replaced by the empty one, in raw and in the values within it
// that s describes (properties, items, additionalProperties); it reports
// whether it replaced any.
func fillNulls(s *jsonschema.Schema, raw json.RawMessage) (json.RawMessage, bool) {
	switch {
	case s == nil:
		return raw, false
	case isNull(raw):
		empty, ok := emptyOf[s.Type]
		if !ok {
			return raw, false
		}
		return empty, true
	case len(s.Properties) > 0 || s.AdditionalProperties != nil:
		return rewriteFields(raw, func(name string, value json.RawMessage) (json.RawMessage, bool) {
			p, ok := s.Properties[name]
			if !ok {
				p = s.AdditionalProperties
			}
			return fillNulls(p, value)
		})
	case s.Items != nil:
		return rewriteItems(raw, func(item json.RawMessage) (json.RawMessage, bool) { return fillNulls(s.Items, item) })
	}
	return raw, false
}

// ValidateStructured checks a structured result against a resolved
// output schema: it must be a JSON object that conforms. Its error says
// which, naming the property that does not conform.
func ValidateStructured(schema *jsonschema.Resolved, structured json.RawMessage) error {
	var v any
	if err := json.Unmarshal(structured, &v); err != nil {
		return fmt.Errorf("the structured result is not JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the structured result is %s, not a JSON object", argcheck.JSONKind(v))
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("the structured result does not conform to the output schema: %s", argcheck.TidyValidationError(err))
	}
	return nil
}
