package sdk

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is one tool a model can call: a name, a schema that tells the model
// how to call it, and the code that runs it. The host's ExecutableTool is
// this same interface, so a Tool served from a plugin binary and a Tool
// registered in-process are interchangeable.
//
// Execute receives the arguments as a JSON object and returns the text the
// model reads. The host has checked the arguments against the schema's
// parameters before Execute runs (absent ones arrive as {}), unless the
// tool is one built with [NewTool], which checks them itself. An error is
// a tool failure, which the host hands to the model as
// "Error executing NAME: MESSAGE"; it is not a protocol error, and a
// panic is one too ("panic: VALUE"). Execute must honour ctx: it carries
// the call's deadline and cancellation, across the process boundary when
// the tool runs in a plugin; once ctx ends, the model reads the timeout or
// the cancellation, whatever Execute returns.
//
// Most tools are built with [NewTool] rather than by implementing Tool.
type Tool interface {
	// Name returns the tool's name, which matches ^[a-zA-Z0-9_-]{1,64}$.
	Name() string
	// Schema returns the tool's definition for the model. Its function
	// name is the tool's name.
	Schema() ChatTool
	// Execute runs the tool.
	Execute(ctx context.Context, args json.RawMessage) (string, error)
}

// Annotator is implemented by tools that describe their behaviour. A tool
// that does not implement it has zero Annotations: not read-only, not
// destructive, not idempotent, closed-world, enabled on registration.
type Annotator interface {
	Annotations() Annotations
}

// Annotations describe a tool's behaviour to hosts and clients. The first
// four are MCP's tool annotation hints.
type Annotations struct {
	// ReadOnly: the tool does not change its environment.
	ReadOnly bool `json:"readOnly"`
	// Destructive: the tool may delete or overwrite data. Meaningful only
	// when ReadOnly is false.
	Destructive bool `json:"destructive"`
	// Idempotent: calling the tool again with the same arguments has no
	// further effect. Meaningful only when ReadOnly is false.
	Idempotent bool `json:"idempotent"`
	// OpenWorld: the tool reaches outside the host's workspace (the
	// network, other processes).
	OpenWorld bool `json:"openWorld"`
	// OptIn: the tool is registered disabled, and the user enables it
	// knowingly. Tools that can destroy data or run arbitrary commands are
	// opt-in.
	OptIn bool `json:"optIn"`
	// Timeout is the deadline the host gives each call of the tool, when
	// the tool needs another than the host's default: one that enforces
	// a timeout argument of its own declares its longest. Zero means the
	// host's default; the user's setting wins over both. The host caps
	// what a plugin declares at 11 minutes.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// AnnotationsOf returns t's annotations, or the zero Annotations when t
// does not implement [Annotator].
func AnnotationsOf(t Tool) Annotations {
	if a, ok := t.(Annotator); ok {
		return a.Annotations()
	}
	return Annotations{}
}

// ChatTool is a tool definition in OpenAI's function-calling format:
//
//	{"type":"function","function":{"name":...,"description":...,"parameters":{...}}}
type ChatTool struct {
	// Type is always "function".
	Type string `json:"type"`
	// Function describes the tool.
	Function Function `json:"function"`
}

// Function is the function part of a [ChatTool].
type Function struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments: an object schema.
	Parameters json.RawMessage `json:"parameters"`
}

// NewChatTool returns the ChatTool of a function.
func NewChatTool(name, description string, parameters json.RawMessage) ChatTool {
	return ChatTool{Type: "function", Function: Function{Name: name, Description: description, Parameters: parameters}}
}
