package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// The lifecycle benchmarks measure, in one run and side by side, what a
// call costs on each path and what the processes weigh:
//
//   - BenchmarkLifecycleLatency: per-call p50 and p99 of a direct
//     tool.Execute, an in-process tool through the registry, a plugin tool
//     through the registry, and a raw gRPC echo to another process (the
//     floor the plugin path stands on), the four taking turns in blocks
//     of calls so that the noise of a shared machine falls on all of them
//     alike.
//     x-raw is plugin/raw at p50; overhead-µs is the registry's own cost
//     for an in-process tool (registry p50 minus direct p50).
//   - BenchmarkLifecycleThroughput: calls/s with 1 and 8 callers, of a
//     plugin tool through the registry and of the raw gRPC echo, taking
//     turns.
//   - BenchmarkLifecycleMemory: RSS of an idle plugin process, and of a
//     host process whose plugins have all stopped.
//
// Run them with: go test -run '^$' -bench Lifecycle ./host/

// hostRSSEnv makes the test binary a host process that loads the plugins
// of the directory it names, calls one tool, closes the registry, and
// prints its own VmRSS: see hostRSSHelper. It is checked in init, before
// TestMain, so that main_test.go needs no hook.
const hostRSSEnv = "AGENTHOST_BENCH_HOST_RSS"

func init() {
	if dir := os.Getenv(hostRSSEnv); dir != "" {
		hostRSSHelper(dir)
		os.Exit(0)
	}
}

func hostRSSHelper(dir string) {
	ctx := context.Background()
	reg, err := host.NewDefaultToolRegistry(ctx, dir, &host.Options{Logger: hclog.NewNullLogger(), Roots: []string{dir}})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if out := reg.Execute(ctx, "list_dir", json.RawMessage(`{}`)); host.IsError(out) {
		fmt.Println("ERROR", out)
		os.Exit(1)
	}
	reg.Close()
	runtime.GC()
	time.Sleep(500 * time.Millisecond)
	rss, err := vmRSS(os.Getpid())
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("RSS", rss)
}

// lifecyclePlugins are the plugins the lifecycle benchmarks install.
var lifecyclePlugins = map[string]string{
	"fs":      "./plugins/fs",
	"session": "./plugins/session",
	"search":  "./plugins/search",
	"bash":    "./plugins/bash",
	"test":    "./host/testdata/testplugin",
}

// lifecycleDir returns a new plugins directory holding the named plugins.
func lifecycleDir(b *testing.B, names ...string) string {
	b.Helper()
	pkgs := []string{"./host/testdata/rawecho"}
	for _, p := range lifecyclePlugins {
		pkgs = append(pkgs, p)
	}
	plugintest.Binaries(b, pkgs...)
	dir := b.TempDir()
	for _, n := range names {
		installPlugin(b, dir, n, lifecyclePlugins[n])
	}
	return dir
}

