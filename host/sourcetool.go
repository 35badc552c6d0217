package host

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/sdk"
)

// sourceTool is a tool served by a plugin binary or an MCP server.
type sourceTool struct {
	proc *toolSource
	// remote is the tool's name at its source; the registry's name may
	// have a prefix.
	remote string

	schema ChatTool
	ann    Annotations
	// checksArgs: the plugin checks the arguments against the schema
	// itself (protocol 1.2 checks_arguments).
	checksArgs bool
	// resolved: the parameters schema is known to resolve as an object
	// schema (toolSource.resolved).
	resolved bool
	// title is the tool's title (protocol 1.4), output its output schema
	// (protocol 1.4; nil for none).
	title  string
	output json.RawMessage
}

var (
	_ ExecutableTool     = (*sourceTool)(nil)
	_ sdk.Annotator      = (*sourceTool)(nil)
	_ sdk.Titler         = (*sourceTool)(nil)
	_ sdk.StructuredTool = (*sourceTool)(nil)
)

func newSourceTool(proc *toolSource, name string, spec toolSpec) *sourceTool {
	return &sourceTool{
		proc:       proc,
		remote:     spec.Name,
		checksArgs: spec.ChecksArguments,
		title:      spec.Title,
		output:     spec.Output,
		schema:     sdk.NewChatTool(name, spec.Description, spec.Parameters),
		ann: Annotations{
			ReadOnly:    spec.ReadOnly,
			Destructive: spec.Destructive,
			Idempotent:  spec.Idempotent,
			OpenWorld:   spec.OpenWorld,
			OptIn:       spec.OptIn,
			Timeout:     spec.Timeout,
		},
	}
}

func (t *sourceTool) Name() string             { return t.schema.Function.Name }
func (t *sourceTool) Schema() ChatTool         { return t.schema }
func (t *sourceTool) Annotations() Annotations { return t.ann }

func (t *sourceTool) Title() string                 { return t.title }
func (t *sourceTool) OutputSchema() json.RawMessage { return t.output }

func (t *sourceTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	text, _, _, err := t.proc.call(ctx, t.remote, args, false)
	return text, err
}

func (t *sourceTool) ExecuteStructured(ctx context.Context, args json.RawMessage) (string, json.RawMessage, error) {
	text, structured, _, err := t.proc.call(ctx, t.remote, args, true)
	return text, structured, err
}

// executeContent runs the tool as ExecuteStructured does (its structured
// result only when wantStructured), and returns its content parts too.
func (t *sourceTool) executeContent(ctx context.Context, args json.RawMessage, wantStructured bool) outcome {
	text, structured, parts, err := t.proc.call(ctx, t.remote, args, wantStructured)
	if !wantStructured {
		structured = nil
	}
	return outcome{result: text, structured: structured, content: parts, err: err}
}

// nonEmpty is raw, or nil when it is empty.
func nonEmpty(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return raw
}
