package host_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/sdk"
)

// The test binary doubles as a host process that tests can kill: see
// runHostHelper.
const helperEnv = "AGENTHOST_TEST_HOST_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		runHostHelper(dir)
		return
	}
	if bin := os.Getenv(mcpHelperEnv); bin != "" {
		runMCPHostHelper(bin)
		return
	}
	plugintest.IsolateCache()
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// runHostHelper loads the plugins in dir, has the test plugin start a
// child process and a grandchild in a session of its own, prints
// "PLUGIN <pid>", "CHILD <pid>" and "HELD <pid>", and waits to be killed.
func runHostHelper(dir string) {
	ctx := context.Background()
	reg, err := host.NewDefaultToolRegistry(ctx, dir, &host.Options{Logger: hclog.NewNullLogger(), Grants: execGrant("test")})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("PLUGIN", reg.Execute(ctx, "pid", nil))
	fmt.Println("CHILD", reg.Execute(ctx, "spawn", nil))
	fmt.Println("HELD", reg.Execute(ctx, "hold", nil))
	select {}
}

// execGrant lets the named plugin run programs, which the sandbox forbids
// by default.
func execGrant(plugin string) map[string]host.Grant {
	return map[string]host.Grant{plugin: {Permissions: sdk.Permissions{Exec: true}}}
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

// fsTools are the tools of agenthost-plugin-fs, in its order.
var fsTools = []string{"read_file", "read_multiple_files", "write_file", "list_dir", "file_info", "mkdir", "remove", "move", "edit_file"}

// Plugins of this tree, by the name they are installed under.
var pluginPackages = map[string]string{
	"fs":      "./plugins/fs",
	"session": "./plugins/session",
	"search":  "./plugins/search",
	"bash":    "./plugins/bash",
	"test":    "./host/testdata/testplugin",
	"zdup":    "./host/testdata/dupplugin",
	"exit":    "./host/testdata/exitplugin",
	"v2":      "./host/testdata/v2plugin",
	"clock":   "./examples/clock",
	"hostile": "./host/testdata/hostileplugin",
	"sandbox": "./host/testdata/sandboxplugin",
	// Not a plugin: an MCP server (see hostileMCP), built with them.
	"mcpserver": "./host/testdata/mcpserver",
}

// pluginDir returns a new plugins directory holding the named plugins.
func pluginDir(t *testing.T, names ...string) string {
	t.Helper()
	// Build them all at once the first time: one go build links faster
	// than one per plugin.
	plugintest.Binaries(t, slices.Collect(maps.Values(pluginPackages))...)
	dir := t.TempDir()
	for _, n := range names {
		pkg, ok := pluginPackages[n]
		if !ok {
			t.Fatalf("no plugin %q", n)
		}
		installPlugin(t, dir, n, pkg)
	}
	return dir
}

func installPlugin(t testing.TB, dir, name, pkg string) {
	t.Helper()
	plugintest.Install(t, dir, host.PluginPrefix+name, pkg)
}

// load builds a registry from dir and closes it when the test ends.
func load(t *testing.T, dir string, opts *host.Options) *host.ToolRegistry {
	t.Helper()
	if opts == nil {
		opts = &host.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Output: &plugintest.Buffer{}, Level: hclog.Warn})
	}
	reg, err := host.NewDefaultToolRegistry(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// call runs a tool that must succeed.
func call(t *testing.T, reg *host.ToolRegistry, name, args string) string {
	t.Helper()
	out := reg.Execute(t.Context(), name, []byte(args))
	if host.IsError(out) {
		t.Fatalf("%s(%s): %s", name, args, out)
	}
	return out
}

// atoi reads a number, or a process id as a test plugin answers it
// (plugintest.HostPID): the process's id in the test's namespace.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := plugintest.HostPID(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool { return plugintest.Alive(pid) }

// waitGone waits until pid is no longer a live process, and fails the test
// if it stays.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s (pid %d) has ended", what, pid), func() bool { return !alive(pid) })
}

// eventually polls cond for up to ten seconds and fails the test if it
// never holds (poll.Eventually).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, what, poll.Holds(cond))
}

// readLines reads "KEY value" lines from the helper until it has every key.
func readLines(t *testing.T, r *bufio.Scanner, keys ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for len(got) < len(keys) && r.Scan() {
		k, v, _ := strings.Cut(r.Text(), " ")
		got[k] = v
	}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			t.Fatalf("the helper did not report %s (got %v, err %v)", k, got, r.Err())
		}
	}
	return got
}

// processStatus says, for a failure, what the process pid is: its name,
// state, parent and pids in its namespaces.
func processStatus(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var keep []string
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, key := range []string{"Name:", "State:", "PPid:", "NSpid:"} {
			if strings.HasPrefix(line, key) {
				keep = append(keep, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return strings.Join(keep, ", ")
}

// processesStatus is processStatus of each of pids.
func processesStatus(pids []int) string {
	var out []string
	for _, pid := range pids {
		out = append(out, fmt.Sprintf("%d: %s", pid, processStatus(pid)))
	}
	return "[" + strings.Join(out, "; ") + "]"
}
