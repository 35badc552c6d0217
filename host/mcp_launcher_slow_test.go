//go:build launchers

// Tests of launchers (npx) that install and start real packages: each
// takes seconds of npm's time, so make test leaves them to make
// test-launchers, which .ci/run runs.

package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestLauncherServersEmptyCache: ten MCP servers that npx runs, their npm
// caches empty, all start and answer, under a registry whose own start
// timeout no npx could meet. npx finds the packages installed in
// tests/mcp-servers, their working directory, from the committed lock
// file: the registry it is pointed at listens nowhere, so nothing is
// fetched.
func TestLauncherServersEmptyCache(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not installed")
	}
	t.Parallel()
	dir := mcptest.Dir(t)
	mcptest.Everything(t) // installed, or the test fails saying how
	served := t.TempDir()
	var servers []host.MCPServer
	for i := range 10 {
		s := host.MCPServer{Name: fmt.Sprintf("e%d", i), Command: "npx", Dir: dir, Prefix: fmt.Sprintf("e%d", i),
			Args: []string{"-y", "@modelcontextprotocol/server-everything", "stdio"},
			Env:  map[string]string{"npm_config_registry": "http://127.0.0.1:9/", "npm_config_update_notifier": "false"}}
		if i%2 == 1 {
			s.Name, s.Prefix = fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i)
			s.Args = []string{"-y", "@modelcontextprotocol/server-filesystem", served}
		}
		servers = append(servers, s)
	}
	cache := t.TempDir()
	reg := loadMCP(t, &host.Options{CacheDir: cache, PluginStartTimeout: 200 * time.Millisecond}, servers...)
	for _, s := range servers {
		if rep := report(t, reg, s.Name); rep.Err != nil {
			t.Fatalf("%s: %v", s.Name, rep.Err)
		}
		if npmCache, ours := host.NpxCacheOf(s, cache); !ours || !strings.HasPrefix(npmCache, cache) {
			t.Errorf("%s's npm cache is %s (the host's: %v)", s.Name, npmCache, ours)
		}
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			tool, args, want := s.Prefix+"_echo", `{"message":"hi"}`, "Echo: hi"
			if strings.HasPrefix(s.Name, "f") {
				tool, args, want = s.Prefix+"_list_allowed_directories", `{}`, served
			}
			if out := reg.Execute(t.Context(), tool, []byte(args)); host.IsError(out) || !strings.Contains(out, want) {
				t.Errorf("%s: %s", tool, out)
			}
		})
	}
	wg.Wait()
}

// TestNpxInstallCutShortRepaired: an npx install killed half way (the
// host, or npx, killed before it finished) leaves its lock and half its
// packages in the server's npm cache; the next start removes them and
// installs again, and the server answers. The packages come from a
// registry on 127.0.0.1 that serves tests/mcp-servers' installed
// packages (mcptest.Registry): nothing is fetched from the network.
func TestNpxInstallCutShortRepaired(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not installed")
	}
	t.Parallel()
	registry := mcptest.Registry(t)
	cache := t.TempDir()
	srv := host.MCPServer{Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything", "stdio"},
		Env: map[string]string{"npm_config_registry": registry, "npm_config_update_notifier": "false"}}
	npmCache, ours := host.NpxCacheOf(srv, cache)
	if !ours {
		t.Fatalf("the npm cache %s is not the host's", npmCache)
	}

	// An earlier start, killed while it installs, a minute ago.
	npx := exec.Command("npx", srv.Args...)
	npx.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "npm_config_cache=" + filepath.Dir(npmCache),
		"npm_config_registry=" + registry, "npm_config_update_notifier=false"}
	npx.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := npx.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := npx.Start(); err != nil {
		t.Fatal(err)
	}
	var installed []string
	deadline := time.Now().Add(20 * time.Second)
	for len(installed) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		installed, _ = filepath.Glob(filepath.Join(npmCache, "*", "node_modules", "*"))
	}
	_ = syscall.Kill(-npx.Process.Pid, syscall.SIGKILL)
	_ = npx.Wait()
	locks, _ := filepath.Glob(filepath.Join(npmCache, "*", "concurrency.lock"))
	done, _ := filepath.Glob(filepath.Join(npmCache, "*", "node_modules", ".package-lock.json"))
	if len(installed) < 3 || len(locks) != 1 || len(done) != 0 {
		t.Fatalf("the install was not cut short half way: %d packages, locks %q, complete %q", len(installed), locks, done)
	}

	minuteAgo := time.Now().Add(-time.Minute)
	for _, lock := range locks {
		if err := os.Chtimes(lock, minuteAgo, minuteAgo); err != nil {
			t.Fatal(err)
		}
	}
	var log plugintest.Buffer
	reg := loadMCP(t, &host.Options{CacheDir: cache, Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Warn})}, srv)
	if rep := report(t, reg, "everything"); rep.Err != nil {
		t.Fatalf("the start after the install cut short: %v\n%s", rep.Err, log.String())
	}
	if got := call(t, reg, "echo", `{"message":"again"}`); got != "Echo: again" {
		t.Errorf("echo = %q", got)
	}
	if !strings.Contains(log.String(), "removed what an npx install cut short left behind") || !strings.Contains(log.String(), locks[0][:len(locks[0])-len("/concurrency.lock")]) {
		t.Errorf("the log does not say what was removed:\n%s", log.String())
	}
	if done, _ := filepath.Glob(filepath.Join(npmCache, "*", "node_modules", ".package-lock.json")); len(done) != 1 {
		t.Errorf("the install was not made again: %q", done)
	}
}
