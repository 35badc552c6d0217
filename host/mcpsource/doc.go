// Package mcpsource is the protocol side of an MCP server used as a
// source of tools: it connects to the server as an MCP client (the
// official Go SDK underneath), lists the server's tools and calls them,
// turning each result into the one text a model reads (and keeping its
// content blocks beside it, Result.Content, for those who take more). It
// also lists, gets and reads the server's prompts and resources.
//
// Starting the server's process, its sandbox, restarts and the tool
// registry are the host's business; this package only speaks the
// protocol over a transport it is given:
//
//	cmd := exec.Command("mcp-server-x")
//	stdin, _ := cmd.StdinPipe()
//	stdout, _ := cmd.StdoutPipe()
//	if err := cmd.Start(); err != nil {
//		return err
//	}
//	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
//	defer cancel()
//	s, err := mcpsource.Connect(ctx, mcpsource.Stdio(stdout, stdin), mcpsource.Options{Name: "agenthost", Version: version})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	tools, err := s.Tools(ctx)
//	...
//	text, isError, err := s.Call(ctx, "echo", json.RawMessage(`{"message":"hi"}`))
//
// CallResult returns the result's structured content too, for the tools
// whose Tool.OutputSchema the server declared; the host checks it
// against that schema.
//
// Two error channels, as everywhere in the host:
//   - A tool's own failure is data: Call returns the result's text with
//     isError set, and err nil.
//   - A Go error means the call did not produce a result: the server
//     answered the request with a JSON-RPC error (an unknown tool, invalid
//     arguments: errors.As finds the *jsonrpc.Error), the context ended
//     (errors.Is finds context.Canceled or context.DeadlineExceeded), the
//     connection is gone (errors.Is finds mcp.ErrConnectionClosed, and
//     Done is closed or about to be: over streamable HTTP, once the SDK's
//     attempts to reconnect, some 15 s, have failed), or the answer could
//     not be used or was over Options.MaxResult. Messages are sentences
//     for an operator or a model, never Go type names.
//
// What a server says about its tools is passed on as the server sent it:
// a tool without a name or an input schema that is not an object is not
// refused here, because the host validates every tool it registers (the
// SDK itself drops a null entry of a list, and a tool whose x-mcp-header
// annotations are invalid). What
// this package bounds is what could exhaust the host: a message on the
// wire (64 MiB + 1 MiB), a result's text (Options.MaxResult), a tool list
// (10,000 tools in at most 1,000 pages, and a page cursor may not repeat),
// a log message (16 KiB) and an error message (4 KiB).
//
// A remote server that asks for an OAuth 2.1 login is logged in to with
// Login, which stores the token (Tokens); HTTPAuth and SSEAuth send it,
// renew it, and fail a request the server refuses with an *AuthError
// that says to log in. They never open a browser.
//
// The client declares the roots capability when Options.Roots offers
// roots (the directories the server may work in, as file:// URIs, which
// SetRoots changes with notifications/roots/list_changed), sampling and
// elicitation when Options.Sampling and Options.Elicitation ask (the
// server's requests go to the client in front of the call they come
// during, Peer, with its progress and log messages), and asks for
// protocol version 2025-11-25 with the initialize handshake, which every
// server in use speaks; a server that only speaks an older version
// negotiates it down.
package mcpsource
