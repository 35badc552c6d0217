package host_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

type echoInput struct {
	Text string `json:"text"`
}

// BenchmarkExecute compares a call through a plugin process with the same
// tool registered in-process: the difference is the cost of the process
// boundary.
func BenchmarkExecute(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("plugin", func(b *testing.B) {
		reg, err := host.NewDefaultToolRegistry(b.Context(), benchPluginDir(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer reg.Close()
		benchCalls(b, reg, args)
	})
	b.Run("in-process", func(b *testing.B) {
		reg := host.NewToolRegistry(nil)
		echo := sdk.NewTool(sdk.Info{Name: "echo"}, func(_ context.Context, in echoInput) (string, error) { return in.Text, nil })
		if err := reg.Register(echo); err != nil {
			b.Fatal(err)
		}
		benchCalls(b, reg, args)
	})
}

func benchCalls(b *testing.B, reg *host.ToolRegistry, args json.RawMessage) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if out := reg.Execute(context.Background(), "echo", args); out != "hello" {
				b.Errorf("echo = %q", out)
				return
			}
		}
	})
}

// BenchmarkLoadPlugins measures start-up: launching, handshaking and
// describing the built-in plugins.
func BenchmarkLoadPlugins(b *testing.B) {
	dir := benchPluginDir(b)
	for b.Loop() {
		reg, err := host.NewDefaultToolRegistry(b.Context(), dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		reg.Close()
	}
}

func benchPluginDir(b *testing.B) string {
	plugins := map[string]string{"fs": "./plugins/fs", "session": "./plugins/session", "test": "./host/testdata/testplugin"}
	plugintest.Binaries(b, slices.Collect(maps.Values(plugins))...)
	dir := b.TempDir()
	for name, pkg := range plugins {
		installPlugin(b, dir, name, pkg)
	}
	return dir
}
