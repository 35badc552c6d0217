package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/sandbox"
)

func TestDiscoveryRegistersEveryPluginTool(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "fs", "session", "test")
	// Things in the directory that are not plugins are ignored.
	for name, mode := range map[string]os.FileMode{
		"README.txt":                  0o644,
		host.PluginPrefix + "noexec":  0o644,
		"not-a-plugin-but-executable": 0o755,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 1\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, host.PluginPrefix+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := load(t, dir, nil)

	want := slices.Concat(fsTools, []string{
		"save_session_context", // agenthost-plugin-session
		"echo", "fail", "boom", "crash", "sleep", "pid", "spawn", "hold", "state", "stdout", "chatter", "big", "patient", "danger", "loose",
	})
	if got := reg.ToolNames(); !slices.Equal(got, want) {
		t.Errorf("ToolNames() = %v\nwant %v", got, want)
	}
	reports := reg.Plugins()
	if len(reports) != 3 {
		t.Fatalf("%d plugin reports, want 3: %+v", len(reports), reports)
	}
	for _, r := range reports {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Path, r.Err)
		}
		if r.Name != filepath.Base(r.Path) || r.Version == "" {
			t.Errorf("%s: name %q version %q", r.Path, r.Name, r.Version)
		}
	}
	for _, info := range reg.Tools() {
		if !strings.HasPrefix(info.Plugin, host.PluginPrefix) {
			t.Errorf("tool %s: plugin %q", info.Name, info.Plugin)
		}
	}
}

func TestPluginToolsExecute(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	reg := load(t, pluginDir(t, "fs", "test"), &host.Options{Roots: []string{work}})
	path := filepath.Join(work, "notes", "a.txt")

	if got, want := call(t, reg, "write_file", fmt.Sprintf(`{"path":%q,"content":"one\ntwo\nthree\n"}`, path)), "Wrote 14 bytes to notes/a.txt"; got != want {
		t.Errorf("write_file = %q, want %q", got, want)
	}
	if got := call(t, reg, "read_file", fmt.Sprintf(`{"path":%q,"offset":2,"limit":1}`, path)); got != "two\n" {
		t.Errorf("read_file = %q", got)
	}

	reg.SetTimeout("sleep", 300*time.Millisecond)
	cases := map[string]struct {
		tool, args, want string
	}{
		"unknown tool":       {"nope", `{}`, "Error: tool not found: nope"},
		"opt-in is disabled": {"danger", `{}`, "Error: tool not available: danger is disabled"},
		"tool error":         {"fail", `{"text":"it broke"}`, "Error executing fail: it broke"},
		"panic":              {"boom", `{}`, "Error executing boom: panic: kaboom"},
		"missing argument":   {"echo", `{}`, `Error executing echo: invalid arguments: required: missing properties: ["text"]`},
		"wrong type":         {"echo", `{"text":5}`, `Error executing echo: invalid arguments: text: type: 5 has type "integer", want "string"`},
		"not json":           {"echo", `{"text":`, "Error executing echo: invalid arguments: not valid JSON: unexpected end of JSON input"},
		// A tool that does not check its own arguments is checked by the
		// host, with the same texts.
		"unchecked, missing":  {"loose", `{}`, `Error executing loose: invalid arguments: required: missing properties: ["text"]`},
		"unchecked, extra":    {"loose", `{"text":"a","x":1}`, `Error executing loose: invalid arguments: unexpected additional properties ["x"]`},
		"unchecked, valid":    {"loose", `{"text":"a"}`, `ran with {"text":"a"}`},
		"deadline":            {"sleep", `{"millis":5000}`, "Error executing sleep: timed out after 300ms"},
		"deadline ignored":    {"sleep", `{"millis":2000,"ignore_cancel":true}`, "Error executing sleep: timed out after 300ms"},
		"tool's own deadline": {"patient", `{"millis":5000}`, "Error executing patient: timed out after 400ms"},
		"missing file":        {"read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(work, "nope")), "Error executing read_file: file not found: " + filepath.Join(work, "nope")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := reg.Execute(t.Context(), tc.tool, []byte(tc.args)); got != tc.want {
				t.Errorf("Execute(%s, %s)\n got %q\nwant %q", tc.tool, tc.args, got, tc.want)
			}
		})
	}
	// After all of that, the plugin still serves.
	if got := call(t, reg, "echo", `{"text":"still here"}`); got != "still here" {
		t.Errorf("echo = %q", got)
	}
}

