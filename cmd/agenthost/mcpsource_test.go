package main

// A user's stories with MCP servers, end to end: the built agenthost,
// run as a user runs it, with a configuration file that names real server
// processes — the reference server everything as Claude Desktop's block
// writes it, and host/testdata/mcpserver, a server that misbehaves on
// request, behind agenthost mcp.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/internal/servetest"
)

// markVar marks the processes of one test's MCP server, so that the test
// finds them (serverPIDs) among those of the tests running beside it.
const markVar = "AGENTHOST_TEST_MARK"

// serverPIDs lists the live processes marked mark.
func serverPIDs(t *testing.T, mark string) []int {
	t.Helper()
	return plugintest.Processes(t, markVar+"="+mark)
}

// mcpUser is a user of agenthost: the built binary, a working directory
// (the default workspace root) with the configuration file in it, a
// plugins directory and a cache directory.
type mcpUser struct {
	exe, work, config, plugins, cache string
}

// newMCPUser builds agenthost and the hostile MCP server, and gives the
// user an empty plugins directory: the servers' tools are all there is.
func newMCPUser(t *testing.T) *mcpUser {
	t.Helper()
	pluginDir(t) // builds every binary the other tests need at once
	u := &mcpUser{work: t.TempDir(), plugins: t.TempDir(), cache: t.TempDir()}
	u.exe = plugintest.Install(t, t.TempDir(), "agenthost", "./cmd/agenthost")
	u.config = filepath.Join(u.work, "agenthost.json")
	return u
}

// writeConfig writes the user's configuration file.
func (u *mcpUser) writeConfig(t *testing.T, data string) {
	t.Helper()
	if err := os.WriteFile(u.config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// command is agenthost with the user's configuration, plugins and cache,
// started in the working directory.
func (u *mcpUser) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	args = append([]string{"--config", u.config, "--plugins", u.plugins, "--cache-dir", u.cache}, args...)
	cmd := exec.CommandContext(t.Context(), u.exe, args...)
	cmd.Dir = u.work
	cmd.Env = agenthostEnv()
	return cmd
}

// run runs agenthost to its end.
func (u *mcpUser) run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := u.command(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("agenthost %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// everythingConfig is Claude Desktop's block for the reference server
// everything, as a user pastes it, with the paths of this machine; key
// is the key of the command.
func everythingConfig(t *testing.T, key string) string {
	t.Helper()
	node, args := mcptest.Everything(t)
	return fmt.Sprintf(`{
  "mcpServers": {
    "everything": {
      %q: %q,
      "args": [%q, %q]
    }
  }
}
`, key, node, args[0], args[1])
}

// TestMCPSourceClaudeDesktopConfig: a user pastes Claude Desktop's block
// for the reference server everything, and agenthost lists, calls and
// describes its tools.
func TestMCPSourceClaudeDesktopConfig(t *testing.T) {
	t.Parallel()
	u := newMCPUser(t)
	// No grant: node runs the package from outside the workspace, and
	// the server's sandbox lets it read the node_modules its script is in.
	u.writeConfig(t, everythingConfig(t, "command"))

	// The first command lists the tools from the server, and caches them.
	r := u.run(t, "tools")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("tools: exit status %d\nstderr: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"NAME", "STATUS", "PLUGIN", "DESCRIPTION"}) {
		t.Errorf("tools: header %q", lines[0])
	}
	var echo []string
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[1] != "enabled" || fields[2] != "mcp:everything" {
			t.Errorf("tools: %q is not an enabled tool of mcp:everything", line)
		}
		if fields[0] == "echo" {
			echo = fields
		}
	}
	if want := strings.Fields("echo enabled mcp:everything Echoes back the input string"); !slices.Equal(echo, want) {
		t.Errorf("tools: echo is %q, want %q\n%s", echo, want, r.stdout)
	}

	bad := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(bad, []byte(everythingConfig(t, "comand")), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		config         string // the user's, unless set
		args           []string
		code           int
		stdout, stderr string
	}{
		"call": {
			args:   []string{"call", "echo", `{"message":"hi"}`},
			stdout: "Echo: hi\n",
		},
		"an error result": {
			args:   []string{"call", "get-resource-reference", `{"resourceId":0}`},
			code:   1,
			stderr: "Error executing get-resource-reference: Invalid resourceId: 0. Must be a finite positive integer.\n",
		},
		"plugins": {
			args: []string{"plugins"},
			stdout: "mcp:everything\n" +
				"  mcp-servers/everything 2.0.0 (MCP server over stdio)\n" +
				"  tools: " + strings.Join(toolColumn(lines[1:]), ", ") + "\n" +
				"  sandbox: enforced (" + sandbox.Probe().String() + ")\n" +
				wallsLine() +
				"    asked:   nothing beyond the defaults\n" +
				"    granted: roots read-write, read " + filepath.Join(mcptest.Dir(t), "node_modules") + "; the system read-only\n" +
				"    more: \"grant\" in its mcpServers entry, or --grant mcp:everything=ITEM,...\n",
		},
		"an unknown key": {
			config: bad,
			args:   []string{"tools"},
			code:   2,
			stderr: "agenthost: " + bad + `:4: mcpServers.everything: unknown key "comand" (want command, args, env, envFile, cwd, url, headers, type, prefix, timeout, startupTimeout, grant, disabled, tools, disabledTools, defer, oauth)` + "\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.config != "" {
				args = append([]string{"--config", tc.config}, args...)
			}
			r := u.run(t, args...)
			if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Errorf("agenthost %s:\nexit status %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
					strings.Join(tc.args, " "), r.code, tc.code, r.stdout, tc.stdout, r.stderr, tc.stderr)
			}
		})
	}
}

