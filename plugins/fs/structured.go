package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

// checkedStructuredTool is a checkedTool of a structured tool: it checks
// the raw arguments the same way on the structured path too, and passes
// on the tool's output schema.
type checkedStructuredTool struct {
	checkedTool
}

var (
	_ sdk.StructuredTool = checkedStructuredTool{}
	_ sdk.Titler         = checkedStructuredTool{}
)

// checkedStructured wraps a structured tool of this plugin, one built
// with sdk.NewStructuredTool. It panics for any other tool: that is a
// programming error, found the first time the plugin starts.
func checkedStructured(t sdk.Tool) sdk.Tool {
	if _, ok := t.(sdk.StructuredTool); !ok {
		panic(fmt.Sprintf("checkedStructured(%q): the tool has no structured result", t.Name()))
	}
	return checkedStructuredTool{checkedTool{tool: t}}
}

func (c checkedStructuredTool) OutputSchema() json.RawMessage { return sdk.OutputSchemaOf(c.tool) }

func (c checkedStructuredTool) ExecuteStructured(ctx context.Context, args json.RawMessage) (string, json.RawMessage, error) {
	args = sdk.NormalizeArgs(args)
	if err := checkArgs(args); err != nil {
		return "", nil, err
	}
	return c.tool.(sdk.StructuredTool).ExecuteStructured(ctx, args)
}

// inWorkspaceStructured is inWorkspace for the handler of a structured
// tool, which returns its structured result besides its text.
func inWorkspaceStructured[In, Out any](h func(ctx context.Context, w *workspace.Workspace, in In) (string, Out, error)) func(context.Context, In) (string, Out, error) {
	return func(ctx context.Context, in In) (string, Out, error) {
		w, err := workspace.FromContext(ctx)
		if err != nil {
			var none Out
			return "", none, err
		}
		defer w.Close()
		return h(ctx, w, in)
	}
}
