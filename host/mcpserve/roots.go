package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// rootsListTimeout bounds a roots/list request to a client.
const rootsListTimeout = 5 * time.Second

// maxClientRoots bounds the roots of a client's answer that are looked
// at (each is resolved on the file system, and a refusal logged); those
// past it are refused.
const maxClientRoots = 64

// clientRoots asks the clients of an MCP server for their roots, and
// narrows the workspace roots of each session's tool calls to them
// (host.WithRoots). Each session keeps its clients' answer until the
// client says its roots changed.
type clientRoots struct {
	reg *host.ToolRegistry

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*sessionRoots
}

// sessionRoots are the roots of one session's client.
type sessionRoots struct {
	// stale: the client said its roots changed since they were asked for.
	stale atomic.Bool

	mu     sync.Mutex // held while the client is asked
	asked  bool
	narrow bool     // the client's answer narrows the roots
	roots  []string // the paths of its file:// roots
}

func newClientRoots(reg *host.ToolRegistry) *clientRoots {
	return &clientRoots{reg: reg, sessions: map[*mcp.ServerSession]*sessionRoots{}}
}

// changed is the server's RootsListChangedHandler: the session's next
// call asks its client again.
func (c *clientRoots) changed(_ context.Context, req *mcp.RootsListChangedRequest) {
	c.mu.Lock()
	s := c.sessions[req.Session]
	c.mu.Unlock()
	if s != nil {
		s.stale.Store(true)
	}
}

// middleware narrows the roots of every tools/call of a tool that
// touches the workspace roots (host.ToolRegistry.TouchesRoots) to the
// client's. A client of protocol 2026-07-28 or later that offers roots
// is asked in the call's result (rootsInResult); an older one with
// roots/list, once per session.
func (c *clientRoots) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !ok || method != "tools/call" || ss == nil || call.Params == nil || !c.reg.TouchesRoots(call.Params.Name) {
			return next(ctx, method, req)
		}
		if rootsInResult(ss) {
			answer, ok := call.Params.InputResponses[rootsRequest].(*mcp.ListRootsResult)
			if !ok {
				return askRoots()
			}
			if paths, narrow := c.paths(answer); narrow {
				ctx = host.WithRoots(ctx, paths)
			}
			return next(ctx, method, req)
		}
		return next(c.narrow(ctx, ss), method, req)
	}
}

// rootsRequest is the key of the roots/list request that a result asks
// a client of 2026-07-28 or later to answer (SEP-2322), and of its answer
// in the call it sends again.
const rootsRequest = "roots"

