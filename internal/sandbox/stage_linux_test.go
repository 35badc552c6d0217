package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/poll"
)

// The stage tests run the test binary as the program of an isolated
// sandbox (Policy.Isolate): with STAGE_TEST_ACT set, it does that one
// thing and prints what it found, or the error.
func init() {
	act, ok := os.LookupEnv("STAGE_TEST_ACT")
	if !ok {
		return
	}
	out, err := stageAct(act, os.Getenv("STAGE_TEST_ARG"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(0)
	}
	fmt.Println(out)
	os.Exit(0)
}

func stageAct(act, arg string) (string, error) {
	switch act {
	case "pids":
		// The processes this one sees.
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return "", err
		}
		var pids []string
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, e.Name())
			}
		}
		return strings.Join(pids, " "), nil
	case "read":
		_, err := os.ReadFile(arg)
		return "ok", err
	case "bind":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		l.Close()
		return "ok", nil
	case "connect":
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+arg, 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "ok", nil
	case "udp":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		port, _ := strconv.Atoi(arg)
		return "ok", unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	case "exit":
		code, _ := strconv.Atoi(arg)
		os.Exit(code)
	case "selfkill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Second)
	case "setsid":
		// A grandchild in a session of its own, left behind.
		cmd := exec.Command("/bin/sleep", "300")
		cmd.Env = []string{"STAGE_TEST_LEFT=" + arg}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return "", err
		}
		return "ok", nil
	case "alloc":
		n, _ := strconv.ParseUint(arg, 10, 64)
		b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return "", err
		}
		unix.Munmap(b)
		return "ok", nil
	case "fsize":
		signal := "no signal"
		// SIGXFSZ is the runtime's to ignore or not: handled here, the
		// write's error tells.
		f, err := os.Create(filepath.Join(arg, "big"))
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.Write(make([]byte, 2<<20))
		return signal, err
	}
	return "", fmt.Errorf("unknown act %q", act)
}

// isolated runs the test binary doing act on arg in an isolated sandbox
// of p, and returns what it printed and how it ended.
func isolated(t *testing.T, p Policy, act, arg string) (string, *Process) {
	t.Helper()
	p.Isolate = true
	p.Rules = slices.Clone(p.Rules)
	exe := allowSelf(t, &p)
	p.Rules = append(p.Rules, System(true)...)
	cmd := exec.Command(exe)
	cmd.Env = []string{"STAGE_TEST_ACT=" + act, "STAGE_TEST_ARG=" + arg, "GORACE=atexit_sleep_ms=0"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	proc, err := Start(cmd, &p)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer proc.Release()
	if err := proc.Wait(); err != nil {
		t.Fatalf("%s %s: the stage: %v: %s", act, arg, err, out.String())
	}
	return strings.TrimSpace(out.String()), proc
}

func requireNamespaces(t *testing.T) {
	t.Helper()
	requireLandlock(t)
	if err := NamespaceSupport(); err != nil {
		t.Fatalf("the kernel gives this process no namespaces (%v): the isolation tests run for real or fail", err)
	}
}

// An isolated program sees its own PID namespace in /proc: the stage
// (1) and itself, and none of the host's processes, whose command lines
// and environments are out of its reach.
func TestIsolatedSeesOnlyItsOwnProcesses(t *testing.T) {
	requireNamespaces(t)
	t.Parallel()
	if got, _ := isolated(t, Policy{}, "pids", ""); len(strings.Fields(got)) != 2 || !strings.HasPrefix(got, "1 ") {
		t.Errorf("the processes an isolated program sees: %q, want 1 and its own", got)
	}
	cmdline := fmt.Sprintf("/proc/%d/cmdline", os.Getpid())
	if got, _ := isolated(t, Policy{}, "read", cmdline); !strings.Contains(got, "no such file") {
		t.Errorf("reading the host's %s: %q, want no such file", cmdline, got)
	}
}

// Without the network, an isolated program has a network of its own,
// where it may bind and connect TCP ports and send datagrams, which
// reach nothing of the host's; with it, the host's.
func TestIsolatedNetwork(t *testing.T) {
	requireNamespaces(t)
	t.Parallel()
	port := tcpListener(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpPort := strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port)

	for _, c := range []struct {
		network   bool
		act, arg  string
		wantAllow bool
	}{
		{false, "bind", "", true},
		{false, "connect", port, false},
		{false, "udp", udpPort, true}, // sent, in a network of its own
		{true, "connect", port, true},
		{true, "bind", "", false},
	} {
		got, _ := isolated(t, Policy{Network: c.network}, c.act, c.arg)
		if c.wantAllow != (got == "ok") {
			t.Errorf("network %v, %s: %q", c.network, c.act, got)
		}
	}
	udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("a datagram of %d bytes left the sandbox's own network", n)
	}
}