func TestOptInToolTogglesLikeAnyOther(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), nil)
	if reg.IsToolEnabled("danger") {
		t.Fatal("the opt-in tool starts enabled")
	}
	if hasSchema(reg, "danger") {
		t.Error("a disabled tool is in EnabledSchemas")
	}
	if err := reg.Enable("danger"); err != nil {
		t.Fatal(err)
	}
	if got := call(t, reg, "danger", `{}`); got != "done" {
		t.Errorf("danger = %q", got)
	}
	if !hasSchema(reg, "danger") {
		t.Error("an enabled tool is missing from EnabledSchemas")
	}
	if err := reg.Disable("echo"); err != nil {
		t.Fatal(err)
	}
	if got := reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)); got != "Error: tool not available: echo is disabled" {
		t.Errorf("disabled echo = %q", got)
	}
}

func hasSchema(reg *host.ToolRegistry, name string) bool {
	return slices.ContainsFunc(reg.EnabledSchemas(), func(s host.ChatTool) bool { return s.Function.Name == name })
}

func TestPluginProcessIsIsolated(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), nil)
	pid := atoi(t, call(t, reg, "pid", `{}`))

	stdin, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
	if err != nil {
		t.Fatal(err)
	}
	if stdin != os.DevNull {
		t.Errorf("the plugin's stdin is %s, want %s", stdin, os.DevNull)
	}
	// Its sandbox's first process, its parent, leads the group.
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := sandbox.Parent(pid)
	if pgid != stage {
		t.Errorf("the plugin is in process group %d, not its sandbox's (%d)", pgid, stage)
	}
	if host, _ := sandbox.Parent(stage); host != os.Getpid() {
		t.Errorf("the plugin's sandbox (pid %d) was started by %d, not the host", stage, host)
	}
}

func TestPluginKilledBetweenCallsIsRestarted(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), nil)
	pid := atoi(t, call(t, reg, "pid", `{}`))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the killed plugin")

	// The call may race the host noticing the death: then it fails with a
	// message naming the plugin, and the next call must work.
	out := reg.Execute(t.Context(), "pid", []byte(`{}`))
	if host.IsError(out) {
		if !strings.HasPrefix(out, "Error executing pid: plugin agenthost-plugin-test ") {
			t.Fatalf("first call after the kill: %q", out)
		}
		out = call(t, reg, "pid", `{}`)
	}
	if newPID := atoi(t, out); newPID == pid {
		t.Errorf("the plugin answered from the killed process %d", pid)
	}
}

func TestPluginDyingDuringCall(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		tool, args string
		kill       bool
		want       string
	}{
		"killed with SIGKILL": {"sleep", `{"millis":10000,"started":"STARTED"}`, true, "Error executing sleep: plugin agenthost-plugin-test exited during the call (signal: killed)"},
		"exits by itself":     {"crash", `{}`, false, "Error executing crash: plugin agenthost-plugin-test exited during the call (exit status 3)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := &host.Options{}
			started := startedMarker(t, opts)
			reg := load(t, pluginDir(t, "test"), opts)
			pid := atoi(t, call(t, reg, "pid", `{}`))
			args := strings.Replace(tc.args, "STARTED", started, 1)
			done := make(chan string, 1)
			go func() { done <- reg.Execute(t.Context(), tc.tool, []byte(args)) }()
			if tc.kill {
				waitForFile(t, started)
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			if got := <-done; got != tc.want {
				t.Errorf("call in flight = %q\nwant %q", got, tc.want)
			}
			if newPID := atoi(t, call(t, reg, "pid", `{}`)); newPID == pid {
				t.Errorf("the next call was answered by the dead process %d", pid)
			}
			if got := call(t, reg, "echo", `{"text":"back"}`); got != "back" {
				t.Errorf("echo after recovery = %q", got)
			}
		})
	}
}

