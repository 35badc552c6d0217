package mcpserve

import (
	"os"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

func TestMain(m *testing.M) {
	plugintest.IsolateCache()
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// pluginDir installs the built-in plugins fs and session and the test
// plugin.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	plugintest.Binaries(t, "./plugins/fs", "./plugins/session", "./host/testdata/testplugin")
	for name, pkg := range map[string]string{
		"fs":      "./plugins/fs",
		"session": "./plugins/session",
		"test":    "./host/testdata/testplugin",
	} {
		plugintest.Install(t, dir, host.PluginPrefix+name, pkg)
	}
	return dir
}
