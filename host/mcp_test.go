package host_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// markVar marks the processes of one test's MCP servers, so that the
// test finds them (serverPIDs) among those of the tests running beside it.
const markVar = "AGENTHOST_TEST_MARK"

// marked gives srv a mark of its own, and returns it.
func marked(t *testing.T, srv *host.MCPServer) string {
	t.Helper()
	mark := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	if srv.Env == nil {
		srv.Env = map[string]string{}
	}
	srv.Env[markVar] = mark
	return mark
}

// serverPIDs lists the live processes whose environment holds mark.
func serverPIDs(t *testing.T, mark string) []int {
	t.Helper()
	return plugintest.Processes(t, markVar+"="+mark)
}

// onePID is the one process marked mark.
func onePID(t *testing.T, mark string) int {
	t.Helper()
	var pids []int
	eventually(t, "one server process runs", func() bool {
		pids = serverPIDs(t, mark)
		return len(pids) == 1
	})
	return pids[0]
}

// hostileMCP is host/testdata/mcpserver, an MCP server over stdio whose
// tools misbehave on request.
func hostileMCP(t *testing.T, name string) host.MCPServer {
	t.Helper()
	return host.MCPServer{Name: name, Command: plugintest.Binary(t, "./host/testdata/mcpserver")}
}

// everything is @modelcontextprotocol/server-everything over stdio, as a
// user would configure it: its sandbox lets it read its own package, which
// its arguments name, and nothing else is granted.
func everything(t testing.TB) host.MCPServer {
	t.Helper()
	cmd, args := mcptest.Everything(t)
	return host.MCPServer{Name: "everything", Command: cmd, Args: args}
}

func readGrant(paths ...string) host.Grant {
	return host.Grant{Permissions: sdk.Permissions{Read: paths}}
}

// loadMCP builds a registry of the servers alone (an empty plugins
// directory), closed when the test ends.
func loadMCP(t *testing.T, opts *host.Options, servers ...host.MCPServer) *host.ToolRegistry {
	t.Helper()
	if opts == nil {
		opts = &host.Options{}
	}
	opts.MCPServers = servers
	return load(t, t.TempDir(), opts)
}

func report(t *testing.T, reg *host.ToolRegistry, server string) host.SourceReport {
	t.Helper()
	for _, r := range reg.Plugins() {
		if r.MCP == server {
			return r
		}
	}
	t.Fatalf("no report of the MCP server %s in %+v", server, reg.Plugins())
	return host.SourceReport{}
}

func TestMCPEverythingOverStdio(t *testing.T) {
	// Not parallel: it sets a secret in the host's environment.
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	srv := everything(t)
	mark := marked(t, &srv)
	reg := loadMCP(t, nil, srv)
	rep := report(t, reg, "everything")
	if rep.Err != nil || rep.Path != "mcp:everything" || !slices.Contains(rep.Tools, "echo") || !slices.Contains(rep.Tools, "get-tiny-image") {
		t.Fatalf("report = %+v", rep)
	}
	for _, info := range reg.Tools() {
		if info.Plugin != "mcp:everything" {
			t.Errorf("%s is served by %q", info.Name, info.Plugin)
		}
	}
	if got := call(t, reg, "echo", `{"message":"hello"}`); got != "Echo: hello" {
		t.Errorf("echo = %q", got)
	}
	img := call(t, reg, "get-tiny-image", `{}`)
	if !strings.Contains(img, "[image: ") || !strings.Contains(img, "image/png]") {
		t.Errorf("get-tiny-image = %q", img)
	}
	// The server's environment: the mark passed in its env, no secret
	// of the host's.
	env := call(t, reg, "get-env", `{}`)
	if !strings.Contains(env, mark) || strings.Contains(env, "sk-must-not-leak") {
		t.Errorf("get-env = %.300q", env)
	}
	// Arguments that do not match the server's schema never reach it.
	if got := reg.Execute(t.Context(), "get-sum", []byte(`{"a":"one","b":2}`)); !strings.HasPrefix(got, "Error executing get-sum: ") {
		t.Errorf("get-sum with a string = %q", got)
	}
	if got := call(t, reg, "get-sum", `{"a":1,"b":2}`); !strings.Contains(got, "3") {
		t.Errorf("get-sum = %q", got)
	}
}

