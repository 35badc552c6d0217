package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/sdk"
)

// These tests prove the plugin sandbox on the machine's own kernel, with
// real plugin processes: host/testdata/sandboxplugin, a third party that
// attacks its sandbox with raw system calls and reports the kernel's
// answer, and the built-ins. They set the host's HOME and TMPDIR, and
// one of them what the host believes of the kernel, so none of them runs
// in parallel with other tests; their subtests run in parallel with each
// other.

// What an attack answers: the text of the errno, or "ok".
const (
	allowed      = "ok"
	denied       = "permission denied"       // EACCES: a path, a TCP port
	notPermitted = "operation not permitted" // EPERM: the system call filter, a Landlock scope
	refused      = "connection refused"      // in a network of its own, nothing listens
	noProcess    = "no such process"         // in a PID namespace of its own, the host is not there
	noFile       = "no such file or directory"
	noMemory     = "cannot allocate memory"
)

// sandboxDeclared is what the sandboxplugin declares it needs.
var sandboxDeclared = sdk.Permissions{
	Roots:   sdk.RootsReadWrite,
	Read:    []string{"~/declared"},
	Network: true,
	Exec:    true,
}

// The attacks of the sandboxplugin, by the names the scenarios use.
const (
	readOutside  = "read a file outside the roots"
	readDeclared = "read the path it declares"
	writeHome    = "write in the home directory"
	readSymlink  = "read through a symlink out of the root"
	connectTCP   = "connect to a TCP listener"
	bindTCP      = "bind a TCP port"
	execShell    = "execute /bin/sh"
	signalHost   = "send SIGWINCH to the host"
	connectUnix  = "connect to an abstract unix socket"
	readEnviron  = "read the host's /proc/PID/environ"
	readCmdline  = "read the host's /proc/PID/cmdline"
	readShadow   = "read /etc/shadow"
	unixSocket   = "connect to a unix socket file outside the roots"
	sendUDP      = "send a UDP datagram to the host's listener"
	allocate     = "map 5 GiB of memory"
	readTheirs   = "read another user's file in the root (as root)"
	rootWork     = "read and write in the root"
)

// sandboxWorld is what the attacks aim at.
type sandboxWorld struct {
	root    string // the workspace root, holding file and link (to secret)
	home    string // HOME, holding declared/secret
	outside string // outside the roots, the home and TMPDIR, holding secret
	// theirs is a file in the root of another user's, mode 0600, made
	// when the test runs as root; "" otherwise.
	theirs  string
	winches atomic.Int32
}

// newSandboxWorld builds the world and makes it the host's: HOME and
// TMPDIR are set for the rest of t, and SIGWINCH counted.
func newSandboxWorld(t *testing.T) *sandboxWorld {
	t.Helper()
	if s := sandbox.Probe(); s.ABI < sandbox.FullABI {
		t.Fatalf("this kernel's Landlock (%v) does not enforce the whole sandbox; not enforced: %v", s, s.Missing())
	}
	// Built before HOME changes: go build finds its module cache through
	// it.
	pluginDir(t)
	w := &sandboxWorld{root: t.TempDir(), home: t.TempDir(), outside: t.TempDir()}
	// The bash plugin may write in TMPDIR: one of its own keeps the
	// other directories out of its reach.
	scratch := t.TempDir()
	writeFile(t, filepath.Join(w.outside, "secret"), "secret\n")
	writeFile(t, filepath.Join(w.home, "declared", "secret"), "declared\n")
	writeFile(t, filepath.Join(w.root, "file"), "inside\n")
	if err := os.Symlink(filepath.Join(w.outside, "secret"), filepath.Join(w.root, "link")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		w.theirs = filepath.Join(w.root, "theirs")
		writeFile(t, w.theirs, "theirs\n")
		if err := os.Chown(w.theirs, 12345, 12345); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", w.home)
	t.Setenv("TMPDIR", scratch)

	winch := make(chan os.Signal, 8)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				w.winches.Add(1)
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		signal.Stop(winch)
		close(done)
	})
	return w
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// target is a TCP listener, an abstract unix socket and a unix socket
// file of the test's own (standing for a container engine's, in a
// directory of mode 0700 outside the roots), which count the
// connections they accept, and a UDP socket.
type target struct {
	tcp, abstract, file *countingListener
	port, name, path    string
	udp                 net.PacketConn
	udpPort             string
}

