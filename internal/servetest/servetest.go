// Package servetest is what the tests of agenthost's MCP server share,
// whether they serve a registry in process (host/mcpserve) or run the
// agenthost mcp command: a registry of the built plugins, an in-memory
// client session, the text of results, and raw requests of the
// streamable HTTP transport.
package servetest

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
)

// NewRegistry is the registry agenthost builds from the plugins in dir,
// with root as the workspace and the named tools enabled; it is closed
// when the test ends.
func NewRegistry(t *testing.T, dir, root string, enable ...string) *host.ToolRegistry {
	t.Helper()
	reg, err := host.NewDefaultToolRegistry(t.Context(), dir, &host.Options{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	for _, name := range enable {
		if err := reg.Enable(name); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Connect is how a server takes a session over a transport
// (mcpserve.Server.Connect).
type Connect func(context.Context, mcp.Transport, *mcp.ServerSessionOptions) (*mcp.ServerSession, error)

// ConnectInMemory serves a session through connect in process and
// returns a client session to it. Every message the client reads is
// also written to wire, when it is not nil.
func ConnectInMemory(t *testing.T, connect Connect, wire io.Writer) *mcp.ClientSession {
	t.Helper()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var ct mcp.Transport = clientT
	if wire != nil {
		ct = &mcp.LoggingTransport{Transport: clientT, Writer: wire}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// ToolNames are the names of tools, sorted.
func ToolNames(tools []*mcp.Tool) []string {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// Text is the text of a result that must be one text content.
func Text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v, want one text", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

// Call calls a tool, failing the test if the request itself fails.
func Call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// Reply is what an HTTP request got.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Send makes one request of the MCP transport: a POST when body is not
// empty, with the headers the transport requires, then headers kv.
func Send(t *testing.T, method, u, body string, kv ...string) Reply {
	t.Helper()
	r, err := Do(t.Context(), method, u, body, kv...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Do is Send for another goroutine than the test's.
func Do(ctx context.Context, method, u, body string, kv ...string) (Reply, error) {
	resp, err := Open(ctx, method, u, body, kv...)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, err
	}
	return Reply{resp.StatusCode, resp.Header, string(data)}, nil
}

// Open makes the request of Send and returns the response with its body
// unread, for an event stream. A "Host" in kv sets the request's host.
func Open(ctx context.Context, method, u, body string, kv ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "Host" {
			req.Host = kv[i+1]
			continue
		}
		req.Header.Set(kv[i], kv[i+1])
	}
	return http.DefaultClient.Do(req)
}
