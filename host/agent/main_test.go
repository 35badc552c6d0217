package agent_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
)

func TestMain(m *testing.M) {
	plugintest.IsolateCache()
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// Plugins of this tree the agent's tests run, by the name they are
// installed under.
var pluginPackages = map[string]string{
	"fs":      "./plugins/fs",
	"session": "./plugins/session",
	"test":    "./host/testdata/testplugin",
}

// pluginDir returns a new plugins directory holding the named plugins.
func pluginDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		pkg, ok := pluginPackages[n]
		if !ok {
			t.Fatalf("no plugin %q", n)
		}
		plugintest.Install(t, dir, host.PluginPrefix+n, pkg)
	}
	return dir
}

// startedMarker returns where the test plugin's sleep tool may write its
// "started" marker: in a fresh directory that it adds to opts.Roots, since
// the sandbox lets a plugin write only to the workspace roots.
func startedMarker(t *testing.T, opts *host.Options) string {
	t.Helper()
	root := t.TempDir()
	opts.Roots = append(opts.Roots, root)
	return filepath.Join(root, "started")
}

// eventually polls cond for up to ten seconds and fails the test if it
// never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, what, poll.Holds(cond))
}