func TestMCPFilesystemOverStdio(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("swordfish\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args := mcptest.Filesystem(t, root)
	reg := loadMCP(t, &host.Options{Roots: []string{root}},
		host.MCPServer{Name: "filesystem", Command: cmd, Args: args})
	if rep := report(t, reg, "filesystem"); rep.Err != nil {
		t.Fatalf("report = %+v", rep)
	}
	if got := call(t, reg, "list_directory", fmt.Sprintf(`{"path":%q}`, root)); !strings.Contains(got, "[FILE] notes.txt") {
		t.Errorf("list_directory = %q", got)
	}
	if got := call(t, reg, "read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "notes.txt"))); got != "swordfish\n" {
		t.Errorf("read_text_file = %q", got)
	}
	// The server's own refusal is an error result, in its words.
	got := reg.Execute(t.Context(), "read_text_file", []byte(`{"path":"/etc/hostname"}`))
	if !strings.HasPrefix(got, "Error executing read_text_file: ") || !strings.Contains(got, "denied") {
		t.Errorf("read outside its directories = %q", got)
	}
}

func TestMCPEverythingOverHTTP(t *testing.T) {
	upstream, err := url.Parse(mcptest.EverythingHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of it sees what the host sends.
	var auth sync.Map
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"), true)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	t.Setenv("AGENTHOST_TEST_TOKEN", "s3cret")
	srv := host.MCPServer{Name: "remote", URL: front.URL + upstream.Path, Headers: map[string]string{"Authorization": "Bearer ${AGENTHOST_TEST_TOKEN}"}}
	missing := host.MCPServer{Name: "unset", URL: front.URL + upstream.Path, Headers: map[string]string{"Authorization": "Bearer ${env:AGENTHOST_TEST_UNSET}"}}
	reg := loadMCP(t, nil, srv, missing)
	if rep := report(t, reg, "remote"); rep.Err != nil || !rep.Remote {
		t.Fatalf("report = %+v", rep)
	}
	if rep := report(t, reg, "unset"); rep.Err == nil || rep.Err.Error() != "headers.Authorization: the environment variable AGENTHOST_TEST_UNSET is not set" {
		t.Errorf("a header naming an unset variable: %+v", rep)
	}
	if got := call(t, reg, "echo", `{"message":"over http"}`); got != "Echo: over http" {
		t.Errorf("echo = %q", got)
	}
	if _, ok := auth.Load("Bearer s3cret"); !ok {
		t.Error("the server never got the Authorization header")
	}
}

func TestMCPCallPastItsDeadline(t *testing.T) {
	t.Parallel()
	srv := everything(t)
	mark := marked(t, &srv)
	reg := loadMCP(t, nil, srv)
	if err := reg.SetTimeout("trigger-long-running-operation", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pid := 0
	call(t, reg, "echo", `{"message":"up"}`)
	pid = onePID(t, mark)
	got := reg.Execute(t.Context(), "trigger-long-running-operation", []byte(`{"duration":30,"steps":1}`))
	if got != "Error executing trigger-long-running-operation: timed out after 300ms" {
		t.Errorf("a call past its deadline = %q", got)
	}
	// The server answers still: it is kept.
	if got := call(t, reg, "echo", `{"message":"still"}`); got != "Echo: still" {
		t.Errorf("echo after the deadline = %q", got)
	}
	if now := onePID(t, mark); now != pid {
		t.Errorf("the server was replaced (%d, then %d)", pid, now)
	}
}

func TestMCPServerKilledDuringACall(t *testing.T) {
	t.Parallel()
	srv := everything(t)
	mark := marked(t, &srv)
	reg := loadMCP(t, nil, srv)
	call(t, reg, "echo", `{"message":"up"}`)
	pid := onePID(t, mark)
	done := make(chan string, 1)
	go func() {
		done <- reg.Execute(t.Context(), "trigger-long-running-operation", []byte(`{"duration":30,"steps":1}`))
	}()
	// Once the call has the server, any moment will do.
	eventually(t, "the call reaches the server", func() bool { return reg.CallsInFlight("trigger-long-running-operation") > 0 })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "Error executing trigger-long-running-operation: MCP server everything exited during the call (signal: killed)" {
		t.Errorf("the call in flight = %q", got)
	}
	if got := call(t, reg, "echo", `{"message":"again"}`); got != "Echo: again" {
		t.Errorf("the next call = %q", got)
	}
	if now := onePID(t, mark); now == pid {
		t.Error("the killed server is still the one in use")
	}
}

func TestMCPResultsAndErrors(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, nil, hostileMCP(t, "hostile"))
	if got := reg.Execute(t.Context(), "fail", []byte(`{"text":"no such thing"}`)); got != "Error executing fail: no such thing" {
		t.Errorf("an error result = %q", got)
	}
	if got := call(t, reg, "image", `{}`); got != "a picture:\n[image: 68 bytes, image/png]" {
		t.Errorf("text and image = %q", got)
	}
}

func TestMCPCrashLoopDisablesTheServerUntilReset(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, nil, hostileMCP(t, "hostile"))
	var got string
	for range 6 {
		got = reg.Execute(t.Context(), "crash", nil)
	}
	if !strings.HasPrefix(got, "Error executing crash: MCP server hostile disabled after repeated crashes (last: ") {
		t.Fatalf("after six crashes = %q", got)
	}
	if got := reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)); !strings.Contains(got, "disabled after repeated crashes") {
		t.Errorf("another tool of the disabled server = %q", got)
	}
	if err := reg.Enable("echo"); err != nil {
		t.Fatal(err)
	}
	if got := call(t, reg, "echo", `{"text":"back"}`); got != "back" {
		t.Errorf("after Enable = %q", got)
	}
}