// waitForFile waits until a tool has created path: the sign that a call is
// in flight.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	eventually(t, path+" exists", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func TestBrokenPluginsAreSkipped(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "fs", "exit", "v2")
	scripts := map[string]string{
		// Prints something that is not a handshake, and leaves a child.
		// The child's command line carries the directory, for pgrep.
		host.PluginPrefix + "chatty": "#!/bin/sh\nsh -c 'sleep 300; :' \"$(dirname \"$0\")\" &\necho hello, I am not a plugin\nsleep 300\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logs := &plugintest.Buffer{}
	work := t.TempDir()
	reg := load(t, dir, &host.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn}),
		Roots:  []string{work},
	})

	if got, want := reg.ToolNames(), fsTools; !slices.Equal(got, want) {
		t.Errorf("ToolNames() = %v, want %v", got, want)
	}
	reasons := map[string]string{
		"chatty": `it is not an agenthost plugin: its first line of output was "hello, I am not a plugin"`,
		"exit":   "it exited during start-up (exit status 1): exitplugin: missing configuration",
		"v2":     "it speaks another protocol version: Plugin version: 2, Client versions: [1]",
	}
	for _, r := range reg.Plugins() {
		short := strings.TrimPrefix(filepath.Base(r.Path), host.PluginPrefix)
		want, broken := reasons[short]
		switch {
		case !broken && r.Err != nil:
			t.Errorf("%s was skipped: %v", short, r.Err)
		case broken && r.Err == nil:
			t.Errorf("%s loaded", short)
		case broken && r.Err.Error() != want:
			t.Errorf("%s skipped because\n%q\nwant %q", short, r.Err, want)
		}
	}
	// One warning per skipped binary, naming the file.
	for short := range reasons {
		path := filepath.Join(dir, host.PluginPrefix+short)
		if n := strings.Count(logs.String(), "skipping plugin: path="+path+" "); n != 1 {
			t.Errorf("%d warnings for %s in the log:\n%s", n, path, logs)
		}
	}
	if got := call(t, reg, "write_file", fmt.Sprintf(`{"path":%q,"content":"ok"}`, filepath.Join(work, "f"))); !strings.HasPrefix(got, "Wrote 2 bytes") {
		t.Errorf("write_file = %q", got)
	}
	// Nothing of the plugins keeps running once the registry is closed:
	// not even the child the chatty script left.
	reg.Close()
	eventually(t, "every process of the plugins has ended", func() bool {
		return exec.Command("pgrep", "-f", dir).Run() != nil
	})
}

func TestDuplicateToolNameAcrossPlugins(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test", "zdup"), nil)
	if !reg.HasTool("shout") {
		t.Error("the second plugin's other tool was not registered")
	}
	if got := call(t, reg, "echo", `{"text":"hi"}`); got != "hi" {
		t.Errorf("echo answered %q: the first registration must win", got)
	}
	var dup host.SourceReport
	for _, r := range reg.Plugins() {
		if strings.HasSuffix(r.Path, "zdup") {
			dup = r
		}
	}
	want := "tool already exists: echo is served by agenthost-plugin-test; agenthost-plugin-zdup may not take it (register it under a different name, such as echo_v2)"
	if len(dup.Refused) != 1 || dup.Refused[0] != want {
		t.Errorf("refused = %q, want [%q]", dup.Refused, want)
	}
	if !slices.Equal(dup.Tools, []string{"shout"}) {
		t.Errorf("registered from the second plugin: %v", dup.Tools)
	}
}

