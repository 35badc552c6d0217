package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/mcptest"
)

// TestPluginsShowsFailedStart: a user's server that cannot start is
// started by the first command only; the next commands skip it without
// starting it, and agenthost plugins says why it failed, when, when it is
// tried again and how to try now; --eager tries now.
func TestPluginsShowsFailedStart(t *testing.T) {
	t.Parallel()
	u := newMCPUser(t)
	work := t.TempDir()
	starts := filepath.Join(work, "starts")
	script := fmt.Sprintf(`require("fs").appendFileSync(%q, "x"); console.error("Error: Failed to launch the browser process!"); process.exit(1)`, starts)
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"browser": map[string]any{"command": mcptest.Node(t), "args": []string{"-e", script}, "grant": []string{"write:" + work}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	u.writeConfig(t, string(cfg))
	count := func() int {
		data, _ := os.ReadFile(starts)
		return len(data)
	}

	r := u.run(t, "tools")
	if !strings.Contains(r.stderr, "Failed to launch the browser process") || count() != 1 {
		t.Fatalf("tools: %d starts\nstderr: %s", count(), r.stderr)
	}
	r = u.run(t, "plugins")
	for _, want := range []string{
		"mcp:browser\n  not started: it failed to start before: it exited during start-up",
		"Failed to launch the browser process",
		"  failed: ", "), once\n",
		"  next try: ", "agenthost --eager plugins",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plugins does not say %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`next try: [0-9:]+ \(in (1m0s|5[0-9]s)\)`).MatchString(r.stdout) {
		t.Errorf("plugins does not say the next try is in a minute:\n%s", r.stdout)
	}
	if count() != 1 {
		t.Errorf("plugins started the failed server again: %d starts", count())
	}
	r = u.run(t, "--eager", "plugins")
	if !strings.Contains(r.stdout, "mcp:browser\n  failed to start: it exited during start-up") || !strings.Contains(r.stdout, "2 times in a row") ||
		!regexp.MustCompile(`\(in (2m0s|1m5[0-9]s)\)`).MatchString(r.stdout) || count() != 2 {
		t.Errorf("--eager plugins: %d starts\n%s", count(), r.stdout)
	}
}
