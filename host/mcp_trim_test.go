package host_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// toolsOf are the tools registered from the MCP server, enabled or not.
func toolsOf(reg *host.ToolRegistry, server string) map[string]host.ToolInfo {
	out := map[string]host.ToolInfo{}
	for _, info := range reg.Tools() {
		if info.Plugin == host.MCPSourcePrefix+server {
			out[info.Name] = info
		}
	}
	return out
}

func schemaNames(reg *host.ToolRegistry) []string {
	var names []string
	for _, s := range reg.EnabledSchemas() {
		names = append(names, s.Function.Name)
	}
	return names
}

// schemaBytes is what the tools a request carries take, as JSON.
func schemaBytes(t *testing.T, reg *host.ToolRegistry) int {
	t.Helper()
	data, err := json.Marshal(reg.EnabledSchemas())
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// mcp:SERVER selects every tool of a server, mcp:SERVER/GLOB those of its
// tools the glob matches by the name they are registered under or the one
// the server gives them; one that matches none of the server's tools is
// an error naming it, and a server that failed to load is no error.
func TestMCPEnableDisableBySource(t *testing.T) {
	t.Parallel()
	b := hostileMCP(t, "b")
	b.Prefix = "b"
	broken := host.MCPServer{Name: "broken", Command: "agenthost-no-such-server"}
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, hostileMCP(t, "a"), b, broken)

	if err := reg.Disable("mcp:a"); err != nil {
		t.Fatal(err)
	}
	for name, info := range toolsOf(reg, "a") {
		if info.Enabled {
			t.Errorf("%s of mcp:a is enabled after --disable mcp:a", name)
		}
	}
	if !reg.IsToolEnabled("b_echo") {
		t.Error("--disable mcp:a disabled mcp:b's b_echo")
	}
	// b_pid is pid at its server.
	if err := reg.Disable("mcp:b/p?d"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Enable("mcp:a/ec*"); err != nil {
		t.Fatal(err)
	}
	if reg.IsToolEnabled("b_pid") || !reg.IsToolEnabled("echo") || reg.IsToolEnabled("pid") {
		t.Errorf("b_pid %v, echo %v, pid %v: want false, true, false", reg.IsToolEnabled("b_pid"), reg.IsToolEnabled("echo"), reg.IsToolEnabled("pid"))
	}
	if got := call(t, reg, "echo", `{"text":"back"}`); got != "back" {
		t.Errorf("echo = %q", got)
	}

	err := reg.Disable("mcp:a/nothing_*")
	if want := "tool not found: mcp:a/nothing_* matches none of the tools of MCP server a"; !errors.Is(err, host.ErrToolNotFound) || err == nil || err.Error() != want {
		t.Errorf("a glob that matches none of a server's tools: %v, want %q", err, want)
	}
	// The server that could not start was reported; choosing its tools
	// does not stop the host.
	if err := reg.Disable("mcp:broken"); err != nil {
		t.Errorf("--disable of a server that failed to load: %v", err)
	}
}

// A choice that names a source or a glob keeps applying to the tools the
// server lists later; the last choice that names a tool wins.
func TestMCPChoiceAppliesToToolsListedLater(t *testing.T) {
	t.Parallel()
	// No description cache: other tests change this server's list.
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, hostileMCP(t, "hostile"))
	if err := reg.Disable("mcp:hostile"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"grow", "shrink"} {
		if err := reg.Enable(name); err != nil {
			t.Fatal(err)
		}
	}
	call(t, reg, "grow", `{}`)
	eventually(t, "the new tool is registered", func() bool { return reg.HasTool("grown") })
	if reg.IsToolEnabled("grown") {
		t.Error("a tool listed after --disable mcp:hostile came enabled")
	}
	if got := reg.Execute(t.Context(), "grown", []byte(`{}`)); got != "Error: tool not available: grown is disabled" {
		t.Errorf("grown = %q", got)
	}

	if err := reg.Enable("gro*"); err != nil {
		t.Fatal(err)
	}
	call(t, reg, "shrink", `{}`)
	eventually(t, "the tool is unregistered", func() bool { return !reg.HasTool("grown") })
	call(t, reg, "grow", `{}`)
	eventually(t, "the tool is registered again", func() bool { return reg.HasTool("grown") })
	if got := call(t, reg, "grown", `{}`); got != "grown" {
		t.Errorf("grown, listed again after --enable gro*: %q", got)
	}
}