// toolColumn is the first column of the lines of agenthost tools.
func toolColumn(lines []string) []string {
	var names []string
	for _, line := range lines {
		names = append(names, strings.Fields(line)[0])
	}
	return names
}

// hostileConfig is a configuration that names host/testdata/mcpserver
// "hostile", its processes marked with mark.
func hostileConfig(t *testing.T, mark string) string {
	t.Helper()
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	return fmt.Sprintf(`{"mcpServers": {"hostile": {"command": %q, "env": {%q: %q}}}}`, server, markVar, mark)
}

// newMark is a mark of the test's own.
func newMark(t *testing.T) string {
	return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

// TestMCPSourceGateway: agenthost mcp serves the tools of an MCP server
// beside the built-in plugins' to an MCP client, follows the server's
// list of tools, and outlives the server's crash.
func TestMCPSourceGateway(t *testing.T) {
	t.Parallel()
	u := newMCPUser(t)
	for _, name := range []string{"fs", "session"} {
		plugintest.Install(t, u.plugins, host.PluginPrefix+name, "./plugins/"+name)
	}
	mark := newMark(t)
	u.writeConfig(t, hostileConfig(t, mark))

	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cmd := u.command(t, "mcp")
	var stderr plugintest.Buffer
	cmd.Stderr = &stderr
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v\n%s", err, stderr.String())
		}
		// agenthost stops the server as it exits.
		poll.Eventually(t, 10*time.Second, "the server has stopped", func() error {
			if pids := serverPIDs(t, mark); len(pids) > 0 {
				return fmt.Errorf("server processes %v", pids)
			}
			return nil
		})
	}()

	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities %+v, want tools.listChanged", caps.Tools)
	}
	names := listTools(t, cs)
	for _, name := range []string{"echo", "pid", "fail", "crash", "sleep", "image", "read", "spawn", "grow", "read_file", "save_session_context"} {
		if !slices.Contains(names, name) {
			t.Errorf("tools/list lacks %s: %v", name, names)
		}
	}
	if slices.Contains(names, "grown") {
		t.Fatalf("grown is listed before grow: %v", names)
	}

	// grow adds a tool to the server: the client is told, and the list
	// has it.
	if got := servetest.Text(t, servetest.Call(t, cs, "grow", nil)); got != "grew" {
		t.Errorf("grow = %q", got)
	}
	waitTools(t, cs, changed, "grown listed", func(names []string) bool { return slices.Contains(names, "grown") })
	if got := servetest.Text(t, servetest.Call(t, cs, "grown", nil)); got != "grown" {
		t.Errorf("grown = %q", got)
	}

	// A crash mid-call is the call's error result; the next call starts
	// the server again.
	res := servetest.Call(t, cs, "crash", nil)
	if got, want := servetest.Text(t, res), "Error executing crash: MCP server hostile exited during the call (exit status 3)"; !res.IsError || got != want {
		t.Errorf("crash = %q (isError %v), want %q", got, res.IsError, want)
	}
	if res := servetest.Call(t, cs, "echo", map[string]any{"text": "after"}); res.IsError || servetest.Text(t, res) != "after" {
		t.Errorf("echo after the crash = %q (isError %v)", servetest.Text(t, res), res.IsError)
	}
	// The new process has not grown: the client is told, and grown is
	// gone from the list.
	waitTools(t, cs, changed, "grown gone", func(names []string) bool { return !slices.Contains(names, "grown") })
	if res := servetest.Call(t, cs, "grown", nil); !res.IsError || servetest.Text(t, res) != "Error: tool not found: grown" {
		t.Errorf("grown after the restart = %q (isError %v)", servetest.Text(t, res), res.IsError)
	}
}

