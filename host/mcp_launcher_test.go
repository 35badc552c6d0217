package host_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// processesNamed lists the live processes marked mark whose program is
// name.
func processesNamed(t *testing.T, mark, name string) []int {
	t.Helper()
	var out []int
	for _, pid := range serverPIDs(t, mark) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(comm)) == name {
			out = append(out, pid)
		}
	}
	return out
}

// TestLauncherFirstStartsThreeAtATime: launchers' first starts run three
// at a time, and each has the launchers' start timeout, not the
// registry's: a launcher (a script named npx that takes a second before
// it runs the server) under a registry whose start timeout is 300ms
// starts all the same.
func TestLauncherFirstStartsThreeAtATime(t *testing.T) {
	t.Parallel()
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	bin := t.TempDir()
	npx := filepath.Join(bin, "npx")
	plugintest.WriteFile(t, bin, "npx", "#!/bin/sh\nsleep 1\nexec \"$MCPSERVER\"\n")
	if err := os.Chmod(npx, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	var servers []host.MCPServer
	for i := range 7 {
		servers = append(servers, host.MCPServer{
			Name: fmt.Sprintf("s%d", i), Command: npx, Prefix: fmt.Sprintf("s%d", i),
			Env:   map[string]string{"MCPSERVER": server, markVar: mark},
			Grant: host.Grant{Permissions: sdk.Permissions{Read: []string{server}}},
		})
	}
	var (
		mu      sync.Mutex
		most    int
		stop    = make(chan struct{})
		stopped = make(chan struct{})
	)
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			n := len(processesNamed(t, mark, "sleep"))
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
		}
	}()
	start := time.Now()
	reg := loadMCP(t, &host.Options{CacheDir: t.TempDir(), PluginStartTimeout: 300 * time.Millisecond}, servers...)
	took := time.Since(start)
	close(stop)
	<-stopped
	for _, s := range servers {
		if rep := report(t, reg, s.Name); rep.Err != nil {
			t.Errorf("%s: %v", s.Name, rep.Err)
		}
	}
	if got := call(t, reg, "s6_echo", `{"text":"hi"}`); got != "hi" {
		t.Errorf("s6_echo = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 3 || most < 2 {
		t.Errorf("%d launchers started at once, want 3 at most (and more than one)", most)
	}
	// Seven starts of a second each, three at a time, take three rounds.
	if took < 2500*time.Millisecond {
		t.Errorf("seven starts took %v: not three at a time", took)
	}
}

