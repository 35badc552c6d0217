package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// testBinary is the installed path of the test plugin in dir.
func testBinary(dir string) string { return filepath.Join(dir, host.PluginPrefix+"test") }

// copyTestPlugin installs the test plugin in a new directory as a copy of
// its own, not a link, so that the test may change it.
func copyTestPlugin(t *testing.T) string {
	t.Helper()
	shared := testBinary(pluginDir(t, "test"))
	dir := t.TempDir()
	in, err := os.Open(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(testBinary(dir), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pluginProcs lists the live processes the test started (see
// plugintest.StartedBy) that run the binary at path.
func pluginProcs(t *testing.T, path string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != path {
			continue
		}
		if plugintest.StartedBy(pid, os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// warmCache loads dir once with cacheDir, so that the cache holds its
// plugins' descriptions.
func warmCache(t *testing.T, dir, cacheDir string) {
	t.Helper()
	reg := load(t, dir, &host.Options{CacheDir: cacheDir})
	for _, rep := range reg.Plugins() {
		if !rep.Launched || rep.Cached {
			t.Fatalf("cold cache: report %+v, want Launched and not Cached", rep)
		}
	}
	reg.Close()
}

func onlyReport(t *testing.T, reg *host.ToolRegistry) host.SourceReport {
	t.Helper()
	reps := reg.Plugins()
	if len(reps) != 1 || reps[0].Err != nil {
		t.Fatalf("reports = %+v, want one plugin loaded", reps)
	}
	return reps[0]
}

// closeWithin closes reg and fails the test unless Close returns within
// limit.
func closeWithin(t *testing.T, reg *host.ToolRegistry, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() {
		reg.Close()
		close(done)
	}()
	select {
	case <-done:
		t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(limit):
		t.Fatalf("Close did not return within %s", limit)
	}
}

func TestDescriptionCacheHitLaunchesNothing(t *testing.T) {
	t.Parallel()
	dir, cacheDir := pluginDir(t, "test"), t.TempDir()
	warmCache(t, dir, cacheDir)

	reg := load(t, dir, &host.Options{CacheDir: cacheDir})
	rep := onlyReport(t, reg)
	if rep.Launched || !rep.Cached {
		t.Errorf("warm cache: report %+v, want Cached and not Launched", rep)
	}
	if rep.Name != "agenthost-plugin-test" || len(rep.Tools) == 0 || rep.ProtocolMinor == 0 {
		t.Errorf("warm cache: report %+v lacks the description", rep)
	}
	if !reg.HasTool("echo") || reg.IsToolEnabled("danger") {
		t.Errorf("tools from the cache: %v (danger enabled: %v)", reg.ToolNames(), reg.IsToolEnabled("danger"))
	}
	if procs := pluginProcs(t, testBinary(dir)); len(procs) != 0 {
		t.Errorf("plugin processes after a warm load: %v, want none", procs)
	}

	// Lazy start: the first call starts it.
	pid := atoi(t, call(t, reg, "pid", `{}`))
	if procs := pluginProcs(t, testBinary(dir)); len(procs) != 1 || procs[0] != pid {
		t.Errorf("plugin processes after the first call: %v, want [%d]", procs, pid)
	}
	if got := call(t, reg, "echo", `{"text":"hi"}`); got != "hi" {
		t.Errorf("echo = %q", got)
	}
}

func TestDescriptionCacheMissOnAChangedBinary(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, path string){
		"bytes appended": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("rebuilt")
			f.Close()
		},
		"same size and mtime, other content": func(t *testing.T, path string) {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The last byte belongs to no section that runs.
			f.WriteAt([]byte{^lastByte(t, path)}, info.Size()-1)
			f.Close()
			os.Chtimes(path, info.ModTime(), info.ModTime())
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, cacheDir := copyTestPlugin(t), t.TempDir()
			// Trailing bytes that the changes may touch.
			f, _ := os.OpenFile(testBinary(dir), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("padding")
			f.Close()
			warmCache(t, dir, cacheDir)
			change(t, testBinary(dir))

			reg := load(t, dir, &host.Options{CacheDir: cacheDir})
			if rep := onlyReport(t, reg); !rep.Launched || rep.Cached {
				t.Errorf("changed binary: report %+v, want it described again", rep)
			}
			call(t, reg, "echo", `{"text":"x"}`)
			reg.Close()
			// And the new description is cached.
			reg = load(t, dir, &host.Options{CacheDir: cacheDir})
			if rep := onlyReport(t, reg); rep.Launched || !rep.Cached {
				t.Errorf("after describing it again: report %+v, want Cached", rep)
			}
		})
	}
}

func lastByte(t *testing.T, path string) byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data[len(data)-1]
}

func TestCorruptedCacheFileIsIgnoredAndRewritten(t *testing.T) {
	t.Parallel()
	dir, cacheDir := pluginDir(t, "test"), t.TempDir()
	warmCache(t, dir, cacheDir)
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*"))
	if len(files) == 0 {
		t.Fatal("the cache directory is empty")
	}
	for _, f := range files {
		if err := os.WriteFile(f, []byte(`{"path": "garbage`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg := load(t, dir, &host.Options{CacheDir: cacheDir})
	if rep := onlyReport(t, reg); !rep.Launched || rep.Cached {
		t.Errorf("corrupted cache: report %+v, want the plugin described again", rep)
	}
	call(t, reg, "echo", `{"text":"x"}`)
	reg.Close()
	reg = load(t, dir, &host.Options{CacheDir: cacheDir})
	if rep := onlyReport(t, reg); rep.Launched || !rep.Cached {
		t.Errorf("after the rewrite: report %+v, want Cached", rep)
	}
}

func TestNoCacheDescribesEveryTime(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	for range 2 {
		reg := load(t, dir, &host.Options{CacheDir: host.NoCache})
		if rep := onlyReport(t, reg); !rep.Launched || rep.Cached {
			t.Errorf("no cache: report %+v", rep)
		}
		reg.Close()
	}
}

func TestEagerStartsEveryPluginAtLoad(t *testing.T) {
	t.Parallel()
	dir, cacheDir := pluginDir(t, "test"), t.TempDir()
	warmCache(t, dir, cacheDir)
	reg := load(t, dir, &host.Options{CacheDir: cacheDir, Eager: true})
	if rep := onlyReport(t, reg); !rep.Launched {
		t.Errorf("eager: report %+v, want Launched", rep)
	}
	procs := pluginProcs(t, testBinary(dir))
	if len(procs) != 1 {
		t.Fatalf("plugin processes after an eager load: %v, want one", procs)
	}
	if pid := atoi(t, call(t, reg, "pid", `{}`)); pid != procs[0] {
		t.Errorf("pid = %d, want the process started at load, %d", pid, procs[0])
	}
}

func TestIdlePluginIsStoppedAndStartsAgain(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	reg := load(t, dir, &host.Options{CacheDir: t.TempDir(), IdleTimeout: 200 * time.Millisecond})
	// A call longer than the idle timeout keeps its plugin alive.
	if got := call(t, reg, "sleep", `{"millis":600}`); got != "slept" {
		t.Errorf("sleep = %q", got)
	}
	pid := atoi(t, call(t, reg, "pid", `{}`))
	waitGone(t, pid, "the idle plugin")
	next := atoi(t, call(t, reg, "pid", `{}`))
	if next == pid {
		t.Errorf("the plugin's pid after the idle stop is the old one, %d", pid)
	}
}

func TestConcurrentFirstCallsStartThePluginOnce(t *testing.T) {
	t.Parallel()
	dir, cacheDir := pluginDir(t, "test"), t.TempDir()
	warmCache(t, dir, cacheDir)
	reg := load(t, dir, &host.Options{CacheDir: cacheDir})
	if procs := pluginProcs(t, testBinary(dir)); len(procs) != 0 {
		t.Fatalf("plugin processes before the first call: %v", procs)
	}
	const n = 50
	pids := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			pids[i] = reg.Execute(t.Context(), "pid", nil)
		})
	}
	close(start)
	wg.Wait()
	for i, pid := range pids {
		if host.IsError(pid) || pid != pids[0] {
			t.Fatalf("call %d: pid %q, call 0: %q; want one process for all", i, pid, pids[0])
		}
	}
	if procs := pluginProcs(t, testBinary(dir)); len(procs) != 1 {
		t.Errorf("plugin processes: %v, want one", procs)
	}
}

func TestCrashLoopDisablesThePluginUntilReset(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), &host.Options{CacheDir: t.TempDir()})
	const crashed = "Error executing crash: plugin agenthost-plugin-test exited during the call (exit status 3)"
	const disabled = "Error executing echo: plugin agenthost-plugin-test disabled after repeated crashes (last: exited during a call (exit status 3))"
	crashLoop := func() {
		t.Helper()
		for i := range 5 {
			if got := reg.Execute(t.Context(), "crash", nil); got != crashed {
				t.Fatalf("crash %d = %q, want %q", i+1, got, crashed)
			}
		}
		for range 2 {
			if got := reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)); got != disabled {
				t.Fatalf("echo after 5 crashes = %q, want %q", got, disabled)
			}
		}
	}
	reenable := map[string]func() error{
		"ResetPlugin":  func() error { return reg.ResetPlugin("agenthost-plugin-test") },
		"Enable(echo)": func() error { return reg.Enable("echo") },
	}
	for _, how := range []string{"ResetPlugin", "Enable(echo)"} {
		crashLoop()
		if err := reenable[how](); err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if got := call(t, reg, "echo", `{"text":"back"}`); got != "back" {
			t.Errorf("echo after %s = %q", how, got)
		}
	}
	if err := reg.ResetPlugin("agenthost-plugin-nope"); err == nil {
		t.Error("ResetPlugin of an unknown plugin: no error")
	}
}

