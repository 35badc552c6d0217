package host_test

import (
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// A plugin written without go-plugin reaches the host's Host service as
// docs/PROTOCOL.md says: it serves go-plugin's broker, learns from the
// host's ConnInfo on the broker's stream where the service listens, dials
// it, and asks for the state of the call under way. The host announces
// the service once per process; the plugin keeps the address for the
// calls after.
func TestPluginWithoutGoPluginReadsHostStateThroughTheBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"bare-broker", "./host/testdata/bareplugin")
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
