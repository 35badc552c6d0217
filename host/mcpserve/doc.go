// Package mcpserve serves the tools of a [host.ToolRegistry] to MCP
// clients: the server of agenthost mcp, for any program that builds a
// registry of its own.
//
// [New] makes a [Server] of a registry. It serves one session over stdio
// with [Server.ServeStdio], a session over any transport of the MCP Go
// SDK (github.com/modelcontextprotocol/go-sdk/mcp) with [Server.Connect]
// or [Server.Run], and the streamable HTTP transport with
// [Server.Handler], for a [net/http.Server] of the program's own, or
// [Server.Serve] on a listener, as agenthost mcp --http does.
// [Server.Shutdown] lets the calls in flight finish before it closes the
// sessions:
//
//	srv := mcpserve.New(reg, nil)
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// The server offers the registry's enabled tools, as their titles,
// schemas and annotations say (every hint explicit), and follows the
// registry's changes; every tools/call runs through the registry, within
// the workspace roots of the session's client when it offers roots, and
// through the registry's interceptors, with the client named as the
// caller: a policy.Guard among them asks a client that declared
// elicitation whether a call may run (see [Server]). It serves every
// protocol version the SDK supports.
package mcpserve