type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{name: fmt.Sprintf("agenthost-sandbox-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))}
	tg.tcp = countAccepts(t, "tcp", "127.0.0.1:0")
	tg.abstract = countAccepts(t, "unix", "@"+tg.name)
	tg.port = strconv.Itoa(tg.tcp.Addr().(*net.TCPAddr).Port)
	// A short path: a unix socket's holds at most 107 bytes.
	dir, err := os.MkdirTemp("/tmp", "engine")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tg.path = filepath.Join(dir, "engine.sock")
	tg.file = countAccepts(t, "unix", tg.path)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	tg.udp, tg.udpPort = udp, strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)
	return tg
}

// datagrams reports whether the target's UDP socket got a datagram
// within a moment.
func (tg *target) datagrams() bool {
	tg.udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, _, err := tg.udp.ReadFrom(make([]byte, 64))
	return err == nil
}

func countAccepts(t *testing.T, network, addr string) *countingListener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cl.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return cl
}

// attack is one call of the sandboxplugin's tool.
type attack struct {
	name, kind, arg string
	// confined is its answer in the sandbox a third party gets by
	// default.
	confined string
}

// attacks are the sandboxplugin's attacks on w and tg; scenario names
// the files they make, so that scenarios running at once do not meet.
func (w *sandboxWorld) attacks(tg *target, scenario string) []attack {
	host := strconv.Itoa(os.Getpid())
	attacks := []attack{
		{readOutside, "read", filepath.Join(w.outside, "secret"), denied},
		{readDeclared, "read", filepath.Join(w.home, "declared", "secret"), denied},
		{writeHome, "write_home", "pwned-" + scenario, denied},
		{readSymlink, "read", filepath.Join(w.root, "link"), denied},
		// In a network of its own, nothing of the host's listens, and
		// its own ports are its to bind.
		{connectTCP, "connect", tg.port, refused},
		{bindTCP, "bind", "", allowed},
		{execShell, "exec", "/bin/sh", denied},
		{signalHost, "signal", host, noProcess},
		{connectUnix, "abstract", tg.name, notPermitted},
		{readEnviron, "read", "/proc/" + host + "/environ", noFile},
		{readCmdline, "read", "/proc/" + host + "/cmdline", noFile},
		{readShadow, "read", "/etc/shadow", denied},
		{unixSocket, "unix", tg.path, notPermitted},
		{sendUDP, "udp", tg.udpPort, allowed}, // into a network of its own
		{allocate, "alloc", strconv.Itoa(5 << 30), noMemory},
		{rootWork, "rw", filepath.Join(w.root, "work-"+scenario), allowed},
	}
	if w.theirs != "" {
		// Root's capabilities over files are gone with the others.
		attacks = append(attacks, attack{readTheirs, "read", w.theirs, denied})
	}
	return attacks
}

// sandboxScenario is one way of loading the sandboxplugin.
type sandboxScenario struct {
	mode  host.SandboxMode
	grant string // a grant as the command line writes it, or ""
	// granted is what the plugin's report must say it got.
	granted sdk.Permissions
	// allowed are the attacks that succeed besides rootWork; all: every
	// one; answers, what others answer otherwise.
	allowed []string
	answers map[string]string
	all     bool
	// udpOut: the datagram reaches the test's UDP socket.
	udpOut bool
}

