package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/mcpserve"
	"github.com/agenthost/agenthost/host/policy"
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
		approval: policy.ModeAuto,
		usage:    "agenthost mcp [--http ADDR [--token TOKEN] [--allow-origin ORIGIN]... [--max-sessions N] [--session-idle D] [--stateless]]\n  agenthost mcp login NAME [--timeout D] [--no-browser]\n  agenthost mcp logout NAME",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.http, "http", "", "serve the streamable HTTP transport at `ADDR` (host:port; the host defaults to 127.0.0.1) instead of stdio")
			fs.StringVar(&f.token, "token", "", "require `TOKEN` as a bearer token over HTTP (default $"+mcpTokenVar+"); required when ADDR is not loopback")
			fs.Var(&f.allowOrigins, "allow-origin", "also accept requests from web pages of `ORIGIN` (scheme://host[:port]; repeatable); * accepts every origin, which lets any web page the user visits call the tools")
			fs.IntVar(&f.maxSessions, "max-sessions", mcpserve.DefaultMaxSessions, "cap at `N` the sessions open plus the requests in flight without one (protocol 2026-07-28 and later, every request with --stateless); over it, HTTP 503")
			fs.DurationVar(&f.sessionIdle, "session-idle", mcpserve.DefaultSessionIdle, "close a session after `D` without requests")
			fs.BoolVar(&f.stateless, "stateless", false, "keep no sessions over HTTP for any protocol version, so that any replica behind a load balancer can answer any request; clients of versions before 2026-07-28 then lose server-to-client notifications outside a request (notifications/tools/list_changed), server-to-client requests, per-session state and notifications/cancelled (a call is canceled when its client closes its request; clients of 2026-07-28 and later lose nothing and get tools/list_changed on subscriptions/listen)")
		},
		details:    mcpRootsDetails + "\n\n" + mcpLoginDetails,
		prepare:    f.check,
		noRegistry: isMCPLogin,
		run: func(ctx context.Context, env *env, args []string) error {
			if isMCPLogin(args) {
				return mcpLogin(ctx, env, args)
			}
			if len(args) > 0 {
				return usagef("mcp takes no arguments but login NAME or logout NAME")
			}
			server := mcpserve.New(env.registry, &mcpserve.Options{
				Token:        f.token,
				AllowOrigins: f.allowOrigins,
				MaxSessions:  f.maxSessions,
				SessionIdle:  f.sessionIdle,
				Stateless:    f.stateless,
			})
			if f.http == "" {
				beforeStdioServe()
				if err := server.ServeStdio(ctx, env.stdin, env.stdout); err != nil {
					return fmt.Errorf("mcp: %w", err)
				}
				return nil
			}
			ln, err := net.Listen("tcp", f.addr)
			if err != nil {
				return fmt.Errorf("mcp: %w", err)
			}
			fmt.Fprintf(env.stderr, "listening on http://%s/mcp\n", ln.Addr())
			if err := server.Serve(ctx, ln); err != nil {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
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

// mcpRootsDetails is what agenthost mcp --help says of the client's roots.
const mcpRootsDetails = `Workspace roots from the client: a client that declares the MCP roots
capability is asked for its roots before a call of a tool that touches
files: with roots/list once per session (and again after each
notifications/roots/list_changed), or, from protocol 2026-07-28 on, in the
call's result (input_required), which the client answers by sending the
call again with its roots. Its file:// roots narrow the --root directories
for those calls; they never widen them. A client root inside a --root is
used as it is (its symbolic links resolved); one that contains --root
directories narrows to them; one outside them all, or not a local file://
URI, is refused, with a warning on stderr. When none is left, a tool that
touches files answers an error naming both; a tool that touches none
(save_session_context, an MCP server's tool that takes no path) works. A
client that lists no roots, or does not answer within 5s, leaves the
--root directories in force, and so does --stateless before 2026-07-28,
whose client cannot be asked.`

// originList is the repeatable --allow-origin flag.
type originList []string

func (l *originList) String() string { return strings.Join(*l, ",") }

func (l *originList) Set(s string) error {
	if s != "*" {
		o, ok := mcpserve.NormalOrigin(s)
		if !ok {
			return fmt.Errorf("%q is not an origin (scheme://host[:port], or *)", s)
		}
		s = o
	}
	*l = append(*l, s)
	return nil
}

// checkHTTP validates the flags of the HTTP transport.
func (f *mcpFlags) checkHTTP() error {
	if f.http == "" {
		switch {
		case f.stateless:
			return usagef("mcp: --stateless needs --http")
		case len(f.allowOrigins) > 0:
			return usagef("mcp: --allow-origin needs --http")
		case f.maxSessions != mcpserve.DefaultMaxSessions:
			return usagef("mcp: --max-sessions needs --http")
		case f.sessionIdle != mcpserve.DefaultSessionIdle:
			return usagef("mcp: --session-idle needs --http")
		}
		return nil
	}
	if f.stateless && f.sessionIdle != mcpserve.DefaultSessionIdle {
		return usagef("mcp: --session-idle with --stateless: a stateless server keeps no sessions")
	}
	if f.maxSessions < 1 {
		return usagef("mcp: --max-sessions %d: must be at least 1", f.maxSessions)
	}
	if f.sessionIdle <= 0 {
		return usagef("mcp: --session-idle %s: must be positive", f.sessionIdle)
	}
	return nil
}

var _ flag.Value = (*originList)(nil)