// An mcpServers entry's tools and disabledTools: the tools they leave out
// are not registered (their names stay free for another server), the
// report lists them, and what the server lists later is filtered alike.
func TestMCPServerToolFilters(t *testing.T) {
	t.Parallel()
	some := hostileMCP(t, "some")
	some.Tools = []string{"echo", "count", "gr*", "s*", "nothing_here"}
	some.DisabledTools = []string{"sleep", "grown"}
	other := hostileMCP(t, "other")
	other.Tools = []string{"sleep", "pid"}
	none := hostileMCP(t, "none")
	none.DisabledTools = []string{"*"}
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, some, other, none)

	got := slices.Sorted(func(yield func(string) bool) {
		for name := range toolsOf(reg, "some") {
			if !yield(name) {
				return
			}
		}
	})
	if want := []string{"count", "echo", "grow", "shrink", "spawn"}; !slices.Equal(got, want) {
		t.Errorf("mcp:some registers %v, want %v", got, want)
	}
	rep := report(t, reg, "some")
	if !slices.Contains(rep.LeftOut, "sleep") || !slices.Contains(rep.LeftOut, "pid") || slices.Contains(rep.LeftOut, "echo") {
		t.Errorf("left out: %v", rep.LeftOut)
	}
	// Another server takes the names left free.
	if got := call(t, reg, "sleep", `{"millis":1}`); got != "slept" {
		t.Errorf("mcp:other's sleep = %q", got)
	}
	if info := toolsOf(reg, "other"); len(info) != 2 {
		t.Errorf("mcp:other registers %v, want sleep and pid", info)
	}
	if err := reg.Enable("mcp:some/sleep"); !errors.Is(err, host.ErrToolNotFound) {
		t.Errorf("enabling a tool the filters left out: %v", err)
	}
	if r := report(t, reg, "none"); r.Err == nil || !strings.Contains(r.Err.Error(), "its tools and disabledTools leave none of its") {
		t.Errorf("a server whose filters leave nothing: %+v", r)
	}

	// What the server lists later is filtered alike.
	call(t, reg, "grow", `{}`)
	eventually(t, "the report lists the new tool as left out", func() bool {
		return slices.Contains(report(t, reg, "some").LeftOut, "grown")
	})
	if reg.HasTool("grown") {
		t.Error("a tool disabledTools names was registered when the server listed it")
	}

	bad := hostileMCP(t, "bad")
	bad.Tools = []string{"echo", "[a"}
	reg = loadMCP(t, &host.Options{CacheDir: host.NoCache}, bad)
	if r := report(t, reg, "bad"); r.Err == nil || r.Err.Error() != "its tools: [a is not a valid glob" {
		t.Errorf("a bad glob: %v", r.Err)
	}
}