// TestSandboxConfinesAThirdParty runs every attack of the sandboxplugin,
// each a real call through a registry, in the sandbox a third party gets
// by default, under each grant, and with the sandbox off. An attack
// fails with the kernel's EACCES or EPERM and leaves nothing behind; a
// grant lets through exactly what it names; --sandbox off lets through
// everything, which is what the escape hatch means.
func TestSandboxConfinesAThirdParty(t *testing.T) {
	w := newSandboxWorld(t)
	rw := sdk.Permissions{Roots: sdk.RootsReadWrite}
	with := func(change func(*sdk.Permissions)) sdk.Permissions {
		p := rw
		change(&p)
		return p
	}
	confined := map[string]sandboxScenario{
		"default": {granted: rw},
		"require": {mode: host.SandboxRequire, granted: rw},
		"network": {
			grant:   "sandbox=network",
			granted: with(func(p *sdk.Permissions) { p.Network = true }),
			allowed: []string{connectTCP},
			// In the host's network: no port bound, and datagrams leave.
			answers: map[string]string{bindTCP: denied},
			udpOut:  true,
		},
		"unix sockets": {
			grant:   "sandbox=unix-sockets",
			granted: with(func(p *sdk.Permissions) { p.UnixSockets = true }),
			allowed: []string{unixSocket},
			// Made, but Landlock's scope keeps it from the host's.
			answers: map[string]string{connectUnix: refused},
		},
		"memory": {
			grant:   "sandbox=memory:8GiB",
			granted: rw,
			allowed: []string{allocate},
		},
		"exec": {
			grant:   "sandbox=exec",
			granted: with(func(p *sdk.Permissions) { p.Exec = true }),
			allowed: []string{execShell},
		},
		"read": {
			grant:   "sandbox=read:" + w.outside,
			granted: with(func(p *sdk.Permissions) { p.Read = []string{w.outside} }),
			// The rule is on the file, whatever the name it is opened by.
			allowed: []string{readOutside, readSymlink},
		},
		"write": {
			grant:   host.PluginPrefix + "sandbox=write:" + w.home,
			granted: with(func(p *sdk.Permissions) { p.Write = []string{w.home} }),
			// Write covers read.
			allowed: []string{writeHome, readDeclared},
		},
		"asked": {
			grant:   "sandbox=asked",
			granted: sandboxDeclared,
			allowed: []string{readDeclared, connectTCP, execShell},
			answers: map[string]string{bindTCP: denied},
			udpOut:  true,
		},
	}
	t.Run("confined", func(t *testing.T) {
		for name, sc := range confined {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runSandboxScenario(t, w, name, sc)
			})
		}
		t.Run("built-ins", func(t *testing.T) {
			t.Parallel()
			testBuiltinSandboxes(t, w)
		})
	})
	if n := w.winches.Load(); n != 0 {
		t.Errorf("the host received %d SIGWINCH from sandboxed plugins", n)
	}
	// Last, alone: the one scenario in which the host is signalled.
	t.Run("off", func(t *testing.T) {
		runSandboxScenario(t, w, "off", sandboxScenario{mode: host.SandboxOff, granted: rw, all: true, udpOut: true,
			// Root reads /etc/shadow; another user may not.
			answers: map[string]string{readShadow: map[bool]string{true: allowed, false: denied}[os.Geteuid() == 0]}})
		eventually(t, "the host received the plugin's SIGWINCH", func() bool { return w.winches.Load() > 0 })
	})
}

