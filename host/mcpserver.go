package host

import (
	"time"
)

// MCPServer is an MCP server whose tools the registry serves beside the
// plugins' (Options.MCPServers), as an entry of the mcpServers block of
// Claude Desktop's or Cursor's configuration describes one: a command
// spoken to over its stdin and stdout, or a URL.
//
// Command, Args, the values of Env, Dir, URL, the values of Headers and
// OAuth's ClientID and ClientSecret may name environment variables of the
// host as ${VAR}, ${VAR:-default} or ${env:VAR}; they are expanded when
// the server is started, so a secret
// can stay in the environment rather than in a file. A variable that is
// not set, without a default, is an error naming it.
type MCPServer struct {
	// Name is the server's key in the mcpServers block. Its tools are
	// shown as served by "mcp:NAME", and Options.Grants["mcp:NAME"] adds
	// to Grant.
	Name string

	// Command, Args, Env and Dir start a server spoken to over stdio. The
	// server gets the scrubbed environment a plugin gets, plus Env. A
	// Command without a slash is looked up in PATH.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is the endpoint of a server spoken to over HTTP; Headers are
	// sent with every request (an Authorization header, say).
	URL     string
	Headers map[string]string
	// Transport is "stdio", "http" (MCP's streamable HTTP) or "sse" (the
	// older HTTP+SSE transport); empty means stdio with a Command, http
	// with a URL.
	Transport string
	// OAuth configures the OAuth 2.1 login of a server over HTTP that
	// asks for one (MCP's authorization): its zero value registers the
	// host with the server's authorization server by itself. The token
	// comes from agenthost mcp login NAME (MCPServer.Login) and is kept in
	// the user's configuration directory (mcpsource.DefaultTokens); a
	// server with an Authorization header is not logged in to.
	OAuth MCPOAuth

	// Prefix, when set, registers every tool of the server as
	// PREFIX_NAME. Without it, a tool whose name another source's tool
	// holds is registered as SERVER_NAME, the server's Name with what a
	// tool name may not hold made "_".
	Prefix string
	// Timeout bounds each call of the server's tools; zero means the
	// registry's default.
	Timeout time.Duration
	// StartupTimeout bounds the server's start: its process started (or
	// the connection made) and MCP's handshake completed. Zero means the
	// registry's Options.PluginStartTimeout, or LauncherStartTimeout for
	// a launcher that may download what it runs (npx, uvx, ...).
	StartupTimeout time.Duration
	// Grant is what the server's process gets beyond a third-party
	// plugin's defaults (the system read-only, its own program, the
	// workspace roots).
	Grant Grant

	// Tools, when set, are the only tools of the server that are
	// registered, and DisabledTools are never registered: names or globs
	// (list_*) of its tools as the server names them, before Prefix. A
	// tool they leave out is not registered at all: its name stays free
	// for another source, no Enable brings it back, and the source's
	// report lists it (SourceReport.LeftOut).
	Tools         []string
	DisabledTools []string
	// Defer says whether the server's tools are deferred: offered through
	// the search tool find_tools rather than one by one (see
	// Options.DeferTokens). The zero value is DeferAuto.
	Defer DeferMode
}
