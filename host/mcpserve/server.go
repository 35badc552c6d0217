package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/buildinfo"
	"github.com/agenthost/agenthost/internal/mcpstdio"
)

// The defaults of Options.MaxSessions and Options.SessionIdle.
const (
	DefaultMaxSessions = 1000
	DefaultSessionIdle = 10 * time.Minute
)

// ErrServerClosed is returned by a Server's Connect, Run and ServeStdio
// once the server has begun to shut down (Shutdown, or the end of the
// context of Run, ServeStdio or Serve). It is the cause of the
// cancellation of the calls that Shutdown cancels.
var ErrServerClosed = errors.New("mcpserve: server closed")

// Options configure a [Server]. The zero value, as a nil *Options,
// serves as agenthost mcp does over stdio; the fields about HTTP apply to
// [Server.Handler] and [Server.Serve] alone.
type Options struct {
	// Implementation is what the server says it is in its answer to
	// initialize. Nil means "agenthost" at the version of the running
	// program.
	Implementation *mcp.Implementation

	// Token, when set, is the bearer token every HTTP request must carry
	// ("Authorization: Bearer TOKEN"); a request without it is answered
	// 401.
	Token string

	// AllowOrigins are the origins (scheme://host[:port]) whose web pages
	// may make requests beside the server's own; "*" allows every origin,
	// which lets any web page the user visits call the tools. A request
	// whose Origin header is neither is answered 403; a request without
	// one does not come from a page, and passes. See [NormalOrigin].
	AllowOrigins []string

	// MaxSessions caps the sessions open plus the requests in flight
	// without one (protocol 2026-07-28 and later, every request when
	// Stateless); a request over it is answered 503. Zero or less means
	// DefaultMaxSessions.
	MaxSessions int

	// SessionIdle is how long a session may go without requests before
	// it is closed. Zero or less means DefaultSessionIdle.
	SessionIdle time.Duration

	// Stateless keeps no sessions over HTTP for any protocol version, so
	// that any replica behind a load balancer can answer any request.
	// Clients of versions before 2026-07-28 then lose server-to-client
	// notifications outside a request, server-to-client requests (their
	// roots are not asked for, nor their approval of a call), per-session
	// state and notifications/cancelled, which comes in a request of its
	// own that names no client: their call is canceled only when they
	// close the request it came in.
	Stateless bool

	// ApprovalTimeout bounds how long a call that the registry's
	// policy.Guard asks about waits for the client's answer to the
	// elicitation request that asks it; a call not answered in time is
	// denied. Zero or less means DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
}

// A Server serves the enabled tools of a [host.ToolRegistry] to MCP
// clients, over any transport of the MCP Go SDK ([Server.Connect],
// [Server.Run]), stdio ([Server.ServeStdio]) or the streamable HTTP
// transport ([Server.Handler], [Server.Serve]).
//
// The tools it offers follow the registry: a tool enabled, disabled,
// registered or gone changes the list, and the clients get
// notifications/tools/list_changed. Every tools/call runs through the
// registry: a tool that fails, is unknown or is disabled answers an
// error result, worded as the registry words it. A result of an MCP
// server's tool has its content as the server gave it (images, audio,
// resource links, embedded resources; see host.Result.Content).
//
// With MCP servers in the registry, the server also passes on their
// prompts, resources, resource templates and completions, what they say
// during a call (progress, log messages) and what they ask of the client
// in front (sampling, elicitation); see gateway. Without, it declares
// tools only: the methods of resources, prompts, logging and completion
// are not found.
//
// A client that declares the roots capability is asked for its roots
// before a tools/call of a tool that touches the workspace roots
// (host.ToolRegistry.TouchesRoots): with roots/list before its session's
// first such call, and again after each notifications/roots/list_changed;
// from protocol 2026-07-28 on, in the call's result (input_required),
// which the client answers by sending the call again with its roots. Its
// file:// roots narrow the registry's workspace roots for those calls,
// never widen them (see [host.WithRoots]). A client that lists no roots,
// or does not answer within 5 s, keeps the workspace roots, and so do
// sessions before 2026-07-28 that cannot answer the server's requests
// (Stateless). Roots refused are logged to the registry's logger.
//
// Every tools/call passes the registry's interceptors (see
// host.Interceptor) with a context that names its caller (host.WithCaller:
// the client's name and version, and the session's ID when it has one,
// `mcp client "claude-code" 2.1 (session ab12cd34…)`) and carries a
// policy.Session (policy.WithSession), which a policy.Guard among the
// interceptors asks about calls its rules or mode do not let run. A
// client that declared the elicitation capability is asked with an
// elicitation/create request, within Options.ApprovalTimeout; its answers
// "allow for this session" hold for its session alone. A client that did
// not, or one whose requests cannot be answered with a request of the
// server's (Stateless, protocol 2026-07-28 and later), cannot be asked:
// such a call is denied with a text that names the rule that would allow
// it. See approvals.
//
// A session has at most 32 tools/call requests in flight; one more is
// answered at once with an error saying so. When the server shuts down
// (see [Server.Shutdown]), it takes no new session or call; the calls in
// flight of tools that are not read-only get 8 s to finish and are
// answered as they ended; the rest are canceled at once.
//
// A Server that has shut down stays so: make a new one to serve again.
type Server struct {
	server *mcp.Server
	gate   *callGate
	rpc    *rpcHandler
	asks   *approvals
	opts   Options // with the defaults filled in and the origins normal

	// stopSync ends the offer's following of the registry.
	stopSync func()
	// handler is what Handler returns.
	handler http.Handler

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*owedTransport // those of Connect, until they end
	closing  bool                                  // the shutdown has begun
	closed   <-chan struct{}                       // closeSessions's, once called

	quit    chan struct{} // closed as the shutdown begins
	drained chan struct{} // closed once the calls in flight are done
}

