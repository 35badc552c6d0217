//go:build tokens

// What deferred tools save a request, counted with tiktoken's o200k_base
// and cl100k_base (tokens_test.go): ten MCP servers, the reference
// servers everything and filesystem and eight of host/testdata/mcpserver
// with a long tool each, the tools of a request with every tool offered,
// deferred, and once find_tools loaded five. A measurement, left out of
// make test by its build tag:
//
//	go test -tags tokens -run TestDeferTokenCost -v ./cmd/agenthost

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

func TestDeferTokenCost(t *testing.T) {
	tok := newCounter(t)
	node, everything := mcptest.Everything(t)
	_, filesystem := mcptest.Filesystem(t, t.TempDir())
	servers := []host.MCPServer{
		{Name: "everything", Command: node, Args: everything},
		{Name: "filesystem", Command: node, Args: filesystem},
	}
	hostile := plugintest.Binary(t, "./host/testdata/mcpserver")
	for i := 1; i <= 8; i++ {
		name := fmt.Sprintf("s%d", i)
		servers = append(servers, host.MCPServer{Name: name, Command: hostile, Prefix: name,
			Env: map[string]string{"MCPSERVER_TOOLS": "1,16000"}})
	}
	load := func(deferTokens int) *host.ToolRegistry {
		reg := host.NewToolRegistry(&host.Options{CacheDir: host.NoCache, DeferTokens: deferTokens})
		t.Cleanup(func() { reg.Close() })
		for _, rep := range reg.LoadMCPServers(t.Context(), servers) {
			if rep.Err != nil {
				t.Fatalf("%s: %v", rep.Path, rep.Err)
			}
		}
		return reg
	}
	size := func(reg *host.ToolRegistry) (int, int, []int) {
		schemas := reg.EnabledSchemas()
		data, err := json.Marshal(schemas)
		if err != nil {
			t.Fatal(err)
		}
		return len(schemas), len(data), tok.count(string(data))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "a request's tools, 10 MCP servers (%s):\n", strings.Join(encodings, " / "))
	fmt.Fprintf(&table, "%-36s %-6s %-8s %-16s %s\n", "", "tools", "bytes", "tokens", "bytes/4")
	row := func(what string, reg *host.ToolRegistry) {
		n, bytes, tokens := size(reg)
		fmt.Fprintf(&table, "%-36s %-6d %-8d %-16s %d\n", what, n, bytes, pair(tokens), bytes/4)
	}
	row("every tool offered (deferTools off)", load(-1))
	reg := load(0)
	row("deferred (the default)", reg)
	found := reg.Execute(t.Context(), host.FindToolsName, []byte(`{"query":"read text files and directories"}`))
	if !strings.HasPrefix(found, "Loaded 5 tools") {
		t.Fatalf("find_tools = %q", found)
	}
	row("after find_tools loaded 5", reg)
	t.Log("\n" + table.String())
	if out := os.Getenv("AGENTHOST_TOKENS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
