package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/mcpserve"
)

// httpReply is what an HTTP request got.
type httpReply struct {
	status int
	header http.Header
	body   string
}

// httpSend makes one request of the MCP transport: a POST when body is not
// empty, with the headers the transport requires, then headers kv.
func httpSend(t *testing.T, method, u, body string, kv ...string) httpReply {
	t.Helper()
	r, err := httpDo(t.Context(), method, u, body, kv...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// httpDo is httpSend for another goroutine than the test's.
func httpDo(ctx context.Context, method, u, body string, kv ...string) (httpReply, error) {
	resp, err := httpOpen(ctx, method, u, body, kv...)
	if err != nil {
		return httpReply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpReply{}, err
	}
	return httpReply{resp.StatusCode, resp.Header, string(data)}, nil
}

// httpOpen makes the request of httpSend and returns the response with its
// body unread, for an event stream.
func httpOpen(ctx context.Context, method, u, body string, kv ...string) (*http.Response, error) {
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

func TestMCPHTTPFlags(t *testing.T) {
	t.Setenv(mcpTokenVar, "")
	for name, tc := range map[string]struct {
		args      []string
		stderrHas string
	}{
		"origin with a path":     {[]string{"mcp", "--http", "0", "--allow-origin", "http://a.example/x"}, `invalid value "http://a.example/x" for flag -allow-origin: "http://a.example/x" is not an origin (scheme://host[:port], or *)`},
		"origin without scheme":  {[]string{"mcp", "--http", "0", "--allow-origin", "a.example"}, "is not an origin"},
		"origin without http":    {[]string{"mcp", "--allow-origin", "http://a.example"}, "mcp: --allow-origin needs --http"},
		"no sessions":            {[]string{"mcp", "--http", "0", "--max-sessions", "0"}, "mcp: --max-sessions 0: must be at least 1"},
		"max without http":       {[]string{"mcp", "--max-sessions", "5"}, "mcp: --max-sessions needs --http"},
		"zero idle":              {[]string{"mcp", "--http", "0", "--session-idle", "0s"}, "mcp: --session-idle 0s: must be positive"},
		"idle without http":      {[]string{"mcp", "--session-idle", "1m"}, "mcp: --session-idle needs --http"},
		"bad idle":               {[]string{"mcp", "--http", "0", "--session-idle", "soon"}, "session-idle"},
		"stateless without http": {[]string{"mcp", "--stateless"}, "mcp: --stateless needs --http"},
		"stateless no requests":  {[]string{"mcp", "--http", "0", "--stateless", "--max-sessions", "0"}, "mcp: --max-sessions 0: must be at least 1"},
		"stateless idle":         {[]string{"mcp", "--http", "0", "--stateless", "--session-idle", "1m"}, "mcp: --session-idle with --stateless: a stateless server keeps no sessions"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderrHas) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.stderrHas)
			}
		})
	}
	// --max-sessions holds requests too: it goes with --stateless.
	f := &mcpFlags{http: "0", stateless: true, maxSessions: 5, sessionIdle: mcpserve.DefaultSessionIdle}
	if err := f.checkHTTP(); err != nil {
		t.Errorf("--stateless --max-sessions 5: %v", err)
	}
}
