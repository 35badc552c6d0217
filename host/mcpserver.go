package host

import (
	"time"
)

// MCPServer is an MCP server whose tools the registry serves beside the
// plugins' (Options.MCPServers), as an entry of the mcpServers block of
// Claude Desktop's or Cursor's configuration describes one: a command
// spoken to over its stdin and stdout, or a URL.
//
// Command, Args, the values of Env, Dir, URL and the values of Headers may
// name environment variables of the host as ${VAR}, ${VAR:-default} or
// ${env:VAR}; they are expanded when the server is started, so a secret
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

	// Prefix, when set, registers every tool of the server as
	// PREFIX_NAME.
	Prefix string
	// Timeout bounds each call of the server's tools; zero means the
	// registry's default.
	Timeout time.Duration
	// Grant is what the server's process gets beyond a third-party
	// plugin's defaults (the system read-only, its own program, the
	// workspace roots).
	Grant Grant
}
