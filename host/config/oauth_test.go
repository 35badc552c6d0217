package config

import (
	"slices"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// An mcpServers entry's oauth object: Claude Code's keys, scopes as an
// array or as one string, and what is refused, at its line.
func TestConfigOAuth(t *testing.T) {
	t.Parallel()
	c, err := Parse("agenthost.json", []byte(`{"mcpServers": {
  "linear": {"url": "https://mcp.linear.app/mcp", "oauth": {
    "clientId": "agenthost-cli", "clientSecret": "${LINEAR_SECRET}",
    "scopes": ["read", "write"], "callbackPort": 8765,
    "clientMetadataUrl": "https://example.com/agenthost/client.json"}},
  "notion": {"type": "sse", "url": "https://mcp.notion.com/sse", "oauth": {"scopes": "read write"}},
  "plain": {"url": "https://example.com/mcp"}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := host.MCPOAuth{ClientID: "agenthost-cli", ClientSecret: "${LINEAR_SECRET}", Scopes: []string{"read", "write"}, CallbackPort: 8765, ClientMetadataURL: "https://example.com/agenthost/client.json"}
	got := c.Servers["linear"].Server.OAuth
	if got.ClientID != want.ClientID || got.ClientSecret != want.ClientSecret || !slices.Equal(got.Scopes, want.Scopes) || got.CallbackPort != want.CallbackPort || got.ClientMetadataURL != want.ClientMetadataURL {
		t.Errorf("linear's oauth is %+v; want %+v", got, want)
	}
	if got := c.Servers["notion"].Server.OAuth.Scopes; !slices.Equal(got, []string{"read", "write"}) {
		t.Errorf("notion's scopes are %q; want read and write", got)
	}
	if got := c.Servers["plain"].Server.OAuth; got.ClientID != "" || got.Scopes != nil {
		t.Errorf("plain's oauth is %+v; want the zero value", got)
	}

	errs := map[string]struct{ json, want string }{
		"with command": {`{"mcpServers": {"s": {"command": "x", "oauth": {}}}}`,
			`agenthost.json:1: mcpServers.s.oauth: goes with url, not command`},
		"unknown key": {`{"mcpServers": {"s": {"url": "https://x/mcp", "oauth": {"authServerMetadataUrl": "https://x"}}}}`,
			`agenthost.json:1: mcpServers.s.oauth: unknown key "authServerMetadataUrl" (want clientId, clientSecret, scopes, clientMetadataUrl, callbackPort)`},
		"secret alone": {"{\"mcpServers\": {\"s\": {\"url\": \"https://x/mcp\", \"oauth\": {\n\"clientSecret\": \"s\"}}}}",
			`agenthost.json:2: mcpServers.s.oauth.clientSecret: goes with clientId, which is missing`},
		"bad port": {`{"mcpServers": {"s": {"url": "https://x/mcp", "oauth": {"callbackPort": 70000}}}}`,
			`agenthost.json:1: mcpServers.s.oauth.callbackPort: 70000: want a port from 1 to 65535`},
		"http metadata document": {`{"mcpServers": {"s": {"url": "https://x/mcp", "oauth": {"clientMetadataUrl": "http://x/c.json"}}}}`,
			`agenthost.json:1: mcpServers.s.oauth.clientMetadataUrl: "http://x/c.json": want an https URL with a path (the client ID metadata document's)`},
		"no scopes": {`{"mcpServers": {"s": {"url": "https://x/mcp", "oauth": {"scopes": " "}}}}`,
			`agenthost.json:1: mcpServers.s.oauth.scopes: no scope given (leave the key out to ask for the scopes the server names)`},
		"not an object": {`{"mcpServers": {"s": {"url": "https://x/mcp", "oauth": true}}}`,
			`agenthost.json:1: mcpServers.s.oauth: want an object, got a boolean`},
	}
	for name, tc := range errs {
		_, err := Parse("agenthost.json", []byte(tc.json))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v\nwant %s", name, err, tc.want)
		}
	}
}
