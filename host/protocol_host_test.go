package host_test

import (
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// A plugin written without go-plugin asks the host about the call under
// way as docs/PROTOCOL.md says: on the Host stream, which the host opens
// on the plugin's connection once per process and keeps open for the
// calls after.
func TestPluginWithoutGoPluginReadsHostStateOnTheHostStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"bare-host", "./host/testdata/bareplugin")
	tc := &liveContext{}
	reg := load(t, dir, &host.Options{ToolContext: tc, CacheDir: t.TempDir()})

	tc.set("be brief", "first", "")
	if got, want := call(t, reg, "bare_state", `{}`), "be brief|first"; got != want {
		t.Errorf("bare_state = %q, want %q", got, want)
	}
	tc.set("be thorough", "second", "")
	if got, want := call(t, reg, "bare_state", `{}`), "be thorough|second"; got != want {
		t.Errorf("bare_state the second time = %q, want %q", got, want)
	}
}