func quietRegistry(b *testing.B, dir string) *host.ToolRegistry {
	b.Helper()
	reg, err := host.NewDefaultToolRegistry(b.Context(), dir, &host.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	return reg
}

// rawEcho starts the rawecho server and returns a client connected to it.
func rawEcho(b *testing.B) toolv1.ToolPluginClient {
	b.Helper()
	bin := plugintest.Binary(b, "./host/testdata/rawecho")
	// A short directory: a unix socket path has a small length limit.
	dir, err := os.MkdirTemp("", "rawecho")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	cmd := exec.Command(bin, sock)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close() // rawecho exits when its stdin closes
		cmd.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "READY\n" {
		b.Fatalf("rawecho: %q, %v", line, err)
	}
	conn, err := grpc.NewClient("unix:"+sock, append(wire.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return toolv1.NewToolPluginClient(conn)
}

// rawEchoCall starts the rawecho server and returns a call of it with
// args, which reports whether the answer came back right.
func rawEchoCall(b *testing.B, args json.RawMessage) func() bool {
	raw := rawEcho(b)
	req := &toolv1.ExecuteRequest{Tool: "echo", Arguments: args}
	return func() bool {
		resp, err := raw.Execute(context.Background(), req)
		return err == nil && resp.GetResult() == string(args)
	}
}

// warmUp makes a hundred calls of a path before it is measured: its
// connections, the plugin's launch if it is lazy, caches.
func warmUp(b *testing.B, name string, call func() bool) {
	b.Helper()
	for range 100 {
		if !call() {
			b.Fatalf("%s: the call failed", name)
		}
	}
}

func newEchoTool() sdk.Tool {
	return sdk.NewTool(sdk.Info{Name: "echo"}, func(_ context.Context, in echoInput) (string, error) { return in.Text, nil })
}

// percentile returns the q-quantile of sorted durations, in µs.
func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Microsecond)
}

func BenchmarkLifecycleLatency(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	tool := newEchoTool()
	inproc := host.NewToolRegistry(&host.Options{Logger: hclog.NewNullLogger()})
	if err := inproc.Register(newEchoTool()); err != nil {
		b.Fatal(err)
	}
	plug := quietRegistry(b, lifecycleDir(b, "test"))

	type path struct {
		name  string
		call  func() bool
		times []time.Duration
	}
	paths := []*path{
		{name: "direct", call: func() bool { out, err := tool.Execute(ctx, args); return err == nil && out == "hello" }},
		{name: "inproc", call: func() bool { return inproc.Execute(ctx, "echo", args) == "hello" }},
		{name: "plugin", call: func() bool { return plug.Execute(ctx, "echo", args) == "hello" }},
		{name: "raw", call: rawEchoCall(b, args)},
	}
	for _, p := range paths {
		warmUp(b, p.name, p.call)
		p.times = make([]time.Duration, 0, b.N)
	}
	// The paths take turns in blocks of calls, each call timed on its own:
	// within a block a path runs warm, as a tool called again and again
	// does, and the turns spread a shared machine's noise over all of
	// them. Every other round runs the paths in reverse order.
	const block = 64
	reversed := slices.Clone(paths)
	slices.Reverse(reversed)
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round, done = round+1, done+block {
		order := paths
		if round%2 == 1 {
			order = reversed
		}
		for _, p := range order {
			for range min(block, b.N-done) {
				start := time.Now()
				ok := p.call()
				p.times = append(p.times, time.Since(start))
				if !ok {
					b.Fatalf("%s: the call failed", p.name)
				}
			}
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	p99 := map[string]float64{}
	for _, p := range paths {
		sorted := slices.Sorted(slices.Values(p.times))
		p50[p.name], p99[p.name] = percentile(sorted, 0.50), percentile(sorted, 0.99)
		b.ReportMetric(p50[p.name], p.name+"-p50-µs")
		b.ReportMetric(p99[p.name], p.name+"-p99-µs")
	}
	b.ReportMetric(p50["plugin"]/p50["raw"], "x-raw")
	b.ReportMetric(p99["plugin"]/p99["raw"], "x-raw-p99")
	// The registry's own cost: an in-process tool through it, less the
	// same tool called directly.
	b.ReportMetric(p50["inproc"]-p50["direct"], "overhead-µs")
	// ns/op would be the sum of the four paths: meaningless here.
	b.ReportMetric(0, "ns/op")
}

func BenchmarkLifecycleThroughput(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	reg := quietRegistry(b, lifecycleDir(b, "test"))
	paths := []struct {
		name string
		call func() bool
	}{
		{"plugin", func() bool { return reg.Execute(ctx, "echo", args) == "hello" }},
		{"raw", rawEchoCall(b, args)},
	}
	for _, p := range paths {
		warmUp(b, p.name, p.call)
	}
	// burst makes n calls of one path from callers goroutines and returns
	// how long they took.
	burst := func(call func() bool, callers, n int) time.Duration {
		var (
			wg     sync.WaitGroup
			failed sync.Once
		)
		start := time.Now()
		for i := range callers {
			share := n / callers
			if i < n%callers {
				share++
			}
			wg.Go(func() {
				for range share {
					if !call() {
						failed.Do(func() { b.Error("a call failed") })
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	for _, callers := range []int{1, 8} {
		// The plugin and the raw echo take turns, in rounds, so that the
		// two rates see the same machine; x-raw is plugin/raw.
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			const rounds = 8
			var took [2]time.Duration
			calls := 0
			for round := range rounds {
				n := b.N / rounds
				if round < b.N%rounds {
					n++
				}
				for i, p := range paths {
					took[i] += burst(p.call, callers, n)
				}
				calls += n
			}
			rate := func(i int) float64 { return float64(calls) / took[i].Seconds() }
			b.ReportMetric(rate(0), "calls/s")
			b.ReportMetric(rate(1), "raw-calls/s")
			b.ReportMetric(rate(0)/rate(1), "x-raw")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func BenchmarkLifecycleMemory(b *testing.B) {
	dir := lifecycleDir(b, "fs", "session", "search", "bash")
	var pluginRSS, hostRSS int

	// An idle plugin: launch fs with one call, let it idle, read its RSS.
	reg, err := host.NewDefaultToolRegistry(b.Context(), dir, &host.Options{Logger: hclog.NewNullLogger(), Roots: []string{dir}})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	if out := reg.Execute(b.Context(), "list_dir", json.RawMessage(`{}`)); host.IsError(out) {
		b.Fatalf("list_dir: %s", out)
	}
	fs := filepath.Join(dir, host.PluginPrefix+"fs")
	time.Sleep(time.Second)
	pid, err := processOf(fs)

	if err != nil {
		b.Fatal(err)
	}
	if pluginRSS, err = vmRSS(pid); err != nil {
		b.Fatal(err)
	}
	reg.Close()

	// The host: this test binary re-executed as a host that loads the
	// four plugins, calls one tool, closes the registry and measures
	// itself; see hostRSSHelper.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hostRSSEnv+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("host helper: %v\n%s", err, out)
	}
	key, val, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if key != "RSS" {
		b.Fatalf("host helper: %s", out)
	}
	if hostRSS, err = strconv.Atoi(val); err != nil {
		b.Fatal(err)
	}

	for b.Loop() {
	}
	b.ReportMetric(float64(pluginRSS), "plugin-rss-KiB")
	b.ReportMetric(float64(hostRSS), "host-rss-KiB")
	b.ReportMetric(0, "ns/op")
}

// processOf returns the id of the one live process whose argv[0] is path.
func processOf(path string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if argv0 == path && alive(pid) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process runs %s", path)
}

// vmRSS returns the resident set size of process pid, in KiB.
func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
