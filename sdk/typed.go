package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/argcheck"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// Info is what a tool says about itself.
type Info struct {
	// Name is the tool's name; it must match ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Title is a short title for people, such as "Read file": MCP's
	// tool title, which clients show in place of the name. Empty means
	// none.
	Title string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Annotations describe the tool's behaviour.
	Annotations Annotations
}

// NewTool returns a Tool that runs handler with its arguments decoded into
// an In, which must be a struct.
//
// The tool's parameter schema is inferred from In: each exported field is a
// property named by its json tag, described by its jsonschema tag, and
// required unless its json tag says omitempty or omitzero. Properties that
// In does not have are refused. Every property has a single type, never
// a type array: a slice is an array, a map an object, a pointer its
// element's type, none of them nullable. An optional property is one
// left out of "required"; an explicit null for it counts as leaving it
// out, while a required property must have a value. Arguments are
// validated against the schema before handler runs, so handler sees only
// well-formed input; a validation failure is the call's error, which the
// model reads as "Error executing NAME: invalid arguments: ..." naming the
// argument. The tool checks its arguments itself, wherever it runs, and
// its plugin tells the host so: the host does not check them again.
//
// What handler returns is what the model reads: its result, or its error
// as "Error executing NAME: MESSAGE". A panic in handler is the error
// "panic: VALUE". ctx carries the call's deadline and cancellation, the
// workspace roots ([Roots], [OpenWorkspace]), the agent's state
// ([HostState]) and the call's [Logger].
//
// NewTool panics if info.Name is invalid or In has no JSON Schema: both are
// programming errors, found the first time the plugin starts.
func NewTool[In any](info Info, handler func(ctx context.Context, in In) (string, error)) Tool {
	if !toolcall.ValidName(info.Name) {
		panic(fmt.Sprintf("sdk.NewTool: invalid tool name %q: it must match %s", info.Name, toolcall.NamePattern))
	}
	schema, err := inferSchema[In]()
	if err != nil {
		panic(fmt.Sprintf("sdk.NewTool(%q): inferring the input schema: %v", info.Name, err))
	}
	if t := reflect.TypeFor[In](); t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk.NewTool(%q): the input type must be a struct, not %s", info.Name, t))
	}
	params, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("sdk.NewTool(%q): encoding the input schema: %v", info.Name, err))
	}
	// Resolving the schema for validation waits for the first call: a
	// plugin builds every tool of its binary in its package
	// initialization, but one started for a call whose host has its
	// description cached runs one of them. The schema was inferred from
	// a Go type, so resolving it cannot fail short of a programming
	// error, which panics as NewTool would have.
	resolve := sync.OnceValue(func() *jsonschema.Resolved {
		resolved, err := schema.Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("sdk.NewTool(%q): resolving the input schema: %v", info.Name, err))
		}
		return resolved
	})
	run := func(ctx context.Context, in In) (string, json.RawMessage, error) {
		text, err := handler(ctx, in)
		return text, nil, err
	}
	return &typedTool[In]{info: info, params: params, schema: resolve, optional: hasOptional(schema), run: run}
}

type typedTool[In any] struct {
	info   Info
	params json.RawMessage
	// schema returns the input schema resolved for validation, resolving
	// it on the first call.
	schema func() *jsonschema.Resolved
	// optional: the schema has optional properties, whose nulls decode
	// drops.
	optional bool
	// run runs the handler: its text, its structured result (nil for a
	// tool without one) and its error.
	run func(context.Context, In) (string, json.RawMessage, error)
}

var (
	_ Tool              = (*typedTool[struct{}])(nil)
	_ Annotator         = (*typedTool[struct{}])(nil)
	_ Titler            = (*typedTool[struct{}])(nil)
	_ toolcall.Preparer = (*typedTool[struct{}])(nil)
)

func (t *typedTool[In]) Name() string { return t.info.Name }

func (t *typedTool[In]) Schema() ChatTool {
	return NewChatTool(t.info.Name, t.info.Description, t.params)
}

func (t *typedTool[In]) Annotations() Annotations { return t.info.Annotations }

func (t *typedTool[In]) Title() string { return t.info.Title }

func (t *typedTool[In]) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	in, err := t.decode(NormalizeArgs(args))
	if err != nil {
		return "", err
	}
	text, _, err := t.run(ctx, in)
	return text, err
}

// PrepareCall checks and decodes the arguments, so that a host that has
// them checked once (the registry) runs only the handler afterwards.
func (t *typedTool[In]) PrepareCall(args json.RawMessage) (toolcall.Func, error) {
	in, err := t.decode(args)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (string, json.RawMessage, error) { return t.run(ctx, in) }, nil
}

// decode validates args against the tool's schema and decodes them,
// once the optional arguments that are null are dropped.
func (t *typedTool[In]) decode(args json.RawMessage) (In, error) {
	var in In
	if err := toolcall.CheckUnicode(args); err != nil {
		return in, err
	}
	schema := t.schema()
	if t.optional {
		args = dropNulls(schema.Schema(), args)
	}
	v, err := argcheck.Validate(schema, args)
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(args, &in); err != nil {
		// JSON Schema counts 2.0 as an integer, encoding/json does not:
		// decode the validated value, whose numbers re-encode as 2.
		normalized, merr := json.Marshal(v)
		var zero In
		in = zero
		if merr != nil {
			return in, argcheck.DecodeError(err)
		}
		if err := json.Unmarshal(normalized, &in); err != nil {
			return in, argcheck.DecodeError(err)
		}
	}
	return in, nil
}

// NormalizeArgs returns args with absent arguments ("", whitespace, null)
// as the empty object.
func NormalizeArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}