func runSandboxScenario(t *testing.T, w *sandboxWorld, name string, sc sandboxScenario) {
	tg := newTarget(t)
	opts := &host.Options{Roots: []string{w.root}, Sandbox: sc.mode}
	if sc.grant != "" {
		plugin, g, err := host.ParseGrant(sc.grant)
		if err != nil {
			t.Fatal(err)
		}
		opts.Grants = map[string]host.Grant{plugin: g}
	}
	reg := load(t, pluginDir(t, "sandbox"), opts)

	rep := reportOf(t, reg, host.PluginPrefix+"sandbox").Sandbox
	enforced := sc.mode != host.SandboxOff
	if !reflect.DeepEqual(rep.Asked, sandboxDeclared) || !reflect.DeepEqual(rep.Granted, sc.granted) ||
		rep.Enforced != enforced || len(rep.NotEnforced) != 0 || rep.Mode != sc.mode {
		t.Errorf("the plugin's sandbox report:\n %+v\nwant asked %+v, granted %+v, enforced %v, mode %v", rep, sandboxDeclared, sc.granted, enforced, sc.mode)
	}
	wantStatus := "enforced (Landlock ABI "
	if !enforced {
		wantStatus = "off (--sandbox off)"
	}
	if got := rep.Status(); !strings.HasPrefix(got, wantStatus) {
		t.Errorf("Status() = %q, want %q…", got, wantStatus)
	}

	attacks := w.attacks(tg, name)
	want := map[string]string{}
	for _, a := range attacks {
		want[a.name] = a.confined
		if sc.all {
			want[a.name] = allowed
		}
	}
	for _, a := range sc.allowed {
		if _, ok := want[a]; !ok {
			t.Fatalf("no attack %q", a)
		}
		want[a] = allowed
	}
	for a, answer := range sc.answers {
		if _, ok := want[a]; !ok {
			t.Fatalf("no attack %q", a)
		}
		want[a] = answer
	}
	for _, a := range attacks {
		args, _ := json.Marshal(map[string]string{"kind": a.kind, "arg": a.arg})
		if got := call(t, reg, "attack", string(args)); got != want[a.name] {
			t.Errorf("%s: %q, want %q", a.name, got, want[a.name])
		}
	}

	// What the attacks left behind.
	_, err := os.Stat(filepath.Join(w.home, "pwned-"+name))
	if made := err == nil; made != (want[writeHome] == allowed) {
		t.Errorf("a file in the home directory: %v, want %v", made, want[writeHome] == allowed)
	}
	for _, l := range []struct {
		what   string
		l      *countingListener
		attack string
	}{{"the TCP listener", tg.tcp, connectTCP}, {"the abstract unix socket", tg.abstract, connectUnix}, {"the unix socket file", tg.file, unixSocket}} {
		if want[l.attack] == allowed {
			eventually(t, l.what+" accepted the plugin's connection", func() bool { return l.l.accepted.Load() == 1 })
		} else if n := l.l.accepted.Load(); n != 0 {
			t.Errorf("%s accepted %d connections", l.what, n)
		}
	}
	if got := tg.datagrams(); got != sc.udpOut {
		t.Errorf("the test's UDP socket got the plugin's datagram: %v, want %v", got, sc.udpOut)
	}
}

