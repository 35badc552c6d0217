package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestClaudeCodeMCPFile: the project's .mcp.json, as Claude Code writes
// it, adds its servers under agenthost.json's, once trusted as
// agenthost.json is: untrusted, changed, or with a program it runs
// changed, it stops agenthost with the message of an untrusted
// agenthost.json, naming .mcp.json.
func TestClaudeCodeMCPFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTHOST_PLUGINS", "")
	project := t.TempDir()
	t.Chdir(project)
	plugins := t.TempDir()
	// The server is a program of the project, which trust pins.
	server := filepath.Join(project, "server")
	data, err := os.ReadFile(plugintest.Binary(t, "./host/testdata/mcpserver"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(server, data, 0o755); err != nil {
		t.Fatal(err)
	}
	mcpJSON := `{
  "mcpServers": {
    "hostile": {"type": "stdio", "command": "./server", "args": [], "env": {}},
    "docs": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
    "old": {"type": "sse", "url": "https://sse.example.com/sse"}
  }
}
`
	plugintest.WriteFile(t, project, ".mcp.json", mcpJSON)
	notTrusted := `agenthost: .mcp.json: this directory's configuration is not trusted: it can start programs (mcpServers, plugins) and widen the sandbox. Read it, then run "agenthost trust" (again after each change), or name it with --config to use it once` + "\n"
	echo := func() result {
		t.Helper()
		return runCLI(t, "", "--plugins", plugins, "call", "echo", `{"text":"from .mcp.json"}`)
	}

	if r := echo(); r.code != 2 || r.stderr != notTrusted {
		t.Fatalf("an untrusted .mcp.json: %d %q", r.code, r.stderr)
	}
	r := runCLI(t, "", "trust")
	if want := "trusted " + filepath.Join(project, ".mcp.json") + " as it is now, with the 1 files of the project it runs or reads"; r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("agenthost trust: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := echo(); r.code != 0 || r.stdout != "from .mcp.json\n" {
		t.Fatalf("echo of the trusted .mcp.json's server: %d %q %q", r.code, r.stdout, r.stderr)
	}
	c, err := loadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []host.MCPServer{
		{Name: "docs", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, Transport: "http"},
		{Name: "hostile", Command: server, Args: []string{}, Env: map[string]string{}, Transport: "stdio"},
		{Name: "old", URL: "https://sse.example.com/sse", Transport: "sse"},
	}
	if got := c.MCPServers(); !reflect.DeepEqual(got, want) {
		t.Errorf("servers:\n%+v\nwant:\n%+v", got, want)
	}

	// agenthost.json's server of the same name wins; agenthost trust
	// trusts both files.
	plugintest.WriteFile(t, project, "agenthost.json", fmt.Sprintf(`{"mcpServers": {"hostile": {"command": %q, "prefix": "h"}}}`, server))
	if r := echo(); r.code != 2 || !strings.Contains(r.stderr, "agenthost.json: this directory's configuration is not trusted") {
		t.Fatalf("an untrusted agenthost.json beside a trusted .mcp.json: %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, "", "trust"); r.code != 0 || strings.Count(r.stdout, "trusted ") != 2 {
		t.Fatalf("agenthost trust: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", "--plugins", plugins, "call", "h_echo", `{"text":"from agenthost.json"}`); r.code != 0 || r.stdout != "from agenthost.json\n" {
		t.Errorf("h_echo: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if err := os.Remove("agenthost.json"); err != nil {
		t.Fatal(err)
	}

	// A change of .mcp.json needs trust again.
	plugintest.WriteFile(t, project, ".mcp.json", strings.Replace(mcpJSON, `"args": []`, `"args": ["-v"]`, 1))
	if r := echo(); r.code != 2 || r.stderr != notTrusted {
		t.Errorf("a changed .mcp.json: %d %q", r.code, r.stderr)
	}
	plugintest.WriteFile(t, project, ".mcp.json", mcpJSON)
	if r := echo(); r.code != 0 {
		t.Errorf("the .mcp.json that was trusted, back: %d %q", r.code, r.stderr)
	}
	// So does a change of the program it runs, which is not started.
	if err := os.WriteFile(server, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	r = echo()
	if want := "agenthost: .mcp.json: this directory's configuration is trusted, but what it runs changed since: " + server + `. Read it, then run "agenthost trust" again` + "\n"; r.code != 2 || r.stderr != want {
		t.Errorf("a changed server program: %d %q, want %q", r.code, r.stderr, want)
	}

	// A file that is not Claude Code's format stops agenthost, and is
	// not trusted.
	plugintest.WriteFile(t, project, ".mcp.json", "{\n  \"roots\": [\"/\"]\n}\n")
	want2 := `agenthost: .mcp.json:2: unknown key "roots" (want mcpServers)` + "\n"
	if r := echo(); r.code != 2 || r.stderr != want2 {
		t.Errorf("a .mcp.json with another key: %d %q, want %q", r.code, r.stderr, want2)
	}
	if r := runCLI(t, "", "trust"); r.code != 2 || r.stderr != want2 {
		t.Errorf("agenthost trust of a .mcp.json with another key: %d %q", r.code, r.stderr)
	}
}