// New returns a server of the registry's enabled tools. A nil opts is
// the zero Options.
func New(reg *host.ToolRegistry, opts *Options) *Server {
	s := &Server{sessions: map[*mcp.ServerSession]*owedTransport{}, quit: make(chan struct{}), drained: make(chan struct{})}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxSessions <= 0 {
		s.opts.MaxSessions = DefaultMaxSessions
	}
	if s.opts.SessionIdle <= 0 {
		s.opts.SessionIdle = DefaultSessionIdle
	}
	s.opts.AllowOrigins = slices.Clone(s.opts.AllowOrigins)
	for i, o := range s.opts.AllowOrigins {
		if n, ok := NormalOrigin(o); ok {
			s.opts.AllowOrigins[i] = n
		}
	}
	s.asks = newApprovals(s.opts.ApprovalTimeout)
	s.server, s.stopSync = newMCPServer(reg, s.opts.Implementation, s.asks)
	// The SDK runs a session's calls with contexts of their own, and
	// closes a session only once its calls have returned: the gate ends
	// them. A stateless session's client is never asked for its roots.
	s.gate = newCallGate(maxCallsPerSession, readOnlyTool(reg))
	s.server.AddReceivingMiddleware(s.gate.middleware(), markStateless(s.opts.Stateless))
	s.rpc = newRPCHandler(s.server, &s.opts)
	s.rpc.gate = s.gate
	s.server.AddReceivingMiddleware(s.rpc.cancelWithRequest)
	s.handler = checkLocalOrigin(s.opts.AllowOrigins, requireToken(s.opts.Token, s.rpc))
	return s
}

// Connect connects the server to a client over t, and returns the
// session, which goes on until the client ends it, it is closed or the
// server shuts down. opts are passed to the SDK's [mcp.Server.Connect].
// Once the server has begun to shut down, Connect returns
// ErrServerClosed.
func (s *Server) Connect(ctx context.Context, t mcp.Transport, opts *mcp.ServerSessionOptions) (*mcp.ServerSession, error) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return nil, ErrServerClosed
	}
	owed := newOwedTransport(t)
	ss, err := s.server.Connect(ctx, owed, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed != nil {
		// Shutdown closed the sessions while this one connected.
		s.mu.Unlock()
		ss.Close()
		return nil, ErrServerClosed
	}
	s.sessions[ss] = owed
	s.mu.Unlock()
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	return ss, nil
}

// Run serves one session over t until the client ends it, the server
// shuts down or ctx is canceled. It is meant for a server of that one
// session, as agenthost mcp over stdio: when ctx is canceled, the server
// shuts down (the calls in flight drain as [Server.Shutdown] has them),
// and then the session is closed. Run returns nil when the session ends
// so, and the session's error when it breaks.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	session, err := s.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- session.Wait() }()
	select {
	case <-ctx.Done():
		// The calls in flight finish, within drainTimeout, and are
		// answered as they ended.
		s.drain(context.Background(), context.Cause(ctx))
		session.Close()
		<-done
		return nil
	case err := <-done:
		s.mu.Lock()
		closing := s.closing
		s.mu.Unlock()
		if err != nil && !errors.Is(err, io.EOF) && !closing {
			return err
		}
		return nil
	}
}

// ServeStdio serves one session over stdin and stdout, MCP's stdio
// transport, as [Server.Run] does: until the client closes stdin, the
// server shuts down or ctx is canceled. A line that is not a JSON-RPC
// message is answered with a JSON-RPC error, and the session goes on.
// ServeStdio leaves stdin and stdout open.
func (s *Server) ServeStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	// The session closes R when it ends: stdin itself is left open, a
	// pipe opened anew is closed, which also ends a read under way.
	in := io.NopCloser(stdin)
	if f, ok := pollableStdin(stdin); ok {
		in = f
	}
	t := &mcpstdio.Transport{
		R:          in,
		W:          nopWriteCloser{stdout},
		Peer:       "the client",
		MaxMessage: mcp.DefaultMaxLineLength,
		Answer:     true,
	}
	err := s.Run(ctx, t)
	if errors.Is(err, ErrServerClosed) {
		in.Close() // no session took it
	}
	return err
}

