package host_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// BenchmarkRunBash measures a run_bash command that does nothing, through
// the registry and the bash plugin in its sandbox, as a model's calls
// come: after a pause ("idle"), and back to back: what a command costs
// beyond its own work.
func BenchmarkRunBash(b *testing.B) {
	plugintest.Binaries(b, "./plugins/bash")
	dir := b.TempDir()
	installPlugin(b, dir, "bash", "./plugins/bash")
	reg, err := host.NewDefaultToolRegistry(b.Context(), dir, &host.Options{Roots: []string{b.TempDir()}, CacheDir: host.NoCache})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	if err := reg.Enable("run_bash"); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"command":"true"}`)
	run := func(b *testing.B) {
		var out struct {
			ExitCode int `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(reg.Execute(b.Context(), "run_bash", args)), &out); err != nil || out.ExitCode != 0 {
			b.Fatalf("run_bash true: %v, %+v", err, out)
		}
	}
	run(b) // the plugin's start
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			time.Sleep(100 * time.Millisecond)
			b.StartTimer()
			run(b)
		}
	})
	b.Run("back-to-back", func(b *testing.B) {
		for b.Loop() {
			run(b)
		}
	})
}