// TestMCPFailedStartRemembered: a server that fails to start is
// remembered, with why and until when: the next loads skip it without
// starting it; an entry changed in any way, or an eager host, starts it
// again, the second failure in a row waiting twice as long; once it
// starts, it is forgotten.
func TestMCPFailedStartRemembered(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	entry := filepath.Join(mcptest.Dir(t), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	mcptest.Everything(t)
	// It fails, counting its starts, until a file says it may serve.
	script := fmt.Sprintf(`const fs = require("fs");
fs.appendFileSync(%q, "x");
if (!fs.existsSync(%q)) { console.error("Error: Failed to launch the browser process!"); process.exit(1) }
import(%q);`, filepath.Join(work, "starts"), filepath.Join(work, "ok"), entry)
	srv := host.MCPServer{Name: "browser", Command: mcptest.Node(t), Args: []string{"-e", script, "stdio"},
		Env: map[string]string{"MODE": "a"},
		Grant: host.Grant{Permissions: sdk.Permissions{Write: []string{work},
			Read: []string{filepath.Join(mcptest.Dir(t), "node_modules")}}}}
	starts := func() int {
		data, _ := os.ReadFile(filepath.Join(work, "starts"))
		return len(data)
	}
	cache := t.TempDir()
	loadOnce := func(eager bool, s host.MCPServer) (host.SourceReport, time.Duration) {
		start := time.Now()
		reg := loadMCP(t, &host.Options{CacheDir: cache, Eager: eager}, s)
		took := time.Since(start)
		rep := report(t, reg, s.Name)
		reg.Close()
		return rep, took
	}

	rep, _ := loadOnce(false, srv)
	f, ok := errors.AsType[*host.StartFailure](rep.Err)
	if !ok || f.Remembered || f.Failures != 1 || !strings.Contains(f.Reason, "Failed to launch the browser process") ||
		f.RetryAt.Sub(f.At) != time.Minute || rep.Err.Error() != f.Reason || starts() != 1 {
		t.Fatalf("the first failure: %v (%+v), %d starts", rep.Err, f, starts())
	}

	rep, took := loadOnce(false, srv)
	again, ok := errors.AsType[*host.StartFailure](rep.Err)
	if !ok || !again.Remembered || again.Reason != f.Reason || !again.At.Equal(f.At) || starts() != 1 ||
		!strings.Contains(rep.Err.Error(), "it failed to start") || !strings.Contains(rep.Err.Error(), "Failed to launch the browser process") {
		t.Fatalf("the next load: %v (%+v), %d starts", rep.Err, again, starts())
	}
	if took > 2*time.Second {
		t.Errorf("a remembered failure took %v to load", took)
	}

	// Another value in its environment: another entry, started at once.
	changed := srv
	changed.Env = map[string]string{"MODE": "b"}
	if rep, _ := loadOnce(false, changed); starts() != 2 || rep.Err == nil {
		t.Errorf("a changed entry: %v, %d starts", rep.Err, starts())
	}

	// An eager host starts it; its second failure in a row waits 2m.
	rep, _ = loadOnce(true, srv)
	if f, ok := errors.AsType[*host.StartFailure](rep.Err); !ok || f.Remembered || f.Failures != 2 || f.RetryAt.Sub(f.At) != 2*time.Minute || starts() != 3 {
		t.Errorf("eager: %v (%+v), %d starts", rep.Err, f, starts())
	}

	// Fixed, and started by an eager host: forgotten.
	plugintest.WriteFile(t, work, "ok", "")
	if rep, _ := loadOnce(true, srv); rep.Err != nil || !slices.Contains(rep.Tools, "echo") {
		t.Fatalf("once it serves: %v", rep.Err)
	}
	// What is remembered is the other entry's failure alone.
	files, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	var remembered []string
	for _, file := range files {
		if data, _ := os.ReadFile(file); strings.Contains(string(data), "mcp-start-failure:") {
			remembered = append(remembered, string(data))
		}
	}
	if len(remembered) != 1 || !strings.Contains(remembered[0], `"failures":1,`) {
		t.Errorf("a server that started is still remembered: %q", remembered)
	}
}

// TestMCPStartupTimeout: a server's StartupTimeout bounds its start,
// longer or shorter than the registry's, and the error of one that did
// not make it says how to give it longer.
func TestMCPStartupTimeout(t *testing.T) {
	t.Parallel()
	patient, hasty := everything(t), everything(t)
	patient.Name, patient.Prefix, hasty.Name = "patient", "p", "hasty"
	patient.StartupTimeout = 20 * time.Second
	hung := host.MCPServer{Name: "hung", Command: mcptest.Node(t), Args: []string{"-e", "setInterval(() => {}, 1000)"},
		StartupTimeout: 500 * time.Millisecond}
	start := time.Now()
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache, PluginStartTimeout: 100 * time.Millisecond}, patient, hasty, hung)
	if rep := report(t, reg, "patient"); rep.Err != nil {
		t.Errorf("a server with 20s to start: %v", rep.Err)
	}
	if err := report(t, reg, "hasty").Err; err == nil || !strings.Contains(err.Error(), "within 100ms") {
		t.Errorf("a server with the registry's 100ms: %v", err)
	}
	err := report(t, reg, "hung").Err
	if err == nil || !strings.Contains(err.Error(), "did not complete the MCP handshake within 500ms") || !strings.Contains(err.Error(), `"startupTimeout"`) {
		t.Errorf("a server that never answers: %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the load took %v", took)
	}
}