func TestStoppedPluginIsReplacedAfterItsDeadline(t *testing.T) {
	t.Parallel()
	opts := &host.Options{CacheDir: t.TempDir()}
	started := startedMarker(t, opts)
	reg := load(t, pluginDir(t, "test"), opts)
	pid := atoi(t, call(t, reg, "pid", `{}`))
	plugintest.KillAtEnd(t, pid)

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	result := make(chan string, 1)
	go func() {
		result <- reg.Execute(ctx, "sleep", fmt.Appendf(nil, `{"millis":30000,"started":%q}`, started))
	}()
	eventually(t, "the sleep has begun", func() bool { _, err := os.Stat(started); return err == nil })
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-result:
		if !strings.HasPrefix(got, "Error executing sleep: timed out after ") {
			t.Errorf("sleep = %q, want a timeout", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call to the stopped plugin did not end at its deadline")
	}
	waitGone(t, pid, "the stopped plugin")
	if next := atoi(t, call(t, reg, "pid", `{}`)); next == pid {
		t.Errorf("pid after the hang = %d, the old one", next)
	}
}

func TestCloseIsBoundedWithAStoppedPlugin(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), &host.Options{CacheDir: t.TempDir()})
	pid := atoi(t, call(t, reg, "pid", `{}`))
	plugintest.KillAtEnd(t, pid)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, reg, 10*time.Second)
	waitGone(t, pid, "the stopped plugin")
}