func TestMCPWarmCacheStartsNothing(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	srv := hostileMCP(t, "hostile")
	mark := marked(t, &srv)
	first := loadMCP(t, &host.Options{CacheDir: cache}, srv)
	if rep := report(t, first, "hostile"); rep.Cached || !rep.Launched {
		t.Fatalf("cold: %+v", rep)
	}
	first.Close()
	eventually(t, "the first host's server has stopped", func() bool { return len(serverPIDs(t, mark)) == 0 })

	reg := loadMCP(t, &host.Options{CacheDir: cache}, srv)
	if rep := report(t, reg, "hostile"); !rep.Cached || rep.Launched || !slices.Contains(rep.Tools, "echo") {
		t.Fatalf("warm: %+v", rep)
	}
	if pids := serverPIDs(t, mark); len(pids) != 0 {
		t.Fatalf("a warm cache started the server: %v", pids)
	}
	if got := call(t, reg, "echo", `{"text":"lazy"}`); got != "lazy" {
		t.Errorf("echo = %q", got)
	}
	onePID(t, mark)

	// Another environment variable is another server: described again.
	srv.Env["OTHER"] = "1"
	again := loadMCP(t, &host.Options{CacheDir: cache}, srv)
	if rep := report(t, again, "hostile"); rep.Cached {
		t.Errorf("a server with another variable came from the cache: %+v", rep)
	}
}

func TestMCPCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	srv := hostileMCP(t, "hostile")
	srv.Grant = host.Grant{Permissions: sdk.Permissions{Exec: true}}
	reg := loadMCP(t, nil, srv)
	child := atoi(t, call(t, reg, "spawn", `{}`))
	pid := atoi(t, call(t, reg, "pid", `{}`))
	reg.Close()
	waitGone(t, pid, "the server")
	waitGone(t, child, "the server's child")
	if got := reg.Execute(t.Context(), "echo", []byte(`{"text":"x"}`)); !strings.HasPrefix(got, "Error executing echo: MCP server hostile could not be started: the host is shutting down") {
		t.Errorf("a call after Close = %q", got)
	}
}

// mcpHelperEnv makes the test binary a host that loads the MCP server
// binary it names, and waits to be killed.
const mcpHelperEnv = "AGENTHOST_TEST_MCP_HELPER"

func runMCPHostHelper(bin string) {
	ctx := context.Background()
	reg, err := host.NewDefaultToolRegistry(ctx, os.TempDir(), &host.Options{Logger: hclog.NewNullLogger(), CacheDir: host.NoCache,
		MCPServers: []host.MCPServer{{Name: "hostile", Command: bin, Grant: host.Grant{Permissions: sdk.Permissions{Exec: true}}}}})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("SERVER", reg.Execute(ctx, "pid", nil))
	fmt.Println("ESCAPED", reg.Execute(ctx, "escape", nil))
	select {}
}