// waitTools waits for notifications/tools/list_changed until the list
// the client is offered is what want accepts.
func waitTools(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, what string, want func([]string) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-changed:
			if names := listTools(t, cs); want(names) {
				return
			}
		case <-deadline:
			t.Fatalf("no notifications/tools/list_changed with %s: %v", what, listTools(t, cs))
		}
	}
}

// listTools is the sorted names of the tools the client is offered.
func listTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return servetest.ToolNames(res.Tools)
}

// TestMCPSourceWarmCache: once a server's tools are cached, listing them
// starts no server: not agenthost tools, nor agenthost mcp until a tool
// is called.
func TestMCPSourceWarmCache(t *testing.T) {
	t.Parallel()
	u := newMCPUser(t)
	mark := newMark(t)
	// The server is started through sh, which notes each start in a
	// file of the workspace: a start is seen even after agenthost has
	// stopped the server again.
	starts := filepath.Join(u.work, "starts")
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	u.writeConfig(t, fmt.Sprintf(`{"mcpServers": {"hostile": {
  "command": "/bin/sh",
  "args": ["-c", "echo >> starts; exec %s"],
  "env": {%q: %q},
  "grant": ["exec", "read:%s"]
}}}`, server, markVar, mark, filepath.Dir(server)))
	startCount := func() int {
		data, err := os.ReadFile(starts)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(data, []byte("\n"))
	}

	cold := u.run(t, "tools")
	if cold.code != 0 || !strings.Contains(cold.stdout, "mcp:hostile") || cold.stderr != "" {
		t.Fatalf("cold: exit status %d\n%s%s", cold.code, cold.stdout, cold.stderr)
	}
	if n := startCount(); n != 1 {
		t.Fatalf("cold: %d starts of the server, want 1", n)
	}
	if pids := serverPIDs(t, mark); len(pids) != 0 {
		t.Errorf("the server outlived agenthost tools: %v", pids)
	}

	warm := u.run(t, "tools")
	if warm.code != 0 || warm.stdout != cold.stdout || warm.stderr != "" {
		t.Errorf("warm: exit status %d\n%s\nwant\n%s\nstderr: %s", warm.code, warm.stdout, cold.stdout, warm.stderr)
	}
	if n := startCount(); n != 1 {
		t.Errorf("warm: the server was started again (%d starts)", n)
	}

	// The gateway offers the cached tools, and starts the server on the
	// first call.
	cmd := u.command(t, "mcp")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := listTools(t, cs); !slices.Contains(names, "echo") {
		t.Errorf("tools/list from the cache: %v", names)
	}
	if pids := serverPIDs(t, mark); len(pids) != 0 || startCount() != 1 {
		t.Errorf("the gateway started the server before a call: %v", pids)
	}
	pid, err := plugintest.HostPID(servetest.Text(t, servetest.Call(t, cs, "pid", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if pids := serverPIDs(t, mark); len(pids) != 1 || pids[0] != pid || startCount() != 2 {
		t.Errorf("after a call: the server's pid is %d, the marked processes %v, %d starts", pid, pids, startCount())
	}
}

// TestMCPServersWithoutAPluginsDirectory: MCP servers alone are a
// configuration; with no plugins directory found (none was named) the
// host serves their tools, and says so when none of them loads.
func TestMCPServersWithoutAPluginsDirectory(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {"hostile": {"command": %q}}}`, server)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "--config", cfg, "--cache-dir", "-", "call", "echo", `{"text":"alone"}`); r.code != 0 || r.stdout != "alone\n" {
		t.Errorf("exit status %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"gone": {"command": "agenthost-no-such-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "--config", cfg, "--cache-dir", "-", "call", "echo", `{}`)
	if want := "Error: tool not found: echo\nagenthost: none of the 1 MCP servers configured could be loaded (agenthost plugins says why)\n"; r.code != 1 || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("exit status %d, stderr %q, want it to end %q", r.code, r.stderr, want)
	}
}