// Shutdown shuts the server down, over every transport: it takes no new
// session, request without one or call from now on; the calls in flight
// of tools that may change something get 8 s to finish, or until ctx is
// done, and are answered as they ended (a write that lands is never
// answered "canceled"); those left, and every other request, are
// canceled (a subscriptions/listen stream ends with its result); then
// every session is closed, which ends its event streams and its
// goroutines. It returns once they are closed, or once ctx is done: then
// it returns ctx's error, as it does when ctx ended the wait for the
// calls.
//
// Shutdown does not close the listeners or connections of an
// [http.Server] that serves [Server.Handler]: shut that down after.
// [Server.Serve] shuts its own down.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drain(ctx, ErrServerClosed)
	select {
	case <-s.drained:
	default:
		// ctx is done, and the shutdown that another began goes on.
		return ctx.Err()
	}
	select {
	case <-s.closeSessions():
	case <-ctx.Done():
	}
	return ctx.Err()
}

// drain begins the server's shutdown, unless it has begun: no new
// session or request without one, and no call, is taken; the calls in
// flight finish, within drainTimeout or until ctx is done, and the rest
// is canceled, with cause. It returns once that is over, or once ctx is
// done when the shutdown had begun already.
func (s *Server) drain(ctx context.Context, cause error) {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if !first {
		select {
		case <-s.drained:
		case <-ctx.Done():
		}
		return
	}
	s.rpc.stopTaking()
	close(s.quit)
	s.gate.drain(ctx, drainTimeout, cause)
	close(s.drained)
}

// closeSessions closes every session, those of Connect and those of the
// HTTP transport, once: the channel is closed once they all are closed.
// The server stops following the registry.
func (s *Server) closeSessions() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return s.closed
	}
	open := maps.Clone(s.sessions)
	httpClosed := s.rpc.closeSessions()
	done := make(chan struct{})
	s.closed = done
	s.stopSync()
	go func() {
		var wg sync.WaitGroup
		for ss, owed := range open {
			wg.Go(func() {
				// The answers of the calls the drain let finish are
				// written before the session closes.
				owed.settle(answerWait)
				ss.Close()
			})
		}
		wg.Wait()
		<-httpClosed
		close(done)
	}()
	return done
}

// newMCPServer returns an MCP server that offers the registry's enabled
// tools and runs every tools/call through the registry. The list follows
// the registry, until stop is called: a tool enabled, disabled,
// registered or gone (an MCP server behind this one changed its tools)
// changes what the server offers, and its clients get
// notifications/tools/list_changed. A client that offers roots has its
// session's calls confined to them, within the registry's workspace
// roots (see clientRoots). Each call names its caller and carries its
// session's approvals (see approvals). A nil impl is agenthost's.
func newMCPServer(reg *host.ToolRegistry, impl *mcp.Implementation, asks *approvals) (server *mcp.Server, stop func()) {
	if impl == nil {
		impl = &mcp.Implementation{Name: "agenthost", Version: buildinfo.Version()}
	}
	roots := newClientRoots(reg)
	gw := &gateway{reg: reg, on: reg.HasMCPServers()}
	serverOpts := &mcp.ServerOptions{
		Capabilities:            gw.capabilities(),
		RootsListChangedHandler: roots.changed,
	}
	gw.options(serverOpts)
	server = mcp.NewServer(impl, serverOpts)
	gw.server = server
	server.AddSendingMiddleware(gw.sending)
	g := &offer{reg: reg, server: server}
	g.sync()
	stopTools, stopGateway := reg.OnChange(g.sync), gw.follow()
	stop = func() {
		stopTools()
		stopGateway()
	}
	server.AddReceivingMiddleware(roots.middleware, asks.middleware, gw.middleware, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if undeclared[method] && !gw.serves(method) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %s (agenthost serves tools only)", method)}
			}
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || method != "tools/call" {
				return next(ctx, method, req)
			}
			// An offered tool's call takes the SDK's path, which shapes
			// the result for the session's protocol version. The SDK
			// answers a call of a tool it does not list with a protocol
			// error; agenthost answers unknown and disabled tools with an
			// error result, as the registry words it.
			if call.Params != nil && g.offers(call.Params.Name) {
				res, err := next(ctx, method, req)
				if err == nil || g.offers(call.Params.Name) {
					return fastResult(res), err
				}
				// The tool was withdrawn between the look-up and the call.
			}
			res, err := unofferedCall(ctx, reg, call)
			return fastResult(res), err
		}
	})
	return server, stop
}

