package main

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/mcpserve"
)

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