// askRoots is the result that asks the client for its roots and to send
// the call again with them: "resultType": "input_required".
func askRoots() (*mcp.CallToolResult, error) {
	// The result's type has no setter: it is set as a result is read.
	data, err := json.Marshal(map[string]any{
		"resultType":    "input_required",
		"inputRequests": mcp.InputRequestMap{rootsRequest: &mcp.ListRootsParams{}},
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{}
	return res, json.Unmarshal(data, res)
}

// rootsInResult reports whether the session's client speaks protocol
// 2026-07-28 or later, to which a server sends no request but asks in a
// call's result, and offers roots (in the request's _meta).
func rootsInResult(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= firstSessionless && p.Capabilities != nil && p.Capabilities.RootsV2 != nil
}

// narrow returns ctx with the session's client roots, if its client
// offers roots and can be asked for them.
func (c *clientRoots) narrow(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if !offersRoots(ss) || ctx.Value(noServerRequests{}) != nil {
		return ctx
	}
	s := c.session(ss)
	s.mu.Lock()
	defer s.mu.Unlock()
	if stale := s.stale.Swap(false); !s.asked || stale {
		s.roots, s.narrow = c.ask(ctx, ss)
		s.asked = true
	}
	if !s.narrow {
		return ctx
	}
	return host.WithRoots(ctx, s.roots)
}

// session returns the roots of a session, kept until it ends.
func (c *clientRoots) session(ss *mcp.ServerSession) *sessionRoots {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[ss]
	if s == nil {
		s = &sessionRoots{}
		c.sessions[ss] = s
		go func() {
			ss.Wait()
			c.mu.Lock()
			delete(c.sessions, ss)
			c.mu.Unlock()
		}()
	}
	return s
}

// ask asks the client for its roots, and returns the paths of its file://
// roots, and whether they narrow the workspace roots: a client that
// fails to answer (an error, or no answer within rootsListTimeout) or
// lists no roots leaves them as they are. That is never wider than the
// workspace roots: the client can narrow them, not widen them. Its roots
// that are refused, and those that narrowing drops, are logged.
func (c *clientRoots) ask(ctx context.Context, ss *mcp.ServerSession) ([]string, bool) {
	logger := c.reg.Logger()
	// Not canceled with the call that asks: other calls wait for the
	// answer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rootsListTimeout)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", rootsListTimeout)
	}
	if err != nil {
		logger.Warn("the MCP client did not list its roots; its session keeps the workspace roots", "error", err)
		return nil, false
	}
	return c.paths(res)
}

// paths returns the paths of the file:// roots of a client's answer, and
// whether they narrow the workspace roots: an answer that lists no roots
// leaves them as they are. Its roots that are refused (past the first
// maxClientRoots too), and those that narrowing drops, are logged.
func (c *clientRoots) paths(res *mcp.ListRootsResult) ([]string, bool) {
	if res == nil || len(res.Roots) == 0 {
		return nil, false
	}
	logger := c.reg.Logger()
	roots := res.Roots
	if len(roots) > maxClientRoots {
		logger.Warn("refusing the MCP client's roots past the first "+strconv.Itoa(maxClientRoots), "roots", len(roots))
		roots = roots[:maxClientRoots]
	}
	paths := []string{}
	for _, root := range roots {
		if root == nil {
			continue
		}
		p, err := rootPath(root.URI)
		if err != nil {
			logger.Warn("refusing a root of the MCP client", "uri", root.URI, "reason", err)
			continue
		}
		paths = append(paths, p)
	}
	kept, dropped := c.reg.NarrowRoots(paths)
	for _, err := range dropped {
		logger.Warn("refusing a root of the MCP client", "reason", err)
	}
	logger.Debug("the MCP client's roots", "roots", paths, "workspace", kept)
	return paths, true
}

// rootPath is the path of a root's URI, which must be a file:// URI of a
// local absolute path; percent-escapes are decoded.
func rootPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return "", errors.New("not a URI")
	case !strings.EqualFold(u.Scheme, "file"):
		return "", errors.New("not a file:// URI (roots must be local directories)")
	case u.Host != "" && !strings.EqualFold(u.Host, "localhost"):
		return "", fmt.Errorf("names the host %q: roots must be local directories", u.Host)
	case u.Opaque != "" || !strings.HasPrefix(u.Path, "/"):
		return "", errors.New("not an absolute path")
	case u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("has a query or a fragment")
	case strings.ContainsRune(u.Path, 0):
		return "", errors.New("contains a NUL byte")
	}
	return u.Path, nil
}

// offersRoots reports whether the session's client declared the roots
// capability and may be sent roots/list: its protocol version is before
// 2026-07-28, which has the server ask through the call's result instead.
func offersRoots(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion < firstSessionless && p.Capabilities != nil && p.Capabilities.RootsV2 != nil
}

// noServerRequests is the context key that marks a request whose session
// cannot answer a request of the server's.
type noServerRequests struct{}

// markStateless is the middleware that marks the requests of the HTTP
// transport's sessions that cannot answer the server's requests: each
// request of a stateless session (every one with Options.Stateless, and
// those without a session ID) is a session of its own, over when the
// request is, so the client's answer would reach no one. A request of
// the HTTP transport is one that carries its HTTP header; those of other
// transports (stdio, in memory), whose sessions have no ID either, are
// left alone.
func markStateless(stateless bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && overHTTP(req) && (stateless || ss.ID() == "") {
				ctx = context.WithValue(ctx, noServerRequests{}, true)
			}
			return next(ctx, method, req)
		}
	}
}

// overHTTP reports whether req came over the streamable HTTP transport,
// which hands every request its HTTP header.
func overHTTP(req mcp.Request) bool {
	extra := req.GetExtra()
	return extra != nil && extra.Header != nil
}