// undeclared are the methods of the capabilities agenthost does not
// declare when it serves tools only (a registry without MCP servers; see
// gateway.serves). The SDK would answer them all the same.
var undeclared = map[string]bool{
	"logging/setLevel":         true,
	"resources/list":           true,
	"resources/templates/list": true,
	"resources/read":           true,
	"resources/subscribe":      true,
	"resources/unsubscribe":    true,
	"prompts/list":             true,
	"prompts/get":              true,
	"completion/complete":      true,
}

// unofferedCall answers a call of a tool the server does not offer with
// the registry's error result, shaped as the SDK shapes a tool's result:
// from protocol version 2026-07-28 on, it says it is complete.
func unofferedCall(ctx context.Context, reg *host.ToolRegistry, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := callTool(ctx, reg, req)
	if err != nil || !multiRoundTrip(req.Session) {
		return res, err
	}
	// The result's type has no setter: it is set as a result is read.
	var members map[string]any
	data, err := json.Marshal(res)
	if err == nil {
		err = json.Unmarshal(data, &members)
	}
	if err != nil {
		return nil, err
	}
	members["resultType"] = "complete"
	typed := &mcp.CallToolResult{}
	if data, err = json.Marshal(members); err == nil {
		err = json.Unmarshal(data, typed)
	}
	return typed, err
}

// multiRoundTrip reports whether the session's client speaks protocol
// version 2026-07-28 or later, whose results carry a resultType: the rule
// the SDK applies to the results of the tools it lists.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	version := mcp.SupportedProtocolVersions()[0]
	if ss != nil {
		if p := ss.InitializeParams(); p != nil {
			version = p.ProtocolVersion
		}
	}
	return version >= "2026-07-28"
}

// offer keeps the tools an MCP server offers in step with the registry's
// enabled tools.
type offer struct {
	reg    *host.ToolRegistry
	server *mcp.Server

	mu      sync.Mutex
	offered map[string][]byte // tool name → its MCP description, as JSON
}

// sync offers the registry's enabled tools, and only them: the SDK tells
// the clients when that changes the list.
func (o *offer) sync() {
	o.mu.Lock()
	defer o.mu.Unlock()
	schemas := map[string]host.ChatTool{}
	for _, s := range o.reg.EnabledSchemas() {
		schemas[s.Function.Name] = s
	}
	want := map[string][]byte{}
	var add []*mcp.Tool
	for _, info := range o.reg.Tools() {
		schema, ok := schemas[info.Name]
		if !ok || !info.Enabled {
			continue
		}
		tool := mcpTool(info, schema)
		data, _ := json.Marshal(tool)
		want[info.Name] = data
		if !bytes.Equal(o.offered[info.Name], data) {
			add = append(add, tool)
		}
	}
	var gone []string
	for name := range o.offered {
		if want[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		o.server.RemoveTools(gone...)
	}
	for _, tool := range add {
		o.server.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return callTool(ctx, o.reg, req)
		})
	}
	o.offered = want
}

// offers reports whether the server offers the tool name.
func (o *offer) offers(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.offered[name] != nil
}

// mcpTool is the MCP description of a registered tool: its title, its
// parameters schema as the registry exports it, its output schema when
// it has one, and every annotation explicit, because MCP's defaults for
// absent hints are the unsafe ones.
func mcpTool(info host.ToolInfo, schema host.ChatTool) *mcp.Tool {
	a := info.Annotations
	t := &mcp.Tool{
		Name:        info.Name,
		Title:       info.Title,
		Description: schema.Function.Description,
		InputSchema: schema.Function.Parameters,
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    a.ReadOnly,
			DestructiveHint: &a.Destructive,
			IdempotentHint:  a.Idempotent,
			OpenWorldHint:   &a.OpenWorld,
		},
	}
	if info.OutputSchema != nil {
		// The registry has checked that it is a JSON object schema.
		t.OutputSchema = info.OutputSchema
	}
	return t
}

// callTool runs a tools/call through the registry. A tool failure is an
// error result, of text alone; only a request without a tool name is a
// protocol error. A successful call of a tool with an output schema has
// its structured result, checked by the registry, as structuredContent
// beside the same answer as text.
func callTool(ctx context.Context, reg *host.ToolRegistry, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params == nil || req.Params.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing tool name"}
	}
	result := reg.ExecuteResult(ctx, req.Params.Name, req.Params.Arguments)
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: result.Text}},
		IsError: result.IsError,
	}
	if result.Content != nil && !result.IsError {
		// The parts as the tool's MCP server gave them.
		res.Content = callContent(result.Content, req.ProtocolVersion())
	}
	if result.Structured != nil {
		res.StructuredContent = result.Structured
	}
	return res, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
