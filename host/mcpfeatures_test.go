package host_test

import (
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
)

// TestMCPListingStartsOnlyWhoOffers: with the servers' tools from the
// description cache, listing prompts starts the server that declared
// prompts when it last ran, and not the one that declared tools alone;
// a prompt it adds is then got by its name, prefixed.
func TestMCPListingStartsOnlyWhoOffers(t *testing.T) {
	cache := t.TempDir()
	fsCmd, fsArgs := mcptest.Filesystem(t, t.TempDir())
	files := host.MCPServer{Name: "files", Command: fsCmd, Args: fsArgs}
	filesMark := marked(t, &files)
	hostile := hostileMCP(t, "hostile")
	hostile.Prefix = "h"
	hostileMark := marked(t, &hostile)
	// The first load lists the tools, and caches what each declared.
	loadMCP(t, &host.Options{CacheDir: cache}, files, hostile).Close()

	reg := loadMCP(t, &host.Options{CacheDir: cache}, files, hostile)
	if n := len(serverPIDs(t, filesMark)) + len(serverPIDs(t, hostileMark)); n != 0 {
		t.Fatalf("%d servers run with their tools cached", n)
	}
	if prompts := reg.MCPPrompts(t.Context()); len(prompts) != 0 {
		t.Errorf("prompts %v, want none yet", prompts)
	}
	onePID(t, hostileMark)
	if pids := serverPIDs(t, filesMark); len(pids) != 0 {
		t.Errorf("listing prompts started the server that has none")
	}

	call(t, reg, "h_offer", `{"text":"fresh"}`)
	got, err := reg.MCPGetPrompt(t.Context(), "h_fresh", nil)
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("the prompt h_fresh: %v, %v", got, err)
	}
	if _, err := reg.MCPGetPrompt(t.Context(), "fresh", nil); err == nil {
		t.Error("the prompt by the server's own name was got")
	}
}
