package main

// Trimming the tools a model gets: --enable and --disable with globs and
// sources, the configuration's lists, an mcpServers entry's tools and
// disabledTools, and deferred tools, through the CLI with a real MCP
// server (host/testdata/mcpserver).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// trimUser writes a configuration naming the hostile MCP server with the
// entry's extra keys, and extra top-level keys; it returns the arguments
// that run agenthost with it.
func trimUser(t *testing.T, entry, top string) []string {
	t.Helper()
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agenthost.json")
	data := fmt.Sprintf("{%s\n\"mcpServers\": {\"hostile\": {\"command\": %q%s}}}", top, server, entry)
	if err := os.WriteFile(cfg, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--plugins", t.TempDir(), "--cache-dir", "-"}
}

// statuses are the tools agenthost tools printed, by name: their status.
func statuses(t *testing.T, stdout string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		f := strings.Fields(line)
		out[f[0]] = f[1]
	}
	return out
}

// TestTrimWithPatterns: --enable and --disable, and the configuration's
// lists, take globs, mcp:SERVER and mcp:SERVER/GLOB; one that matches
// nothing stops agenthost, naming it.
func TestTrimWithPatterns(t *testing.T) {
	t.Parallel()
	base := trimUser(t, "", "")
	r := runCLI(t, "", append(base, "--disable", "mcp:hostile", "--enable", "mcp:hostile/ech*", "--enable", "s?eep", "tools")...)
	if r.code != 0 {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	got := statuses(t, r.stdout)
	if got["echo"] != "enabled" || got["sleep"] != "enabled" || got["pid"] != "disabled" || got["count"] != "disabled" {
		t.Errorf("statuses: %v", got)
	}

	for flag, want := range map[string]string{
		"mcp:nosuch":      "agenthost: --disable mcp:nosuch: tool not found: mcp:nosuch matches no tool: no MCP server nosuch was loaded",
		"zz_*":            "agenthost: --disable zz_*: tool not found: zz_* matches no tool",
		"mcp:hostile/zz*": "agenthost: --disable mcp:hostile/zz*: tool not found: mcp:hostile/zz* matches none of the tools of MCP server hostile",
		"mcp:a b":         `agenthost: --disable mcp:a b: mcp:a b: want mcp:SERVER or mcp:SERVER/TOOL, with a server's name`,
	} {
		r := runCLI(t, "", append(base, "--disable", flag, "tools")...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("--disable %s: exit status %d, stderr %q, want it to start %q", flag, r.code, r.stderr, want)
		}
	}

	// The configuration's lists, before the flags.
	args := trimUser(t, "", `"disable": ["mcp:hostile/s*", "count"], "enable": ["sleep"],`)
	r = runCLI(t, "", append(args, "--enable", "count", "tools")...)
	got = statuses(t, r.stdout)
	if r.code != 0 || got["spawn"] != "disabled" || got["shrink"] != "disabled" || got["sleep"] != "enabled" || got["count"] != "enabled" || got["echo"] != "enabled" {
		t.Errorf("exit status %d, statuses %v, stderr %s", r.code, got, r.stderr)
	}
	args = trimUser(t, "", "\n\"disable\": [\"nope_*\"],")
	r = runCLI(t, "", append(args, "tools")...)
	if want := "agenthost.json:2: disable: nope_*: tool not found: nope_* matches no tool"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit status %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}

// TestTrimServerTools: an mcpServers entry's tools and disabledTools (and
// the names other clients give them) register only the tools they let
// through; agenthost plugins says which they left out.
func TestTrimServerTools(t *testing.T) {
	t.Parallel()
	args := trimUser(t, `, "includeTools": ["echo", "co*"], "excludeTools": ["crash"]`, "")
	r := runCLI(t, "", append(args, "tools")...)
	if got := slices.Sorted(func(yield func(string) bool) {
		for name := range statuses(t, r.stdout) {
			yield(name)
		}
	}); r.code != 0 || !slices.Equal(got, []string{"count", "echo"}) {
		t.Errorf("exit status %d, tools %v, want count and echo; stderr %s", r.code, got, r.stderr)
	}
	r = runCLI(t, "", append(args, "plugins")...)
	if !strings.Contains(r.stdout, "  tools: count, echo\n") || !strings.Contains(r.stdout, "  left out: ") || !strings.Contains(r.stdout, "crash") {
		t.Errorf("agenthost plugins:\n%s", r.stdout)
	}
	r = runCLI(t, "", append(args, "call", "pid", "{}")...)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error: tool not found: pid\n") {
		t.Errorf("a tool left out: exit status %d, stderr %q", r.code, r.stderr)
	}
}

// TestTrimDeferredTools: with --defer-tools (or deferTools) past the
// size, agenthost tools shows the server's tools as deferred, schemas
// offers find_tools in their place, and find_tools finds them; the
// request is a fraction of the size.
func TestTrimDeferredTools(t *testing.T) {
	t.Parallel()
	args := trimUser(t, `, "env": {"MCPSERVER_TOOLS": "20,500"}`, "")
	r := runCLI(t, "", append(args, "--defer-tools", "0", "tools")...)
	got := statuses(t, r.stdout)
	if r.code != 0 || got["echo"] != "deferred" || got["extra7"] != "deferred" || got["find_tools"] != "enabled" {
		t.Errorf("exit status %d, statuses %v; stderr %s", r.code, got, r.stderr)
	}
	r = runCLI(t, "", append(args, "--defer-tools", "0", "tools", "--json")...)
	if !strings.Contains(r.stdout, `"name": "echo",
    "enabled": true,
    "deferred": true,`) {
		t.Errorf("agenthost tools --json does not say echo is deferred:\n%s", r.stdout)
	}

	sizes := map[string]int{}
	for _, value := range []string{"0", "off"} {
		r := runCLI(t, "", append(args, "--defer-tools", value, "schemas")...)
		var schemas []struct {
			Function struct{ Name string } `json:"function"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &schemas); err != nil {
			t.Fatalf("--defer-tools %s schemas: %v (%s)", value, err, r.stderr)
		}
		sizes[value] = len(r.stdout)
		if deferred := len(schemas) == 1 && schemas[0].Function.Name == "find_tools"; deferred != (value == "0") {
			t.Errorf("--defer-tools %s: the request offers %d tools", value, len(schemas))
		}
	}
	if sizes["0"]*3 > sizes["off"] {
		t.Errorf("deferred, the tools take %d bytes of %d", sizes["0"], sizes["off"])
	}

	r = runCLI(t, "", append(args, "--defer-tools", "0", "call", "find_tools", `{"query":"count words"}`)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Loaded ") || !strings.Contains(r.stdout, "\n- count (mcp:hostile): Count the words of the text.") {
		t.Errorf("find_tools: exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// The configuration says it too; the default defers nothing this small.
	deferAll := trimUser(t, `, "defer": true`, "")
	if got := statuses(t, runCLI(t, "", append(deferAll, "tools")...).stdout); got["echo"] != "deferred" {
		t.Errorf("\"defer\": true: %v", got)
	}
	if got := statuses(t, runCLI(t, "", append(trimUser(t, "", ""), "tools")...).stdout); got["echo"] != "enabled" || got["find_tools"] != "" {
		t.Errorf("a small server's tools, by default: %v", got)
	}
	if r := runCLI(t, "", append(args, "--defer-tools", "lots", "tools")...); r.code != 2 || !strings.Contains(r.stderr, `--defer-tools: "lots": want a number of tokens`) {
		t.Errorf("a bad --defer-tools: exit status %d, stderr %q", r.code, r.stderr)
	}
}