// testBuiltinSandboxes checks that each built-in gets exactly what it
// declares, and that run_bash, the one that runs whatever it is given,
// runs it in the bash plugin's sandbox: a command reads and writes in
// the root and its TMPDIR, and nowhere else, and reaches no TCP port.
func testBuiltinSandboxes(t *testing.T, w *sandboxWorld) {
	tg := newTarget(t)
	reg := load(t, pluginDir(t, "fs", "search", "session", "bash"), &host.Options{Roots: []string{w.root}})
	// What each built-in declares, exactly: nothing beyond what its tools
	// need, and no network.
	declared := map[string]sdk.Permissions{
		"fs":      {Roots: sdk.RootsReadWrite},
		"search":  {Roots: sdk.RootsRead},
		"session": {Roots: sdk.RootsNone, SessionFile: true},
		"bash":    {Roots: sdk.RootsReadWrite, Write: []string{"$TMPDIR"}, Exec: true},
	}
	for _, r := range reg.Plugins() {
		want, ok := declared[strings.TrimPrefix(filepath.Base(r.Path), host.PluginPrefix)]
		if !ok || !reflect.DeepEqual(r.Sandbox.Asked, want) {
			t.Errorf("%s declares %q, want %q", filepath.Base(r.Path), r.Sandbox.Asked, want)
		}
		if !r.Builtin || r.Err != nil || !reflect.DeepEqual(r.Sandbox.Granted, want) || !r.Sandbox.Enforced {
			t.Errorf("%s: %+v\nwant a built-in granted what it asks, enforced", filepath.Base(r.Path), r)
		}
	}

	if err := reg.Enable("run_bash"); err != nil {
		t.Fatal(err)
	}
	outsideNew := filepath.Join(w.outside, "by-bash")
	for name, tc := range map[string]struct {
		command string
		stdout  string // when it succeeds
		stderr  string // when it fails
	}{
		"read in the root":     {command: "cat " + filepath.Join(w.root, "file"), stdout: "inside\n"},
		"write in the root":    {command: "echo made > " + filepath.Join(w.root, "by-bash") + " && cat " + filepath.Join(w.root, "by-bash"), stdout: "made\n"},
		"write in its TMPDIR":  {command: `echo made > "$TMPDIR/by-bash" && cat "$TMPDIR/by-bash"`, stdout: "made\n"},
		"read outside":         {command: "cat " + filepath.Join(w.outside, "secret"), stderr: "Permission denied"},
		"read through symlink": {command: "cat " + filepath.Join(w.root, "link"), stderr: "Permission denied"},
		"write outside":        {command: "echo x > " + outsideNew, stderr: "Permission denied"},
		// The command runs in the bash plugin's network: nothing of the
		// host's listens there.
		"connect to a TCP port": {command: "echo > /dev/tcp/127.0.0.1/" + tg.port, stderr: "connect: Connection refused"},
		"a unix socket file":    {command: "/usr/bin/python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' " + tg.path, stderr: "PermissionError: [Errno 1] Operation not permitted"},
		"the host's processes":  {command: "cat /proc/" + strconv.Itoa(os.Getpid()) + "/cmdline", stderr: "No such file or directory"},
		"/etc/shadow":           {command: "cat /etc/shadow", stderr: "Permission denied"},
	} {
		var out struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode int    `json:"exit_code"`
		}
		args, _ := json.Marshal(map[string]string{"command": tc.command})
		if err := json.Unmarshal([]byte(call(t, reg, "run_bash", string(args))), &out); err != nil {
			t.Fatal(err)
		}
		if tc.stderr == "" && (out.ExitCode != 0 || out.Stdout != tc.stdout) {
			t.Errorf("%s: %+v, want exit 0 and stdout %q", name, out, tc.stdout)
		}
		if tc.stderr != "" && (out.ExitCode == 0 || !strings.Contains(out.Stderr, tc.stderr)) {
			t.Errorf("%s: %+v, want a failure saying %q", name, out, tc.stderr)
		}
	}
	if _, err := os.Stat(outsideNew); err == nil {
		t.Error("run_bash wrote outside the roots")
	}
	if n := tg.tcp.accepted.Load() + tg.file.accepted.Load(); n != 0 {
		t.Errorf("run_bash reached the test's listeners %d times", n)
	}
}