// What an isolated program leaves behind, in a session of its own, ends
// with it: its PID namespace dies with the stage.
func TestIsolatedLeavesNothing(t *testing.T) {
	requireNamespaces(t)
	t.Parallel()
	marker := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	if got, _ := isolated(t, Policy{}, "setsid", marker); got != "ok" {
		t.Fatalf("setsid: %q", got)
	}
	left := func() []int { return withEnv("STAGE_TEST_LEFT=" + marker) }
	t.Cleanup(func() {
		for _, pid := range left() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	poll.Eventually(t, 5*time.Second, "what the program left ends", func() error {
		if pids := left(); len(pids) > 0 {
			return fmt.Errorf("processes %v outlived their sandbox", pids)
		}
		return nil
	})
}

// withEnv lists the processes whose environment holds kv.
func withEnv(kv string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(d)
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), kv) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
		pids = append(pids, pid)
	}
	return pids
}

// The stage reports how the program ended: the host's Process says it,
// not the stage's own exit.
func TestIsolatedExitStatus(t *testing.T) {
	requireNamespaces(t)
	t.Parallel()
	_, proc := isolated(t, Policy{}, "exit", "3")
	if ws, ok := proc.ExitStatus(); !ok || !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("exit 3: status %v (reported %v)", ws, ok)
	}
	_, proc = isolated(t, Policy{}, "selfkill", "")
	if ws, ok := proc.ExitStatus(); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("SIGKILL: status %v (reported %v)", ws, ok)
	}
}

// The limits hold in the sandbox: an allocation past the memory limit
// fails, and so does a write past the file size limit.
func TestIsolatedLimits(t *testing.T) {
	requireNamespaces(t)
	t.Parallel()
	const gib = 1 << 30
	if got, _ := isolated(t, Policy{Limits: Limits{Memory: gib}}, "alloc", strconv.Itoa(2*gib)); !strings.Contains(got, "cannot allocate memory") {
		t.Errorf("2 GiB under a 1 GiB limit: %q", got)
	}
	if got, _ := isolated(t, Policy{Limits: Limits{Memory: 4 * gib}}, "alloc", strconv.Itoa(2*gib)); got != "ok" {
		t.Errorf("2 GiB under a 4 GiB limit: %q", got)
	}
	dir := t.TempDir()
	p := Policy{Limits: Limits{FileSize: 1 << 20}}
	p.Allow(Read|Write, dir)
	if got, _ := isolated(t, p, "fsize", dir); !strings.Contains(got, "file too large") {
		t.Errorf("2 MiB under a 1 MiB file size limit: %q", got)
	}
}

// A program executed through the host's descriptor of its file
// (/proc/self/fd/N, as the host executes a plugin it checked) runs
// whatever descriptors it is given besides: the stage's child moves its
// own above them, where the stage's copy of the file must not be.
func TestIsolatedExecutesTheOpenedFile(t *testing.T) {
	requireNamespaces(t)
	for _, n := range []int{0, 1, 2, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			f, err := os.Open("/bin/true")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p := Policy{Isolate: true, Rules: append(System(false), Rule{Path: "/bin/true", File: f, Access: Read | Execute})}
			p.Allow(Read|Execute, Interpreters(f, "")...)
			cmd := exec.Command("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
			for range n {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				defer w.Close()
				cmd.ExtraFiles = append(cmd.ExtraFiles, w)
			}
			proc, err := Start(cmd, &p)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer proc.Release()
			if err := proc.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
