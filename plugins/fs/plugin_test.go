package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