// TestSandboxOnAnOlderKernel plays kernels whose Landlock enforces part
// of the sandbox (ABI 3: no TCP, device ioctl or scope restrictions) or
// none of it. --sandbox require refuses every plugin, with a message
// saying what is missing, and the host goes on; --sandbox auto runs
// them and warns once, in one line naming what is not enforced, however
// many plugins start.
func TestSandboxOnAnOlderKernel(t *testing.T) {
	// Not parallel: what the host believes of the kernel is the whole
	// package's.
	pluginDir(t)
	const abi3Missing = "binding and connecting TCP sockets (Landlock ABI 4); ioctl on devices (Landlock ABI 5); abstract unix sockets and signals to processes outside the sandbox (Landlock ABI 6)"
	noSeccomp := errors.New("the kernel was built without seccomp")
	noNamespaces := errors.New("no user namespaces")
	// Without namespaces, nothing bounds root's processes.
	noNamespacesMissing := "namespaces of its own (no user namespaces)"
	if os.Geteuid() == 0 {
		noNamespacesMissing += "; the process limit: no rlimit counts root's processes, and the kernel gives no PID namespace a pid_max of its own (Linux 6.14)"
	}
	for name, tc := range map[string]struct {
		abi  int
		mode host.SandboxMode
		// seccomp, namespaces: what else the kernel lacks.
		seccomp, namespaces error
		// refused is every plugin's error under require; warning the
		// line auto logs, and status the plugin's Status under it.
		refused, warning, status string
	}{
		"require, no seccomp": {
			abi: sandbox.FullABI, mode: host.SandboxRequire, seccomp: noSeccomp,
			refused: "the sandbox is required (--sandbox require) but the kernel (Landlock ABI 6) does not enforce a system call filter (seccomp): the kernel was built without seccomp",
		},
		// Namespaces are not required: a subreaper stands in for them.
		"require, no namespaces": {
			abi: sandbox.FullABI, mode: host.SandboxRequire, namespaces: noNamespaces,
			status: "partly enforced (Landlock ABI 6; not enforced: " + noNamespacesMissing + ")",
		},
		"auto, no namespaces": {
			abi: sandbox.FullABI, mode: host.SandboxAuto, namespaces: noNamespaces,
			warning: "the kernel enforces only part of the plugin sandbox; not enforced: namespaces of its own (no user namespaces)",
			status:  "partly enforced (Landlock ABI 6; not enforced: " + noNamespacesMissing + ")",
		},
		"require, ABI 3": {
			abi: 3, mode: host.SandboxRequire,
			refused: "the sandbox is required (--sandbox require) but the kernel (Landlock ABI 3) does not enforce " + abi3Missing,
		},
		"require, no Landlock": {
			abi: 0, mode: host.SandboxRequire,
			refused: "the sandbox is required (--sandbox require) but the kernel cannot confine plugins: no Landlock",
		},
		"auto, ABI 3": {
			abi: 3, mode: host.SandboxAuto,
			warning: "the kernel enforces only part of the plugin sandbox; not enforced: " + abi3Missing,
			status:  "partly enforced (Landlock ABI 3; not enforced: " + abi3Missing + ")",
		},
		"auto, no Landlock": {
			abi: 0, mode: host.SandboxAuto,
			warning: "plugins run unconfined: the kernel has no Landlock sandbox (no Landlock); --sandbox require refuses to run them, --sandbox off silences this",
			status:  "not enforced: no Landlock",
		},
	} {
		t.Run(name, func(t *testing.T) {
			host.PlayLandlockABI(t, tc.abi)
			host.PlayKernelWithout(t, tc.seccomp, tc.namespaces)
			root := t.TempDir()
			logger, logs := logged()
			reg := load(t, pluginDir(t, "sandbox", "test", "clock"), &host.Options{
				Roots: []string{root}, Sandbox: tc.mode, Logger: logger, CacheDir: host.NoCache,
			})
			if tc.refused != "" {
				for _, r := range reg.Plugins() {
					if r.Err == nil || r.Err.Error() != tc.refused {
						t.Errorf("%s: %v\nwant refused: %s", filepath.Base(r.Path), r.Err, tc.refused)
					}
				}
				if got := reg.ToolNames(); len(got) != 0 {
					t.Errorf("tools registered: %v", got)
				}
				// The host goes on: its registry serves what needs no
				// plugin process.
				inProcess := sdk.NewTool(sdk.Info{Name: "in_process", Description: "Answer."},
					func(ctx context.Context, in struct{}) (string, error) { return "still here", nil })
				if err := reg.Register(inProcess); err != nil {
					t.Fatal(err)
				}
				if got := call(t, reg, "in_process", `{}`); got != "still here" {
					t.Errorf("an in-process tool: %q", got)
				}
				return
			}
			for _, r := range reg.Plugins() {
				if r.Err != nil {
					t.Errorf("%s: %v", filepath.Base(r.Path), r.Err)
				}
			}
			if got := call(t, reg, "echo", `{"text":"hi"}`); got != "hi" {
				t.Errorf("echo = %q", got)
			}
			args := fmt.Sprintf(`{"kind":"rw","arg":%q}`, filepath.Join(root, "work"))
			if got := call(t, reg, "attack", args); got != allowed {
				t.Errorf("work in the root: %q", got)
			}
			if n := strings.Count(logs.String(), tc.warning); tc.warning != "" && n != 1 {
				t.Errorf("the warning %q is logged %d times, want once:\n%s", tc.warning, n, logs)
			}
			if got := reportOf(t, reg, host.PluginPrefix+"sandbox").Sandbox.Status(); got != tc.status {
				t.Errorf("Status() = %q\nwant %q", got, tc.status)
			}
		})
	}
}