func TestMCPNoServerOutlivesAKilledHost(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mcpHelperEnv+"="+plugintest.Binary(t, "./host/testdata/mcpserver"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	got := readLines(t, bufio.NewScanner(stdout), "SERVER", "ESCAPED")
	pid, escaped := atoi(t, got["SERVER"]), atoi(t, got["ESCAPED"])
	if !alive(pid) || !alive(escaped) {
		t.Fatal("the server or its child in a session of its own is not running before the kill")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the MCP server of the killed host")
	// It left its process group and its session: its sandbox's PID
	// namespace ends it all the same.
	waitGone(t, escaped, "the child in a session of its own of the killed host's MCP server")
}

func TestMCPPrefixAndDuplicates(t *testing.T) {
	t.Parallel()
	// b's tools have a's names: they are registered as b_NAME. c sets
	// its prefix; d sets c's too, and its tools are refused: an explicit
	// prefix wins over the automatic one.
	b := hostileMCP(t, "b")
	c := hostileMCP(t, "c")
	c.Prefix = "c"
	d := hostileMCP(t, "d.x")
	d.Prefix = "c"
	e := hostileMCP(t, "my server")
	reg := loadMCP(t, nil, hostileMCP(t, "a"), b, c, d, e)
	rep := report(t, reg, "b")
	if rep.Err != nil || len(rep.Refused) > 0 || !slices.Contains(rep.Tools, "b_echo") || !slices.Contains(rep.Renamed, "echo as b_echo") {
		t.Fatalf("the second server with the same tools: %+v", rep)
	}
	if got := call(t, reg, "b_echo", `{"text":"renamed"}`); got != "renamed" {
		t.Errorf("b_echo = %q", got)
	}
	if got := call(t, reg, "c_echo", `{"text":"prefixed"}`); got != "prefixed" {
		t.Errorf("c_echo = %q", got)
	}
	if got := call(t, reg, "echo", `{"text":"first"}`); got != "first" {
		t.Errorf("echo = %q", got)
	}
	rep = report(t, reg, "d.x")
	if want := `tool already exists: c_echo is served by mcp:c; mcp:d.x may not take it (its "prefix" c makes names that are taken: another one registers its tools under others)`; !slices.Contains(rep.Refused, want) || len(rep.Renamed) > 0 {
		t.Errorf("refused = %q, renamed %q", rep.Refused, rep.Renamed)
	}
	// A name a tool name may not hold is made one.
	if got := call(t, reg, "my_server_echo", `{"text":"sanitized"}`); got != "sanitized" {
		t.Errorf("my_server_echo = %q", got)
	}
}

func TestMCPToolListChanges(t *testing.T) {
	t.Parallel()
	// No description cache: other tests change this server's list.
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, hostileMCP(t, "hostile"))
	var changes atomic.Int32
	stop := reg.OnChange(func() { changes.Add(1) })
	defer stop()
	call(t, reg, "grow", `{}`)
	eventually(t, "the new tool is registered", func() bool { return reg.HasTool("grown") })
	// The listeners are told once the registry has changed.
	eventually(t, "OnChange is called", func() bool { return changes.Load() > 0 })
	if got := call(t, reg, "grown", `{}`); got != "grown" {
		t.Errorf("grown = %q", got)
	}
}

// A server that sends a message over the 64 MiB + 1 MiB limit, or a line
// that never ends, is told to the model as what it did, not as a crash;
// the next call starts it again.
func TestMCPServerFloodIsNamed(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, nil, hostileMCP(t, "hostile"))
	for _, arg := range []string{"", "endless"} {
		got := reg.Execute(t.Context(), "flood", []byte(`{"text":"`+arg+`"}`))
		want := "Error executing flood: MCP server hostile sent a message longer than 68157440 bytes, which ended its session; the next call starts it again"
		if got != want {
			t.Errorf("flood %q = %q, want %q", arg, got, want)
		}
		if got := call(t, reg, "echo", `{"text":"after"}`); got != "after" {
			t.Errorf("echo after the flood = %q", got)
		}
	}
}

// A server whose list of tools could never load (more than 128 tools, or
// more bytes than 128 of the largest) is refused at the page that shows
// it, saying so; the other sources load.
func TestMCPToolListTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	many, large := hostileMCP(t, "many"), hostileMCP(t, "large")
	many.Env = map[string]string{"MCPSERVER_TOOLS": "200,10"}
	large.Env = map[string]string{"MCPSERVER_TOOLS": "30,1048576"}
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, many, large, hostileMCP(t, "fine"))
	for server, want := range map[string]string{
		"many":  "listing the tools failed: the server lists more than 128 tools",
		"large": "listing the tools failed: the server's tools take more than 11534336 bytes (names, descriptions and schemas), by page 2",
	} {
		if r := report(t, reg, server); r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("%s: %v, want %q", server, r.Err, want)
		}
	}
	if got := call(t, reg, "echo", `{"text":"ok"}`); got != "ok" {
		t.Errorf("the other server's echo = %q", got)
	}
}

