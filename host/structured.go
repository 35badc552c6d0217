package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/structcheck"
)

// MaxTitleSize bounds a tool's title, in bytes.
const MaxTitleSize = 256

// Result is a call's answer: its text, as Execute returns it, and its
// structured result.
type Result struct {
	// Text is what the model reads: the tool's result, or one of
	// Execute's failure texts.
	Text string
	// Structured is the call's structured result (MCP's
	// structuredContent): a JSON object that conforms to the tool's
	// output schema. It is nil for a tool without an output schema, and
	// for a failed call.
	Structured json.RawMessage
	// IsError: the call failed, and Text is one of Execute's failure
	// texts.
	IsError bool
	// Content are the parts of the result as its source gave them
	// (images, audio, resource links, embedded resources, texts; see
	// Content), for those who take more than text; Text stands for them
	// all. Nil when Text says all of it: the result of a plugin's or an
	// in-process tool, of an MCP server's tool that answered one plain
	// text, a failed call, or a result whose parts were over
	// MaxContentSize.
	Content []Content
}

// ExecuteResult runs a tool as Execute does, and returns its structured
// result with its text.
//
// A tool with an output schema (sdk.StructuredTool: one built with
// sdk.NewStructuredTool, a plugin's tool that declares one, an MCP
// server's tool that has one) must return, with every successful call, a
// structured result that is a JSON object and conforms to the schema.
// One that returns none, or one that does not conform, fails the call:
// its text is "Error executing NAME: " and what is wrong ("the
// structured result does not conform to the output schema: total: ..."),
// and the host's log says so. Clients that read the output schema
// (MCP's do) would refuse the result anyway, or act on data that is not
// what the tool promised: a tool that breaks its own schema is broken,
// and the call says so rather than pass on its text without the
// structure.
//
// The schema is resolved on the first structured result of each tool;
// a schema that does not resolve fails the call in the same way.
func (r *ToolRegistry) ExecuteResult(ctx context.Context, name string, args json.RawMessage) Result {
	return r.execute(ctx, name, args, true)
}

// ExecuteContent runs a tool as Execute does, and returns its content
// parts (Result.Content) with its text, but no structured result: what a
// model that reads images takes.
func (r *ToolRegistry) ExecuteContent(ctx context.Context, name string, args json.RawMessage) Result {
	return r.execute(ctx, name, args, false)
}

// checkStructured checks a structured result of e's tool against its
// output schema.
func (e *entry) checkStructured(structured json.RawMessage) error {
	if structured == nil {
		return errors.New("the tool returned no structured result, though it declares an output schema")
	}
	validator, err := e.outputSchema()
	if err != nil {
		return fmt.Errorf("the tool's output schema is malformed: %v", err)
	}
	return validator.Validate(structured)
}

// outputResolver returns the function that resolves raw, an output
// schema, and compiles its validator on its first call, and answers the
// same from then on; nil for a tool without one.
func outputResolver(raw json.RawMessage) func() (*structcheck.Validator, error) {
	if raw == nil {
		return nil
	}
	return sync.OnceValues(func() (*structcheck.Validator, error) {
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		resolved, err := s.Resolve(nil)
		if err != nil {
			return nil, err
		}
		return structcheck.New(resolved), nil
	})
}

// checkTyped checks what a plugin or an MCP server declares of a tool's
// title and output schema: a title of at most MaxTitleSize bytes, an
// output schema of at most MaxSchemaSize bytes that is a JSON object
// whose type is "object", as MCP wants. That is all registration checks:
// the schema is resolved on the tool's first structured result.
func checkTyped(spec toolSpec) error {
	if n := len(spec.Title); n > MaxTitleSize {
		return fmt.Errorf("its title is %d bytes, more than the %d allowed", n, MaxTitleSize)
	}
	if raw := spec.Output; len(raw) > 0 {
		return checkOutputSchema(raw)
	}
	return nil
}

// checkOutputSchema checks that raw, an output schema, is at most
// MaxSchemaSize bytes and a JSON object whose type is "object".
func checkOutputSchema(raw json.RawMessage) error {
	if n := len(raw); n > MaxSchemaSize {
		return fmt.Errorf("its output schema is %d bytes, more than the %d allowed", n, MaxSchemaSize)
	}
	var s struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("its output schema is not a JSON object: %v", err)
	}
	if s.Type != "object" {
		return fmt.Errorf("its output schema has type %v, not \"object\"", s.Type)
	}
	return nil
}