func TestLargeArgumentAndResult(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), nil)
	const size = 5 << 20
	text := strings.Repeat("0123456789abcdef", size/16)
	args, _ := json.Marshal(map[string]string{"text": text})
	if got := reg.Execute(t.Context(), "echo", args); got != text {
		t.Errorf("echo of %d bytes came back as %d bytes (%.60q…)", len(text), len(got), got)
	}
	if got := call(t, reg, "big", fmt.Sprintf(`{"n":%d}`, size)); len(got) != size {
		t.Errorf("big returned %d bytes, want %d", len(got), size)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "fs", "test"), &host.Options{ToolContext: &liveContext{prompt: "p"}})
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i := range 50 {
		wg.Go(func() {
			text := fmt.Sprintf("call %d", i)
			var got, want string
			switch i % 3 {
			case 0:
				got, want = reg.Execute(t.Context(), "echo", []byte(fmt.Sprintf(`{"text":%q}`, text))), text
			case 1:
				got, want = reg.Execute(t.Context(), "state", nil), `{"SystemPrompt":"p","SessionContext":"","SessionContextFilePath":""}`
			case 2:
				got, want = reg.Execute(t.Context(), "sleep", []byte(`{"millis":20}`)), "slept"
			}
			if got != want {
				errs <- fmt.Sprintf("call %d: %q, want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// liveContext is a ToolContext whose values change under the test's hand.
type liveContext struct {
	mu                sync.Mutex
	prompt, ctx, path string
}

func (c *liveContext) set(prompt, ctx, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompt, c.ctx, c.path = prompt, ctx, path
}

func (c *liveContext) SystemPrompt() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prompt
}

func (c *liveContext) SessionContext() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
}

func (c *liveContext) SessionContextFilePath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.path
}

func TestPluginReadsLiveHostState(t *testing.T) {
	t.Parallel()
	tc := &liveContext{}
	reg := load(t, pluginDir(t, "session", "test"), &host.Options{ToolContext: tc})
	file := filepath.Join(t.TempDir(), "session", "context.json")

	if got, want := reg.Execute(t.Context(), "save_session_context", []byte(`{"reason":"r"}`)), "Error executing save_session_context: no session context file path is configured"; got != want {
		t.Errorf("without a path: %q, want %q", got, want)
	}
	tc.set("be brief", "first", file)
	if got := call(t, reg, "save_session_context", `{"reason":"milestone"}`); got != "Session context saved to "+file {
		t.Errorf("save = %q", got)
	}
	tc.set("be thorough", "second", file)
	call(t, reg, "save_session_context", `{"reason":"handover"}`)

	var saved struct {
		SavedAt        time.Time `json:"saved_at"`
		Reason         string    `json:"reason"`
		SystemPrompt   string    `json:"system_prompt"`
		SessionContext string    `json:"session_context"`
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	if saved.Reason != "handover" || saved.SystemPrompt != "be thorough" || saved.SessionContext != "second" || saved.SavedAt.IsZero() {
		t.Errorf("saved %+v: not the state at the second call", saved)
	}

	none := load(t, pluginDir(t, "test"), nil)
	if got, want := none.Execute(t.Context(), "state", nil), "Error executing state: the host offers no agent state to this call"; got != want {
		t.Errorf("without a ToolContext: %q, want %q", got, want)
	}
}

func TestCloseStopsPluginsAndTheirChildren(t *testing.T) {
	t.Parallel()
	reg := load(t, pluginDir(t, "test"), &host.Options{Grants: execGrant("test")})
	pid := atoi(t, call(t, reg, "pid", `{}`))
	child := atoi(t, call(t, reg, "spawn", `{}`))
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the plugin")
	waitGone(t, child, "the plugin's child")
	if got := reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)); !strings.HasPrefix(got, "Error executing echo: plugin agenthost-plugin-test could not be started") {
		t.Errorf("call after Close = %q", got)
	}
}

func TestNoPluginOutlivesAKilledHost(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir() // the killed host's temporary directory
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+pluginDir(t, "test", "fs"), "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill before Wait: after a failure the helper would wait forever.
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	got := readLines(t, bufio.NewScanner(stdout), "PLUGIN", "CHILD", "HELD")
	pid, child, held := atoi(t, got["PLUGIN"]), atoi(t, got["CHILD"]), atoi(t, got["HELD"])
	if !alive(pid) || !alive(child) || !alive(held) {
		t.Fatal("the plugin, its child or its grandchild is not running before the kill")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the plugin of the killed host")
	waitGone(t, child, "the child of the killed host's plugin")
	// It left the plugin's process group and session: the sandbox's PID
	// namespace ends it all the same.
	waitGone(t, held, "the grandchild in a session of its own of the killed host's plugin")
	// Nor do the plugins' sockets: the plugins removed them.
	eventually(t, "the host's temporary directory is empty", func() bool {
		left, err := os.ReadDir(tmp)
		return err == nil && len(left) == 0
	})
}

func TestCallerCancellationReachesThePlugin(t *testing.T) {
	t.Parallel()
	opts := &host.Options{}
	started := startedMarker(t, opts)
	reg := load(t, pluginDir(t, "test"), opts)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan string, 1)
	go func() {
		done <- reg.Execute(ctx, "sleep", []byte(fmt.Sprintf(`{"millis":20000,"started":%q}`, started)))
	}()
	waitForFile(t, started)
	cancel()
	if got := <-done; got != "Error executing sleep: canceled" {
		t.Errorf("cancelled call = %q", got)
	}
	if got := call(t, reg, "echo", `{"text":"ok"}`); got != "ok" {
		t.Errorf("echo after a cancelled call = %q", got)
	}
}

func TestSilentPluginMissesTheHandshakeDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, host.PluginPrefix+"silent")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nsleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := load(t, dir, &host.Options{PluginStartTimeout: 300 * time.Millisecond, Grants: execGrant("silent")})
	reports := reg.Plugins()
	if len(reports) != 1 || reports[0].Err == nil || reports[0].Err.Error() != "it did not complete the handshake within 300ms" {
		t.Fatalf("reports = %+v", reports)
	}
	if out, err := exec.Command("pgrep", "-a", "-f", path).Output(); err == nil {
		t.Errorf("the silent plugin still runs:\n%s", out)
	}
}