// A tool the user disabled stays disabled when its server drops it and
// lists it again (tools/list_changed twice); one enabled stays enabled.
func TestMCPDisabledToolStaysDisabledWhenListedAgain(t *testing.T) {
	t.Parallel()
	// No description cache: other tests change this server's list.
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, hostileMCP(t, "hostile"))
	call(t, reg, "grow", `{}`)
	eventually(t, "the new tool is registered", func() bool { return reg.HasTool("grown") })
	if err := reg.Disable("grown"); err != nil {
		t.Fatal(err)
	}
	call(t, reg, "shrink", `{}`)
	eventually(t, "the tool is unregistered", func() bool { return !reg.HasTool("grown") })
	call(t, reg, "grow", `{}`)
	eventually(t, "the tool is registered again", func() bool { return reg.HasTool("grown") })
	if got := reg.Execute(t.Context(), "grown", []byte(`{}`)); got != "Error: tool not available: grown is disabled" {
		t.Errorf("the disabled tool, listed again: %q", got)
	}
	if reg.IsToolEnabled("grown") {
		t.Error("the disabled tool is enabled after it came back")
	}
	if err := reg.Enable("grown"); err != nil {
		t.Fatal(err)
	}
	call(t, reg, "shrink", `{}`)
	eventually(t, "the tool is unregistered", func() bool { return !reg.HasTool("grown") })
	call(t, reg, "grow", `{}`)
	eventually(t, "the tool is registered again", func() bool { return reg.HasTool("grown") })
	if got := call(t, reg, "grown", `{}`); got != "grown" {
		t.Errorf("the enabled tool, listed again: %q", got)
	}
}

func TestMCPServerIsSandboxed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("hunter2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mine.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	granted := hostileMCP(t, "granted")
	granted.Prefix = "g"
	granted.Grant = readGrant(outside)
	reg := loadMCP(t, &host.Options{Roots: []string{root}}, hostileMCP(t, "hostile"), granted)
	if got := call(t, reg, "read", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "mine.txt"))); got != "mine" {
		t.Errorf("a file in the roots = %q", got)
	}
	if got := reg.Execute(t.Context(), "read", []byte(fmt.Sprintf(`{"path":%q}`, secret))); !strings.Contains(got, "permission denied") {
		t.Errorf("a file outside the roots = %q", got)
	}
	if got := call(t, reg, "g_read", fmt.Sprintf(`{"path":%q}`, secret)); got != "hunter2" {
		t.Errorf("a granted file = %q", got)
	}
	// Programs are not run without exec.
	if got := reg.Execute(t.Context(), "spawn", nil); !strings.Contains(got, "permission denied") {
		t.Errorf("spawn without exec = %q", got)
	}
}

func TestMCPServersThatCannotStart(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, &host.Options{PluginStartTimeout: 2 * time.Second},
		host.MCPServer{Name: "missing", Command: "agenthost-no-such-command"},
		host.MCPServer{Name: "exits", Command: "/bin/sh", Args: []string{"-c", "echo 'fatal: no config' >&2; exit 4"}},
		host.MCPServer{Name: "silent", Command: "/bin/sh", Args: []string{"-c", "exec sleep 30"}, Grant: host.Grant{Permissions: sdk.Permissions{Exec: true}}},
	)
	cases := map[string]string{
		"missing": "the command agenthost-no-such-command is not found in PATH",
		"exits":   "it exited during start-up (exit status 4): fatal: no config; if it needs more than the sandbox allows, see agenthost plugins, and grant it in its configuration",
		"silent":  `it did not complete the MCP handshake within 2s ("startupTimeout" in its mcpServers entry, in seconds, gives it longer)`,
	}
	for name, want := range cases {
		if rep := report(t, reg, name); rep.Err == nil || rep.Err.Error() != want {
			t.Errorf("%s: %+v, want %q", name, rep, want)
		}
	}
}

func TestMCPServerThatDiesAtStartIsReportedWithItsError(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "server.js")
	reg := loadMCP(t, nil, host.MCPServer{Name: "broken", Command: mcptest.Node(t), Args: []string{missing}})
	rep := report(t, reg, "broken")
	if rep.Err == nil || !strings.HasPrefix(rep.Err.Error(), "it exited during start-up (exit status 1): Error: Cannot find module '"+missing+"'") {
		t.Errorf("report = %+v", rep)
	}
}
