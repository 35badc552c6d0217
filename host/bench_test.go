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
	// The same plugin without its sandbox: a call's cost must not change.
	b.Run("plugin-unsandboxed", func(b *testing.B) {
		reg, err := host.NewDefaultToolRegistry(b.Context(), benchPluginDir(b), &host.Options{Sandbox: host.SandboxOff})
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
	b.ResetTimer() // not the plugins' build and launch
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if out := reg.Execute(context.Background(), "echo", args); out != "hello" {
				b.Errorf("echo = %q", out)
				return
			}
		}
	})
}

// BenchmarkRegistryOverhead isolates the registry's own cost on a tool
// that does almost nothing (no arguments, a constant answer): "direct"
// calls the tool, "registry" calls it through Execute. The difference is
// the registry's lookup, its deadline, and the goroutine that lets a call
// that ignores its context be abandoned at the deadline.
func BenchmarkRegistryOverhead(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{}`)
	tool := sdk.NewTool(sdk.Info{Name: "nop"}, func(context.Context, struct{}) (string, error) { return "ok", nil })
	reg := host.NewToolRegistry(nil)
	if err := reg.Register(tool); err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out, err := tool.Execute(ctx, args); err != nil || out != "ok" {
				b.Fatalf("Execute = %q, %v", out, err)
			}
		}
	})
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out := reg.Execute(ctx, "nop", args); out != "ok" {
				b.Fatalf("Execute = %q", out)
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

// BenchmarkLaunch measures one plugin's launch, handshake and
// description, with its Landlock sandbox and without: the difference is
// what confining a plugin costs.
func BenchmarkLaunch(b *testing.B) {
	dir := b.TempDir()
	plugintest.Binaries(b, "./host/testdata/testplugin")
	installPlugin(b, dir, "test", "./host/testdata/testplugin")
	for _, c := range []struct {
		name string
		mode host.SandboxMode
	}{{"sandboxed", host.SandboxRequire}, {"unsandboxed", host.SandboxOff}} {
		b.Run(c.name, func(b *testing.B) {
			opts := &host.Options{Sandbox: c.mode, CacheDir: host.NoCache}
			for range b.N {
				reg, err := host.NewDefaultToolRegistry(b.Context(), dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				if reps := reg.Plugins(); len(reps) != 1 || reps[0].Err != nil {
					b.Fatalf("plugins: %+v", reps)
				}
				b.StopTimer() // the launch is measured, not the shutdown
				reg.Close()
				b.StartTimer()
			}
		})
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