// TestScriptPluginReadsItsOwnDirectory: a script plugin may read the
// directory its file is in, symlinks resolved, where its interpreter
// finds what the script loads, from the start that describes it on, with
// no grant; nothing beside that directory, nor beside the link in the
// plugins directory. A binary gets nothing of the kind, nor does a
// script whose directory is the home directory. Each script here is a
// "#!" file naming the sandboxplugin as its interpreter, so that the
// attack tool reads from inside the script's sandbox.
func TestScriptPluginReadsItsOwnDirectory(t *testing.T) {
	if s := sandbox.Probe(); s.ABI < sandbox.FullABI {
		t.Fatalf("this kernel's Landlock (%v) does not enforce the whole sandbox; not enforced: %v", s, s.Missing())
	}
	// Built before HOME changes: go build finds its module cache through
	// it.
	binaries := pluginDir(t, "sandbox")
	interpreter := plugintest.Binary(t, pluginPackages["sandbox"])
	project, sibling, home := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	// linked installs a script in dir, and a symlink to it in a plugins
	// directory of its own, which it returns.
	linked := func(dir string) string {
		script := filepath.Join(dir, "agenthost-plugin-script")
		if err := os.WriteFile(script, []byte("#!"+interpreter+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		plugins := t.TempDir()
		if err := os.Symlink(script, filepath.Join(plugins, host.PluginPrefix+"script")); err != nil {
			t.Fatal(err)
		}
		return plugins
	}
	plugins, inHome := linked(project), linked(home)
	writeFile(t, filepath.Join(project, "lib", "helper"), "helper\n")
	writeFile(t, filepath.Join(sibling, "secret"), "secret\n")
	writeFile(t, filepath.Join(plugins, "beside-the-link"), "plugins\n")
	writeFile(t, filepath.Join(home, "helper"), "home\n")
	writeFile(t, filepath.Join(binaries, "beside-the-binary"), "binary\n")
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}

	rw := sdk.Permissions{Roots: sdk.RootsReadWrite}
	for name, tc := range map[string]struct {
		plugins, plugin string
		granted         sdk.Permissions
		reads           map[string]string // path → what reading it answers
	}{
		"a script, through a symlink": {
			plugins: plugins, plugin: host.PluginPrefix + "script",
			granted: sdk.Permissions{Roots: sdk.RootsReadWrite, Read: []string{real}},
			reads: map[string]string{
				filepath.Join(project, "lib", "helper"):   allowed,
				filepath.Join(sibling, "secret"):          denied,
				filepath.Join(plugins, "beside-the-link"): denied,
			},
		},
		"a binary": {
			plugins: binaries, plugin: host.PluginPrefix + "sandbox", granted: rw,
			reads: map[string]string{filepath.Join(binaries, "beside-the-binary"): denied},
		},
		"a script in the home directory": {
			plugins: inHome, plugin: host.PluginPrefix + "script", granted: rw,
			reads: map[string]string{filepath.Join(home, "helper"): denied},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Without the cache, the load starts the plugin to describe
			// it; its sandbox is then the one the calls below meet, since
			// the description asks for nothing that would change it.
			reg := load(t, tc.plugins, &host.Options{Roots: []string{t.TempDir()}, CacheDir: host.NoCache})
			rep := reportOf(t, reg, tc.plugin)
			if !rep.Launched || !reflect.DeepEqual(rep.Sandbox.Granted, tc.granted) || !rep.Sandbox.Enforced {
				t.Errorf("the report: %+v\nwant launched at load, granted %+v, enforced", rep, tc.granted)
			}
			for path, want := range tc.reads {
				args, _ := json.Marshal(map[string]string{"kind": "read", "arg": path})
				if got := call(t, reg, "attack", string(args)); got != want {
					t.Errorf("reading %s: %q, want %q", path, got, want)
				}
			}
		})
	}
}
