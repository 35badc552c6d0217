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
	SystemPrompt           string
	SessionContext         string
	SessionContextFilePath string
}

// ErrNoHostState is returned by [HostState] when the call did not come
// from a host that offers its state.
var ErrNoHostState = errors.New("the host offers no agent state to this call")

// WithRoots returns a context in which [Roots] answers roots. Hosts call
// it; tool authors need it only to test a tool in-process.
func WithRoots(ctx context.Context, roots []string) context.Context {
	return context.WithValue(ctx, toolcall.RootsKey{}, roots)
}

// Roots returns the host's workspace roots for this call: absolute paths
// of the directories that a tool touching files must stay inside. The
// first is where relative paths resolve. It is empty when the host sets
// none.
func Roots(ctx context.Context) []string {
	roots, _ := ctx.Value(toolcall.RootsKey{}).([]string)
	return roots
}

// StateFunc returns the host's state as it is now.
type StateFunc func(ctx context.Context) (State, error)

// WithStateFunc returns a context in which [HostState] answers from f.
// Hosts call it; tool authors need it only to test a tool in-process.
func WithStateFunc(ctx context.Context, f StateFunc) context.Context {
	return context.WithValue(ctx, toolcall.StateKey{}, f)
}

// HostState asks the host for its live state. Inside a plugin this is a
// call back to the host over the plugin connection; in-process it reads
// the host directly. It returns ErrNoHostState when there is no host to
// ask.
func HostState(ctx context.Context) (State, error) {
	f, _ := ctx.Value(toolcall.StateKey{}).(StateFunc)
	if f == nil {
		return State{}, ErrNoHostState
	}
	return f(ctx)
}
