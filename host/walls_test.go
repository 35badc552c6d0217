package host_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// No plugin has a unix socket with a name: each serves on one end of a
// socket pair the host made. A process that found the name of a
// plugin's socket (in /proc/net/unix, as a hostile plugin did) could
// connect to it and call the plugin's tools with the host's voice: run
// shell commands through the bash plugin, or write through the fs
// plugin outside the roots a client had narrowed. There is nothing to
// find.
func TestNoPluginSocketHasAName(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "fs", "search", "session", "bash", "test")
	reg := load(t, dir, &host.Options{Roots: []string{t.TempDir()}, CacheDir: t.TempDir()})
	if err := reg.Enable("run_bash"); err != nil {
		t.Fatal(err)
	}
	// A call of each starts it.
	call(t, reg, "run_bash", `{"command":"true"}`)
	call(t, reg, "list_dir", `{"path":"."}`)
	call(t, reg, "search_files", `{"pattern":"*"}`)
	call(t, reg, "echo", `{"text":"x"}`)
	reg.Execute(t.Context(), "save_session_context", []byte(`{"context":"x"}`))
	var plugins int
	for _, e := range readProc(t) {
		exe, err := os.Readlink(filepath.Join("/proc", e, "exe"))
		pid, _ := strconv.Atoi(e)
		if err != nil || filepath.Dir(strings.TrimSuffix(exe, " (deleted)")) != dir || !plugintest.StartedBy(pid, os.Getpid()) {
			continue
		}
		plugins++
		for inode, name := range unixSockets(t, pid) {
			if name != "" {
				t.Errorf("the plugin %s (pid %d) holds the unix socket %s named %q", filepath.Base(exe), pid, inode, name)
			}
		}
	}
	if plugins < 5 {
		t.Fatalf("found %d plugin processes, want 5", plugins)
	}
}

// readProc lists the names in /proc that are process ids.
func readProc(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// unixSockets are the unix sockets process pid holds, by inode, with
// their names ("" for one without, "@..." for an abstract one), as its
// network namespace's /proc/PID/net/unix lists them.
func unixSockets(t *testing.T, pid int) map[string]string {
	t.Helper()
	held := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
			held[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(table), "\n") {
		// Num RefCount Protocol Flags Type St Inode [Path]
		f := strings.Fields(line)
		if len(f) >= 7 && held[f[6]] {
			out[f[6]] = strings.Join(f[7:], " ")
		}
	}
	return out
}

// An MCP server is walled in as a plugin is: without grants its
// datagrams stay in its own network, it makes no unix socket, and it
// sees none of the host's processes; each grant opens what it names.
func TestMCPServerWalls(t *testing.T) {
	t.Parallel()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
	sock, err := os.MkdirTemp("/tmp", "walls")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sock)
	l, err := net.Listen("unix", filepath.Join(sock, "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	received := func() bool {
		udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, _, err := udp.ReadFrom(make([]byte, 64))
		return err == nil
	}
	cmdline := fmt.Sprintf(`{"path":"/proc/%d/cmdline"}`, os.Getpid())
	dial := fmt.Sprintf(`{"path":%q}`, filepath.Join(sock, "engine.sock"))

	walled := hostileMCP(t, "walled")
	reg := loadMCP(t, nil, walled)
	if got := call(t, reg, "udp", `{"text":"`+port+`"}`); got != "sent" || received() {
		t.Errorf("a datagram without the network: %q, and it left the server's own network", got)
	}
	if got := call(t, reg, "dial", dial); !strings.Contains(got, "operation not permitted") {
		t.Errorf("dialling a unix socket without the grant: %q", got)
	}
	if got := reg.Execute(t.Context(), "read", []byte(cmdline)); !strings.Contains(got, "no such file or directory") {
		t.Errorf("reading the host's command line: %q", got)
	}

	granted := hostileMCP(t, "granted")
	granted.Grant = host.Grant{}
	granted.Grant.Network, granted.Grant.UnixSockets = true, true
	reg = loadMCP(t, nil, granted)
	if got := call(t, reg, "udp", `{"text":"`+port+`"}`); got != "sent" || !received() {
		t.Errorf("a datagram with the network: %q, but it did not arrive", got)
	}
	if got := call(t, reg, "dial", dial); got != "connected" {
		t.Errorf("dialling a unix socket with the grant: %q", got)
	}
}

// A temporary directory that cannot be used (run_bash filled it, or it
// is gone) stops no plugin: the host makes nothing of its own there.
func TestPluginsStartWhenTMPDIRIsUnusable(t *testing.T) {
	dir := pluginDir(t, "test")
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	reg := load(t, dir, &host.Options{CacheDir: t.TempDir()})
	if got := call(t, reg, "echo", `{"text":"still"}`); got != "still" {
		t.Errorf("echo = %q", got)
	}
}
