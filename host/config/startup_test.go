package config

import (
	"strings"
	"testing"
	"time"
)

// TestConfigStartupTimeout: an entry's startupTimeout, in seconds, is
// its server's StartupTimeout, beside timeout, which bounds its calls; a
// value that is no positive number is an error naming the line.
func TestConfigStartupTimeout(t *testing.T) {
	t.Parallel()
	c, err := Parse("agenthost.json", []byte(`{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "startupTimeout": 120, "timeout": 30}}}`))
	if err != nil {
		t.Fatal(err)
	}
	servers := c.MCPServers()
	if len(servers) != 1 || servers[0].StartupTimeout != 2*time.Minute || servers[0].Timeout != 30*time.Second {
		t.Fatalf("servers = %+v", servers)
	}
	for _, bad := range []string{`0`, `-5`, `"60"`} {
		_, err := Parse("agenthost.json", []byte("{\"mcpServers\": {\"s\": {\"command\": \"npx\",\n \"startupTimeout\": "+bad+"}}}"))
		if err == nil || !strings.Contains(err.Error(), "agenthost.json:2: mcpServers.s.startupTimeout: want a number of seconds") {
			t.Errorf("startupTimeout %s: %v", bad, err)
		}
	}
}
