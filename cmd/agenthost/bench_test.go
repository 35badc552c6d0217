package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// builtinPlugins are the plugins a release ships, by installed name.
var builtinPlugins = map[string]string{
	"fs":      "./plugins/fs",
	"session": "./plugins/session",
	"search":  "./plugins/search",
	"bash":    "./plugins/bash",
}

// BenchmarkStartup runs the built agenthost binary with the four built-in
// plugins and compares, in one run and alternating call by call, what a
// command costs from exec to exit:
//
//   - version: agenthost --version, which loads no plugin: the floor.
//   - tools: agenthost tools with a warm description cache (primed by one
//     run beforehand), which should launch no plugin.
//   - cold: agenthost tools with a fresh, empty cache directory.
//   - eager: agenthost --eager tools with the warm cache, when the
//     binary has --eager: every plugin launches, in parallel.
//
// The cache directory is chosen with --cache-dir when the binary has that
// flag, and with XDG_CACHE_HOME (os.UserCacheDir) in any case. Each
// variant reports its median in ms; tools/version and cold/version are
// ratios of medians.
//
// Run it with: go test -run '^$' -bench Startup -benchtime 20x ./cmd/agenthost/
func BenchmarkStartup(b *testing.B) {
	pkgs := []string{"./cmd/agenthost"}
	for _, p := range builtinPlugins {
		pkgs = append(pkgs, p)
	}
	bins := plugintest.Binaries(b, pkgs...)
	bin := bins["./cmd/agenthost"]
	dir := b.TempDir()
	for name, pkg := range builtinPlugins {
		plugintest.Install(b, dir, host.PluginPrefix+name, pkg)
	}
	help, _ := exec.Command(bin, "--help").Output()
	hasFlag := func(f string) bool {
		return bytes.Contains(help, []byte(f+" ")) || bytes.Contains(help, []byte(f+"\n"))
	}
	hasCacheDir, hasEager := hasFlag("--cache-dir"), hasFlag("--eager")
	b.Logf("--cache-dir: %v, --eager: %v", hasCacheDir, hasEager)

	// tools runs "agenthost tools" with the cache in cacheDir.
	tools := func(cacheDir string, extra ...string) []string {
		args := []string{"--plugins", dir}
		if hasCacheDir {
			args = append(args, "--cache-dir", cacheDir)
		}
		return append(append(args, extra...), "tools")
	}
	type variant struct {
		name  string
		args  func() (args []string, cacheDir string)
		times []time.Duration
	}
	warm := b.TempDir()
	variants := []*variant{
		{name: "version", args: func() ([]string, string) { return []string{"--version"}, warm }},
		{name: "tools", args: func() ([]string, string) { return tools(warm), warm }},
		{name: "cold", args: func() ([]string, string) {
			d, err := os.MkdirTemp(b.TempDir(), "cache")
			if err != nil {
				b.Fatal(err)
			}
			return tools(d), d
		}},
	}
	if hasEager {
		variants = append(variants, &variant{name: "eager", args: func() ([]string, string) {
			return tools(warm, "--eager"), warm
		}})
	}
	exec1 := func(v *variant) time.Duration {
		args, cacheDir := v.args()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cacheDir, "AGENTHOST_PLUGINS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s: agenthost %s: %v\n%s", v.name, strings.Join(args, " "), err, stderr.Bytes())
		}
		if v.name != "version" && !bytes.Contains(out, []byte("read_file")) {
			b.Fatalf("%s: agenthost %s listed no read_file:\n%s", v.name, strings.Join(args, " "), out)
		}
		return d
	}
	// Warm the cache, and the page cache for every binary.
	for _, v := range variants {
		exec1(v)
	}
	for b.Loop() {
		for _, v := range variants {
			v.times = append(v.times, exec1(v))
		}
	}
	med := map[string]float64{}
	for _, v := range variants {
		slices.Sort(v.times)
		med[v.name] = float64(v.times[len(v.times)/2]) / float64(time.Millisecond)
		b.ReportMetric(med[v.name], v.name+"-ms")
	}
	b.ReportMetric(med["tools"]/med["version"], "tools/version")
	b.ReportMetric(med["cold"]/med["version"], "cold/version")
	// ns/op would be the sum of the variants: meaningless here.
	b.ReportMetric(0, "ns/op")
}
