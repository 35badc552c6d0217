package host

import (
	"encoding/json"

	"github.com/agenthost/agenthost/sdk"
)

// ExecutableTool is a tool the registry can hold: a name, a schema for the
// model, and Execute. It is the sdk's Tool, so a tool written for a plugin
// binary can also be registered in-process, and a plugin-backed tool is an
// ExecutableTool like any other.
type ExecutableTool = sdk.Tool

// ChatTool is a tool definition in OpenAI's function-calling format.
type ChatTool = sdk.ChatTool

// Annotations describe a tool's behaviour; see [sdk.Annotations].
type Annotations = sdk.Annotations

// ToolContext is the agent state that tools may read: the system prompt,
// the session context, and the file the session context is saved to.
//
// The registry reads it at the moment a tool asks (see [sdk.HostState]),
// so an implementation returns current values, not a snapshot taken when
// it was made: after the agent's state changes, the next tool call sees
// the change. Implementations must be safe for concurrent use.
type ToolContext interface {
	SystemPrompt() string
	SessionContext() string
	SessionContextFilePath() string
}

// ToolInfo describes one registered tool.
type ToolInfo struct {
	Name string
	// Title is the tool's title for people (sdk.Info.Title, MCP's tool
	// title), or "".
	Title       string
	Description string
	// OutputSchema is the JSON Schema of the tool's structured results
	// (see ToolRegistry.ExecuteResult), or nil when it has none.
	OutputSchema json.RawMessage
	Enabled      bool
	// Deferred says the tool is enabled but not offered one by one: its
	// MCP server's tools are deferred, and find_tools has not loaded it
	// (see Options.DeferTokens).
	Deferred    bool
	Annotations Annotations
	// Plugin is the base name of the plugin binary that serves the tool,
	// or "" for a tool registered in-process.
	Plugin string
}