// Past the size, an MCP server's tools are deferred: the request offers
// find_tools in their place, which finds and loads them; loaded tools are
// offered and run, and the request is a fraction of the size.
func TestMCPDeferredTools(t *testing.T) {
	t.Parallel()
	big := hostileMCP(t, "big")
	// 40 more tools of 1,000 bytes each: some 12,000 tokens in all.
	big.Env = map[string]string{"MCPSERVER_TOOLS": "40,1000"}
	small := hostileMCP(t, "small")
	small.Prefix = "s"
	small.Defer = host.DeferNever
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, big, small)
	var changes atomic.Int32
	defer reg.OnChange(func() { changes.Add(1) })()

	all := loadMCP(t, &host.Options{CacheDir: host.NoCache, DeferTokens: -1}, big, small)
	names := schemaNames(reg)
	if !slices.Contains(names, host.FindToolsName) || slices.Contains(names, "echo") || slices.Contains(names, "extra3") || !slices.Contains(names, "s_echo") {
		t.Fatalf("the request offers %v: want find_tools and s_*, none of mcp:big's", names)
	}
	deferredBytes, allBytes := schemaBytes(t, reg), schemaBytes(t, all)
	t.Logf("a request's tools: %d bytes deferred, %d bytes all (%d and %d tools)", deferredBytes, allBytes, len(names), len(all.EnabledSchemas()))
	if deferredBytes*2 > allBytes {
		t.Errorf("deferred, the request's tools take %d bytes of %d", deferredBytes, allBytes)
	}
	if info := toolsOf(reg, "big")["echo"]; !info.Enabled || !info.Deferred {
		t.Errorf("echo: %+v, want enabled and deferred", info)
	}
	finder := reg.EnabledSchemas()[slices.Index(names, host.FindToolsName)].Function.Description
	if want := fmt.Sprintf("mcp:big (%d): ", len(toolsOf(reg, "big"))); !strings.Contains(finder, want) || !strings.Contains(finder, "extra39") {
		t.Errorf("find_tools does not list the deferred tools:\n%s", finder)
	}

	// A search finds tools by words, and loads them.
	got := call(t, reg, host.FindToolsName, `{"query":"echo the text"}`)
	if !strings.HasPrefix(got, "Loaded ") || !strings.Contains(got, "\n- echo (mcp:big): Echo the text.") {
		t.Errorf("find_tools = %q", got)
	}
	if !slices.Contains(schemaNames(reg), "echo") || toolsOf(reg, "big")["echo"].Deferred {
		t.Error("echo is not offered after find_tools found it")
	}
	if changes.Load() == 0 {
		t.Error("loading tools does not call OnChange")
	}
	if got := call(t, reg, "echo", `{"text":"found"}`); got != "found" {
		t.Errorf("echo = %q", got)
	}
	// Names and patterns.
	got = call(t, reg, host.FindToolsName, `{"query":"mcp:big/extra1*"}`)
	if !strings.HasPrefix(got, "Loaded 11 tools") {
		t.Errorf("find_tools mcp:big/extra1* = %q", got)
	}
	got = call(t, reg, host.FindToolsName, `{"query":"count, pid"}`)
	if !strings.HasPrefix(got, "Loaded 2 tools") || !slices.Contains(schemaNames(reg), "pid") {
		t.Errorf("find_tools count, pid = %q", got)
	}
	if got := call(t, reg, host.FindToolsName, `{"query":"weather forecast"}`); !strings.HasPrefix(got, `No deferred tool matches "weather forecast"`) {
		t.Errorf("find_tools of nothing = %q", got)
	}
	// A deferred tool runs when called by name all the same.
	if got := call(t, reg, "extra30", `{}`); got != "extra" {
		t.Errorf("extra30 = %q", got)
	}
	// Enabling a tool by name offers it.
	if err := reg.Enable("extra31"); err != nil || !slices.Contains(schemaNames(reg), "extra31") {
		t.Errorf("extra31, enabled by name, is not offered (%v)", err)
	}

	// A tool the server lists later comes deferred, unless an Enable
	// names it.
	if err := reg.Enable("mcp:big/gr*"); err != nil {
		t.Fatal(err)
	}
	call(t, reg, "grow", `{}`)
	eventually(t, "grown is registered", func() bool { return reg.HasTool("grown") })
	if !slices.Contains(schemaNames(reg), "grown") {
		t.Error("a tool listed later, which --enable mcp:big/gr* names, is not offered")
	}

	// The user may turn the search off: every tool is offered again.
	if err := reg.Disable(host.FindToolsName); err != nil {
		t.Fatal(err)
	}
	enabled := 0
	for _, info := range reg.Tools() {
		if info.Enabled {
			enabled++
		}
	}
	if got := len(reg.EnabledSchemas()); got != enabled || slices.Contains(schemaNames(reg), host.FindToolsName) {
		t.Errorf("without find_tools the request offers %d tools, want all %d enabled", got, enabled)
	}
}

// Under the size nothing is deferred, unless a server says so; past 128
// tools they are deferred whatever their size.
func TestMCPDeferThresholds(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, nil, hostileMCP(t, "plain"))
	if slices.Contains(schemaNames(reg), host.FindToolsName) || reg.HasTool(host.FindToolsName) {
		t.Error("a small server's tools are deferred")
	}

	always := hostileMCP(t, "always")
	always.Defer = host.DeferAlways
	reg = loadMCP(t, &host.Options{DeferTokens: -1}, always)
	if got := schemaNames(reg); !slices.Equal(got, []string{host.FindToolsName}) {
		t.Errorf("a server that says defer: %v", got)
	}

	many1, many2 := hostileMCP(t, "many1"), hostileMCP(t, "many2")
	many1.Env = map[string]string{"MCPSERVER_TOOLS": "60,1"}
	many2.Env = map[string]string{"MCPSERVER_TOOLS": "60,1"}
	many2.Prefix = "m2"
	reg = loadMCP(t, &host.Options{CacheDir: host.NoCache, DeferTokens: 1 << 20}, many1, many2)
	if got := schemaNames(reg); !slices.Equal(got, []string{host.FindToolsName}) {
		t.Errorf("%d tools of a few tokens each: the request offers %d tools", len(reg.ToolNames())-1, len(got))
	}
	// Disabling tools brings them under 128: the rest are offered.
	if err := reg.Disable("mcp:many2"); err != nil {
		t.Fatal(err)
	}
	if got, want := schemaNames(reg), len(toolsOf(reg, "many1")); slices.Contains(got, host.FindToolsName) || len(got) != want {
		t.Errorf("%d tools left: the request offers %d: %v", want, len(got), got)
	}
}
