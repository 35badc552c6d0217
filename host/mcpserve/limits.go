package mcpserve

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// The bounds of what one client may have agenthost mcp do at once. A
// JSON-RPC batch of 2,500 calls in one 306 KB request was answered with
// 662 MB; a session of a thousand calls in flight holds a thousand
// results.
const (
	// maxCallsPerSession bounds the tools/call requests in flight in one
	// session; one more is answered at once with an error saying so.
	maxCallsPerSession = 32
	// maxBatch bounds the messages of one JSON-RPC batch over HTTP.
	maxBatch = 32
	// drainTimeout is how long the calls in flight get to finish when the
	// server shuts down, before they are canceled: a write that finishes
	// in it is answered as it ended, not as canceled.
	drainTimeout = 8 * time.Second
)

// errShuttingDown answers a call that arrives while the server shuts
// down.
var errShuttingDown = &jsonrpc.Error{Code: codeSessionLimit, Message: "the server is shutting down; retry later"}

// callGate holds the requests of agenthost mcp: at most
// maxCallsPerSession tools/call in flight in a session, and none once the
// server drains. When it drains, a call that may change something (a
// tool not read-only) gets drainTimeout to finish and is answered as it
// ended; everything else (read-only calls, a subscriptions/listen stream)
// is canceled at once, which changes nothing.
type callGate struct {
	max      int
	readOnly func(tool string) bool

	mu       sync.Mutex
	inflight map[mcp.Session]int
	total    int // the calls that drain
	draining bool
	idle     chan struct{} // closed once draining with no call to wait for

	// begin ends, when draining begins, the context of what need not
	// drain; stop ends the rest's once draining is over. Their cause is
	// the server's shutdown.
	begin, stop             context.Context
	cancelBegin, cancelStop context.CancelCauseFunc
}

func newCallGate(max int, readOnly func(tool string) bool) *callGate {
	g := &callGate{max: max, readOnly: readOnly, inflight: map[mcp.Session]int{}, idle: make(chan struct{})}
	g.begin, g.cancelBegin = context.WithCancelCause(context.Background())
	g.stop, g.cancelStop = context.WithCancelCause(context.Background())
	return g
}

// readOnlyTool is a registry's answer to whether a tool is read-only.
func readOnlyTool(reg *host.ToolRegistry) func(string) bool {
	return func(name string) bool {
		t, ok := reg.Tool(name)
		if !ok {
			return true // it changes nothing: it is refused
		}
		a, ok := t.(sdk.Annotator)
		return ok && a.Annotations().ReadOnly
	}
}

// middleware admits a tools/call, or refuses it with an error the
// client reads, and runs every request under the gate.
func (g *callGate) middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			end := g.begin
			if method == "tools/call" {
				ss := req.GetSession()
				drains := true
				if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil && g.readOnly != nil {
					drains = !g.readOnly(call.Params.Name)
				}
				if err := g.enter(ss, drains); err != nil {
					return nil, err
				}
				defer g.leave(ss, drains)
				if drains {
					end = g.stop
				}
			}
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(end, func() { cancel(context.Cause(end)) })()
			return next(ctx, method, req)
		}
	}
}

func (g *callGate) enter(ss mcp.Session, drains bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.draining:
		return errShuttingDown
	case g.inflight[ss] >= g.max:
		return &jsonrpc.Error{Code: codeSessionLimit, Message: fmt.Sprintf("too many calls in flight in this session: at most %d; wait for one to answer", g.max)}
	}
	g.inflight[ss]++
	if drains {
		g.total++
	}
	return nil
}

func (g *callGate) leave(ss mcp.Session, drains bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight[ss]--; g.inflight[ss] == 0 {
		delete(g.inflight, ss)
	}
	if drains {
		g.finishedLocked()
	}
}

// hold counts a request being received (an HTTP POST) as one that
// drains: a call whose body is still arriving when the server begins to
// shut down is answered, as it ends or refused, before the sessions
// close. release undoes it.
func (g *callGate) hold() {
	g.mu.Lock()
	g.total++
	g.mu.Unlock()
}

func (g *callGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finishedLocked()
}

// finishedLocked counts one call (or request) to wait for done, and says
// so once none is left while draining.
func (g *callGate) finishedLocked() {
	g.total--
	g.idleLocked()
}

// idleLocked closes idle once draining with nothing left to wait for.
func (g *callGate) idleLocked() {
	if g.total != 0 || !g.draining {
		return
	}
	select {
	case <-g.idle:
	default:
		close(g.idle)
	}
}

// drain takes no call from now on, cancels what need not drain, waits
// for the calls that may change something to finish, for up to timeout
// or until ctx is done, and then cancels those left; cause is the
// cancellations' cause.
func (g *callGate) drain(ctx context.Context, timeout time.Duration, cause error) {
	g.mu.Lock()
	g.draining = true
	g.idleLocked()
	g.mu.Unlock()
	g.cancelBegin(cause)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-g.idle:
	case <-t.C:
	case <-ctx.Done():
	}
	g.cancelStop(cause)
}
