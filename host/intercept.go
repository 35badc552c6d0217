package host

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// Call is a tool call on its way through the registry's interceptors
// (Options.Interceptors): the tool, where it comes from, its arguments as
// checked against the tool's schema, and whom it is for.
type Call struct {
	// Tool is the tool's registered name.
	Tool string
	// Source is where the tool comes from, as ToolInfo.Plugin says: the
	// plugin binary's base name, "mcp:NAME" for an MCP server's tool, ""
	// for a tool registered in-process.
	Source string
	// Args are the call's arguments, a JSON object. They have been
	// checked against the tool's schema; an interceptor must not change
	// them (the tool runs with the arguments that were checked).
	Args json.RawMessage
	// Annotations are the tool's hints (read-only, destructive...).
	Annotations Annotations
	// Builtin: the tool is the host's own, a built-in plugin's or one
	// registered in-process, so its annotations can be believed. Those
	// of a third-party plugin or an MCP server are its author's claim.
	Builtin bool
	// Roots are the workspace roots the call runs with, absolute: the
	// registry's, narrowed by the caller's (WithRoots).
	Roots []string
	// Caller says whom the call is for (WithCaller): a chat session, an
	// MCP client. "" when the caller did not say.
	Caller string
	// Decision is what decided that the call runs or does not, set by the
	// interceptor that decides (a policy) for the ones outside it (a
	// record) to read once next returns. Nil when nothing decided: the
	// call ran on no one's word but the caller's.
	Decision *Decision
}

// Decision is what an interceptor decided of a call.
type Decision struct {
	// Allowed: the call ran (or was let through to run).
	Allowed bool
	// By says what decided, for people and the audit record: `rule
	// "run_bash(git status*)"`, "mode auto", "the user", "the user (for
	// the session)".
	By string
	// Reason is the reason a person gave for a denial, or "".
	Reason string
}

// Handler runs a call and returns its result: the next interceptor, or
// the tool itself.
type Handler func(ctx context.Context, call *Call) Result

// Interceptor is a step on the registry's execution path: every call made
// through Execute or ExecuteResult, whoever makes it (an Agent, an MCP
// client, a program), passes through the registry's interceptors before
// its tool runs. An interceptor calls next to let the call go on, and may
// return a result of its own instead (a denial: a Result whose IsError is
// true and whose Text is "Error executing NAME: ..."). It may wait, for a
// person's answer say, for as long as ctx allows.
//
// A call reaches the interceptors once its tool is found and enabled and
// its arguments are checked; a call that fails those checks reaches none.
type Interceptor func(ctx context.Context, call *Call, next Handler) Result

// Denied is the result of a call an interceptor refuses: "Error executing
// NAME: " and why, as the model reads every failure.
func Denied(tool, why string) Result {
	return Result{Text: failure(tool, errorText(why)), IsError: true}
}

type errorText string

func (e errorText) Error() string { return string(e) }

// WithCaller returns a context whose calls say they are for caller (see
// Call.Caller).
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

type callerKey struct{}

// NotifyStart returns a context whose call, once made through a
// registry's Execute or ExecuteResult, closes the channel when its tool
// is about to run, or when the call ends without running (refused,
// denied, failed before the tool). An Agent uses it to let each call of a
// turn pass the interceptors (be asked about, say) in the model's order,
// one after the other, while the calls allowed run in parallel.
//
// A registry that is not a *ToolRegistry never closes the channel.
func NotifyStart(ctx context.Context) (context.Context, <-chan struct{}) {
	s := &startSignal{ch: make(chan struct{})}
	return context.WithValue(ctx, startKey{}, s), s.ch
}

type startKey struct{}

type startSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *startSignal) fire() { s.once.Do(func() { close(s.ch) }) }

// intercept runs call through the interceptors, then inner.
func (r *ToolRegistry) intercept(ctx context.Context, call *Call, inner Handler) Result {
	if len(r.interceptors) == 0 {
		return inner(ctx, call)
	}
	var next func(i int) Handler
	next = func(i int) Handler {
		if i == len(r.interceptors) {
			return inner
		}
		return func(ctx context.Context, call *Call) Result {
			return r.interceptors[i](ctx, call, next(i+1))
		}
	}
	return next(0)(ctx, call)
}

// newCall is the Call of a call of e's tool.
func (r *ToolRegistry) newCall(ctx context.Context, name string, e *entry, args json.RawMessage) *Call {
	c := &Call{Tool: name, Source: e.plugin, Args: args, Annotations: e.ann,
		Builtin: e.source == nil || e.source.kind == pluginKind{} && isBuiltin(e.plugin)}
	c.Roots = r.roots
	if asked, ok := ctx.Value(clientRootsKey{}).(*clientRoots); ok {
		c.Roots, _ = asked.narrowed(r).([]string)
	}
	c.Roots = slices.Clone(c.Roots)
	c.Caller, _ = ctx.Value(callerKey{}).(string)
	return c
}