// A plugin with no call in flight is ended by killing its group, not by
// a graceful shutdown: when Close returns it has been reaped (it is not
// even a zombie), and the child it started goes with its group. It had
// no socket directory to leave behind: it serves on the host's
// connection.
func TestCloseLeavesNothingOfAnIdlePlugin(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), &host.Options{CacheDir: t.TempDir(), Grants: execGrant("test")})
	pid := atoi(t, call(t, reg, "pid", `{}`))
	child := atoi(t, call(t, reg, "spawn", `{}`))
	plugintest.KillAtEnd(t, child)
	servesOnTheHostsConnection(t, pid)
	closeWithin(t, reg, 10*time.Second)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin (pid %d) is still a process once Close returned (alive: %v): %v", pid, alive(pid), err)
	}
	waitGone(t, child, "the plugin's child")
}

// A plugin ended while it serves a call is shut down gracefully, which
// ends the call, and leaves nothing either.
func TestCloseDuringACallLeavesNothing(t *testing.T) {
	t.Parallel()
	opts := &host.Options{CacheDir: t.TempDir()}
	started := startedMarker(t, opts)
	reg := load(t, pluginDir(t, "test"), opts)
	pid := atoi(t, call(t, reg, "pid", `{}`))
	servesOnTheHostsConnection(t, pid)
	result := make(chan string, 1)
	go func() {
		result <- reg.Execute(context.Background(), "sleep", []byte(`{"millis":60000,"started":`+strconv.Quote(started)+`}`))
	}()
	eventually(t, "the sleep has begun", func() bool { _, err := os.Stat(started); return err == nil })
	closeWithin(t, reg, 10*time.Second)
	select {
	case got := <-result:
		if !host.IsError(got) {
			t.Errorf("the call cut by Close = %q, want an error", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end with Close")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin (pid %d) is still a process once Close returned: %v", pid, err)
	}
}

// servesOnTheHostsConnection checks that the plugin (pid) was given no
// socket directory, and the connection the host made.
func servesOnTheHostsConnection(t *testing.T, pid int) {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	fd := ""
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if dir, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
			t.Errorf("the plugin (pid %d) was given a socket directory, %s", pid, dir)
		}
		if v, ok := strings.CutPrefix(kv, "AGENTHOST_PLUGIN_CONN="); ok {
			fd = v
		}
	}
	if fd == "" {
		t.Errorf("no AGENTHOST_PLUGIN_CONN in the environment of the plugin (pid %d)", pid)
	}
}

