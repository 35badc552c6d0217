package sdk

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/internal/toolcall"
)

// State is the host's agent state, as it was at the moment it was asked
// for. Tools that need it (saving the session, for one) call [HostState]
// during their call; the host does not send it with every call.
type State struct {
	// SystemPrompt is the system prompt of the agent's conversation.
	SystemPrompt string
	// SessionContext is the agent's working notes of the session.
	SessionContext string
	// SessionContextFilePath is the file the session context is saved
	// to, or "" when the host has none.
	SessionContextFilePath string
}

// ErrNoHostState is returned by [HostState] when the call did not come
// from a host that offers its state.
var ErrNoHostState = errors.New("the host offers no agent state to this call")

// WithRoots returns a context in which [Roots] answers roots. Hosts call
// it; tool authors need it only to call a tool's Execute directly (sdktest
// gives the roots through the host).
func WithRoots(ctx context.Context, roots []string) context.Context {
	return context.WithValue(ctx, toolcall.RootsKey{}, roots)
}

// Roots returns the host's workspace roots for this call: absolute paths
// of the directories that a tool touching files must stay inside (the
// host's --root; by default the directory it runs in). The first is where
// relative paths resolve. It is empty when the host sets none.
// [OpenWorkspace] opens them and keeps a path the model gives inside
// them.
func Roots(ctx context.Context) []string {
	roots, _ := ctx.Value(toolcall.RootsKey{}).([]string)
	return roots
}

// StateFunc returns the host's state as it is now.
type StateFunc func(ctx context.Context) (State, error)

// WithStateFunc returns a context in which [HostState] answers from f.
// Hosts call it; tool authors need it only to call a tool's Execute
// directly (sdktest gives the state through the host).
func WithStateFunc(ctx context.Context, f StateFunc) context.Context {
	return context.WithValue(ctx, toolcall.StateKey{}, f)
}

// HostState asks the host for its live state, as it is at the moment of
// asking: the state the host's agent has (host.ToolContext). Inside a
// plugin this is a call back to the host over the plugin's connection,
// under ctx's deadline; in-process it reads the host directly. It returns
// ErrNoHostState when there is no host to ask, or the host runs no agent
// (agenthost call, agenthost mcp): a tool returns that error, or goes on
// without the state.
func HostState(ctx context.Context) (State, error) {
	f, _ := ctx.Value(toolcall.StateKey{}).(StateFunc)
	if f == nil {
		return State{}, ErrNoHostState
	}
	return f(ctx)
}
