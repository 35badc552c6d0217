// Package toolcall holds an optional capability shared by the sdk's typed
// tools and the host's registry: checking a call's arguments apart from
// running it.
//
// The registry checks every call's arguments before the tool runs. A tool
// built with sdk.NewTool checks them too, against the same schema, so that
// it is safe on its own (in a plugin, or called directly). Through
// [Preparer] the registry lets such a tool do that work once, on the
// caller's goroutine, and then runs what it returns under the call's
// deadline.
//
// The package is internal so that only this module's tools can claim the
// capability: a third-party tool cannot name [Func], so the registry never
// trusts an outside tool to have checked its own arguments.
package toolcall

import (
	"context"
	"encoding/json"
)

// Func runs a call whose arguments have been checked. It returns the
// text the model reads, the call's structured result (a JSON object; nil
// for a tool that has none) and the call's failure.
type Func func(ctx context.Context) (text string, structured json.RawMessage, err error)

// Preparer is implemented by tools that check their arguments against the
// schema they advertise and decode them. PrepareCall does both and returns
// the call to run; its error is the call's failure, and then nothing runs.
// args are never empty: absent arguments arrive as {}.
type Preparer interface {
	PrepareCall(args json.RawMessage) (Func, error)
}

// RootsKey is the context key of a call's workspace roots, a []string
// (sdk.Roots).
type RootsKey struct{}

// StateKey is the context key of the function that answers sdk.HostState,
// an sdk.StateFunc.
type StateKey struct{}