func TestCloseIsBoundedWhenAGrandchildHoldsStderr(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), &host.Options{CacheDir: t.TempDir(), Grants: execGrant("test")})
	pid := atoi(t, call(t, reg, "pid", `{}`))
	grandchild := atoi(t, call(t, reg, "hold", `{}`))
	plugintest.KillAtEnd(t, grandchild)
	closeWithin(t, reg, 10*time.Second)
	waitGone(t, pid, "the plugin")
	if !alive(grandchild) {
		t.Log("the grandchild is gone already; the test proves less")
	}
}

func TestChaosKillDuringConcurrentCalls(t *testing.T) {
	t.Parallel()
	opts := &host.Options{CacheDir: t.TempDir()}
	started := startedMarker(t, opts)
	reg := load(t, pluginDir(t, "test"), opts)
	pid := atoi(t, call(t, reg, "pid", `{}`))

	const n = 100
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				results[i] = reg.Execute(t.Context(), "sleep", fmt.Appendf(nil, `{"millis":200,"started":%q}`, started))
			} else {
				results[i] = reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`))
			}
		})
	}
	// The kill comes while calls run.
	eventually(t, "a sleep has begun", func() bool { _, err := os.Stat(started); return err == nil })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls still running 30 s after the plugin was killed")
	}
	var ok, failed int
	for i, got := range results {
		switch {
		case got == "slept" || got == "x":
			ok++
		case host.IsError(got):
			failed++
		default:
			t.Errorf("call %d = %q", i, got)
		}
	}
	t.Logf("%d calls succeeded, %d failed", ok, failed)
	waitGone(t, pid, "the killed plugin")
	// A call may still meet the dead process before it has been reaped;
	// after one success, every call succeeds.
	eventually(t, "a call succeeds after the kill", func() bool {
		return reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)) == "x"
	})
	for range 5 {
		if got := call(t, reg, "echo", `{"text":"again"}`); got != "again" {
			t.Errorf("echo after the kill = %q", got)
		}
	}
	if next := atoi(t, call(t, reg, "pid", `{}`)); next == pid {
		t.Errorf("pid after the kill = %d, the old one", next)
	}
}
