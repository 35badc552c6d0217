package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/buildinfo"
	"github.com/agenthost/agenthost/internal/mcpstdio"
)

// mcpTokenVar is the environment variable that holds the bearer token of
// agenthost mcp --http, when --token is not given.
const mcpTokenVar = "AGENTHOST_MCP_TOKEN"

// mcpFlags are the flags of agenthost mcp.
type mcpFlags struct {
	http         string
	token        string
	allowOrigins originList
	maxSessions  int
	sessionIdle  time.Duration
	stateless    bool
	// addr is --http with its host filled in: what the server listens on.
	addr string
}

// mcpCommand serves the registry's enabled tools to MCP clients: over
// stdio, or over the streamable HTTP transport with --http.
func mcpCommand() *command {
	f := &mcpFlags{}
	return &command{
		usage: "agenthost mcp [--http ADDR [--token TOKEN] [--allow-origin ORIGIN]... [--max-sessions N] [--session-idle D] [--stateless]]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.http, "http", "", "serve the streamable HTTP transport at `ADDR` (host:port; the host defaults to 127.0.0.1) instead of stdio")
			fs.StringVar(&f.token, "token", "", "require `TOKEN` as a bearer token over HTTP (default $"+mcpTokenVar+"); required when ADDR is not loopback")
			fs.Var(&f.allowOrigins, "allow-origin", "also accept requests from web pages of `ORIGIN` (scheme://host[:port]; repeatable); * accepts every origin, which lets any web page the user visits call the tools")
			fs.IntVar(&f.maxSessions, "max-sessions", defaultMaxSessions, "cap at `N` the sessions open plus the requests in flight without one (protocol 2026-07-28 and later, every request with --stateless); over it, HTTP 503")
			fs.DurationVar(&f.sessionIdle, "session-idle", defaultSessionIdle, "close a session after `D` without requests")
			fs.BoolVar(&f.stateless, "stateless", false, "keep no sessions over HTTP for any protocol version, so that any replica behind a load balancer can answer any request; clients of versions before 2026-07-28 then lose server-to-client notifications outside a request (notifications/tools/list_changed), server-to-client requests and per-session state (clients of 2026-07-28 and later get tools/list_changed on subscriptions/listen)")
		},
		details: mcpRootsDetails,
		prepare: f.check,
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 0 {
				return usagef("mcp takes no arguments")
			}
			server := newMCPServer(env.registry)
			if f.http == "" {
				beforeStdioServe()
				return serveStdio(ctx, server, readOnlyTool(env.registry), env.stdin, env.stdout)
			}
			return serveHTTP(ctx, server, readOnlyTool(env.registry), f, env.stderr)
		},
	}
}

// beforeStdioServe runs before agenthost mcp serves stdio. main sets it
// to oneProcessor; tests, which run the command in their own process,
// leave it alone.
var beforeStdioServe = func() {}

// oneProcessor runs the process's Go code on one processor, unless the
// user set GOMAXPROCS. A stdio server has one client, and its calls' work
// is done in the plugins' processes; what is left here is handing
// messages between the client's pipe, the MCP SDK's goroutines and gRPC's.
// With more processors each hand-off wakes another thread on another
// CPU, which on a virtual machine costs more than the work handed over:
// with one, a small call's round trip is about a quarter shorter
// (BenchmarkOneShot's mcp_calls). The HTTP server, which serves many
// clients at once, keeps every processor.
func oneProcessor() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// check validates the flags before the plugins start: a non-loopback
// address needs a token.
func (f *mcpFlags) check() error {
	if err := f.checkHTTP(); err != nil {
		return err
	}
	if f.http == "" {
		if f.token != "" {
			return usagef("mcp: --token needs --http")
		}
		return nil
	}
	if f.token == "" {
		f.token = os.Getenv(mcpTokenVar)
	}
	addr, loopback, err := listenAddr(f.http)
	if err != nil {
		return usagef("mcp: --http %s: %v", f.http, err)
	}
	if !loopback && f.token == "" {
		return usagef("mcp: --http %s is not a loopback address: set a bearer token with --token or %s", f.http, mcpTokenVar)
	}
	f.addr = addr
	return nil
}

// listenAddr completes an --http address: a bare port or ":port" binds
// 127.0.0.1. It reports whether the host is a loopback one.
func listenAddr(s string) (addr string, loopback bool, err error) {
	if !strings.Contains(s, ":") {
		s = ":" + s
	}
	h, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", false, err
	}
	if port == "" {
		return "", false, errors.New("no port")
	}
	if h == "" {
		h = "127.0.0.1"
	}
	if ip := net.ParseIP(h); ip != nil {
		loopback = ip.IsLoopback()
	} else {
		loopback = strings.EqualFold(h, "localhost")
	}
	return net.JoinHostPort(h, port), loopback, nil
}

// newMCPServer returns an MCP server that offers the registry's enabled
// tools and runs every tools/call through the registry. The list follows
// the registry: a tool enabled, disabled, registered or gone (an MCP
// server behind this one changed its tools) changes what the server
// offers, and its clients get notifications/tools/list_changed. A client
// that offers roots has its session's calls confined to them, within the
// registry's workspace roots (see clientRoots).
func newMCPServer(reg *host.ToolRegistry) *mcp.Server {
	roots := newClientRoots(reg)
	server := mcp.NewServer(&mcp.Implementation{Name: "agenthost", Version: buildinfo.Version()}, &mcp.ServerOptions{
		Capabilities:            &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		RootsListChangedHandler: roots.changed,
	})
	g := &offer{reg: reg, server: server}
	g.sync()
	reg.OnChange(g.sync)
	server.AddReceivingMiddleware(roots.middleware, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if undeclared[method] {
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
	return server
}

// undeclared are the methods of the capabilities agenthost does not
// declare: it serves tools only. The SDK would answer them all the same.
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
	if result.Structured != nil {
		res.StructuredContent = result.Structured
	}
	return res, nil
}

// serveStdio serves one session over stdin and stdout until the client
// closes stdin or ctx is canceled. A line that is not a JSON-RPC message
// is answered with a JSON-RPC error, and the session goes on.
func serveStdio(ctx context.Context, server *mcp.Server, readOnly func(string) bool, stdin io.Reader, stdout io.Writer) error {
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
	gate := newCallGate(maxCallsPerSession, readOnly)
	server.AddReceivingMiddleware(gate.middleware())
	session, err := server.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- session.Wait() }()
	select {
	case <-ctx.Done():
		// The calls in flight finish, within drainTimeout, and are
		// answered as they ended.
		gate.drain(drainTimeout, context.Cause(ctx))
		session.Close()
		<-done
		return nil
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mcp: %w", err)
		}
		return nil
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
