package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

func TestMain(m *testing.M) {
	// The plugins run with host.NoCache: no description cache to isolate.
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// fsPlugin is a registry holding the tools of a real fs plugin process,
// built from this tree.
type fsPlugin struct {
	t      *testing.T
	reg    *host.ToolRegistry
	binary string // the plugin's executable, installed for this test
}

// startPlugin starts the fs plugin in its own process with the workspace
// roots given; remove is enabled. The plugin stops when the test ends.
func startPlugin(t *testing.T, roots []string) *fsPlugin {
	t.Helper()
	dir := t.TempDir()
	binary := plugintest.Install(t, dir, "agenthost-plugin-fs", "./plugins/fs")
	p := startPluginIn(t, dir, roots)
	p.binary = binary
	return p
}

// startPluginIn starts the plugins of dir, which must serve the fs tools.
func startPluginIn(t *testing.T, dir string, roots []string) *fsPlugin {
	t.Helper()
	return startPluginWith(t, dir, roots, nil)
}

// startPluginWith is startPluginIn with grants to the plugin beyond its
// sandbox's defaults.
func startPluginWith(t *testing.T, dir string, roots []string, grants map[string]host.Grant) *fsPlugin {
	t.Helper()
	return startPluginMode(t, dir, roots, grants, host.SandboxAuto)
}

// startPluginMode is startPluginWith in a sandbox mode: SandboxOff for
// what a sandbox forbids (ptrace, root's capabilities).
func startPluginMode(t *testing.T, dir string, roots []string, grants map[string]host.Grant, mode host.SandboxMode) *fsPlugin {
	t.Helper()
	reg, err := host.NewDefaultToolRegistry(t.Context(), dir, &host.Options{
		Roots:    roots,
		CacheDir: host.NoCache,
		Eager:    true,
		Logger:   hclog.NewNullLogger(),
		Timeout:  time.Minute,
		Grants:   grants,
		Sandbox:  mode,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	if !reg.HasTool("write_file") {
		t.Fatalf("the fs plugin in %s did not load", filepath.Join(dir, "agenthost-plugin-fs"))
	}
	if err := reg.Enable("remove"); err != nil {
		t.Fatal(err)
	}
	return &fsPlugin{t: t, reg: reg}
}

// call runs a tool in the plugin process and returns what the model
// would read.
func (p *fsPlugin) call(name string, fields map[string]any) string {
	p.t.Helper()
	args, err := json.Marshal(fields)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.reg.Execute(p.t.Context(), name, args)
}

// A list of edits that doubles the text again and again (a→aa, with
// replace_all) is refused at the edit that would take it past edit_file's
// 10 MiB, in a real plugin process that stays up: nothing is written, the
// answer says why, and the next call works.
func TestEditFileGrowsNoPastItsLimit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "grow.txt")
	start := strings.Repeat("a", 1600)
	if err := os.WriteFile(path, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPlugin(t, []string{root})
	doublings := func(old string) []map[string]any {
		var edits []map[string]any
		for range 25 {
			edits = append(edits, map[string]any{"old_string": old, "new_string": old + old, "replace_all": true})
		}
		return edits
	}
	for _, c := range []struct {
		old, want string
	}{
		// Whole blocks: few replacements, the size doubling.
		{start, "edit 13 of 25 failed, so nothing was written (it applies to the text as edits 1-12 left it): the edit would make grow.txt 13107200 bytes, more than the 10485760 bytes (10 MiB) edit_file makes"},
		// Single letters: the replacements run out first.
		{"a", "the edits make more than 100000 replacements in grow.txt, edit_file's limit for one call"},
	} {
		if got := p.call("edit_file", map[string]any{"path": "grow.txt", "edits": doublings(c.old)}); !strings.Contains(got, c.want) {
			t.Errorf("25 doublings of %d bytes = %q, want %q", len(c.old), got, c.want)
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != start {
			t.Errorf("the file after the refused edits: %d bytes, %v; want it as it was", len(data), err)
		}
	}
	if got := p.call("edit_file", map[string]any{"path": "grow.txt", "old_string": start, "new_string": "b"}); !strings.HasPrefix(got, "Edited grow.txt") {
		t.Errorf("the next edit = %q", got)
	}
}
