package sandbox

import (
	"bytes"
	"errors"
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
)

// The test binary doubles as the sandboxed program: run with
// SANDBOX_TEST_ACT set, it does that one thing and prints "ok" or the
// error, through raw system calls where the standard library would hide
// the errno.
func TestMain(m *testing.M) {
	if act := os.Getenv("SANDBOX_TEST_ACT"); act != "" {
		err := doAct(act, os.Getenv("SANDBOX_TEST_ARG"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(0)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func doAct(act, arg string) error {
	switch act {
	case "read":
		fd, err := syscall.Open(arg, syscall.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		_, err = syscall.Read(fd, make([]byte, 1))
		if err == syscall.EISDIR {
			err = nil
		}
		return err
	case "write":
		fd, err := syscall.Open(arg, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o600)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	case "exec":
		return syscall.Exec(arg, []string{arg, "-c", "exit 0"}, nil)
	case "connect":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		port, _ := strconv.Atoi(arg)
		return syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	case "bind":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		return syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	case "abstract":
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		return syscall.Connect(fd, &syscall.SockaddrUnix{Name: "@" + arg})
	case "caps":
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			name, value, ok := strings.Cut(line, ":\t")
			if !ok || !strings.HasPrefix(name, "Cap") {
				continue
			}
			v, err := strconv.ParseUint(value, 16, 64)
			if err != nil || v != 0 {
				return errors.New(line)
			}
		}
		return nil
	case "signal":
		pid, _ := strconv.Atoi(arg)
		return syscall.Kill(pid, syscall.SIGUSR1)
	}
	return errors.New("unknown act " + act)
}

// confined runs the test binary inside p, doing act on arg, and returns
// what it printed.
func confined(t *testing.T, p *Policy, act, arg string) string {
	t.Helper()
	q := *p
	q.Rules = slices.Clone(p.Rules)
	exe := allowSelf(t, &q)
	q.Rules = append(q.Rules, System(false)...)
	cmd := exec.Command(exe)
	// The race detector would otherwise wait a second at exit.
	cmd.Env = []string{"SANDBOX_TEST_ACT=" + act, "SANDBOX_TEST_ARG=" + arg, "GORACE=atexit_sleep_ms=0"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc, err := Start(cmd, &q)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer proc.Release()
	if err := proc.Wait(); err != nil {
		t.Fatalf("%s %s: %v: %s", act, arg, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// allowSelf lets p read and execute the test binary (and its
// interpreter), and returns the binary's path.
func allowSelf(t *testing.T, p *Policy) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p.Rules = append(p.Rules, Rule{Path: exe, File: f, Access: Read | Execute})
	p.Allow(Read|Execute, Interpreters(f, os.Getenv("PATH"))...)
	return exe
}

func requireLandlock(t *testing.T) Support {
	t.Helper()
	s := Probe()
	if !s.Enforced() {
		t.Fatalf("this kernel has no Landlock (%v): the sandbox tests run for real or fail", s)
	}
	return s
}

func TestProbe(t *testing.T) {
	s := requireLandlock(t)
	if s.ABI < FullABI {
		t.Logf("Landlock ABI %d; not enforced: %v", s.ABI, s.Missing())
	}
	if s.ABI >= FullABI && len(s.Missing()) != 0 {
		t.Errorf("Missing at ABI %d: %v", s.ABI, s.Missing())
	}
	if got := (Support{ABI: 3}).Missing(); len(got) != 3 || !strings.Contains(got[0], "TCP") {
		t.Errorf("Missing at ABI 3: %v", got)
	}
}

func TestFilesystem(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(root, "file")
	if err := os.WriteFile(inside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	ro := &Policy{Rules: []Rule{{Path: root, Access: Read}}}
	rw := &Policy{Rules: []Rule{{Path: root, Access: Read | Write}}}
	for _, c := range []struct {
		name      string
		p         *Policy
		act, arg  string
		wantAllow bool
	}{
		{"read inside", ro, "read", inside, true},
		{"read outside", ro, "read", secret, false},
		{"read through a symlink out", rw, "read", filepath.Join(root, "link"), false},
		{"write inside read-only", ro, "write", filepath.Join(root, "new"), false},
		{"write inside read-write", rw, "write", filepath.Join(root, "new"), true},
		{"write outside", rw, "write", filepath.Join(outside, "new"), false},
		{"read /etc", ro, "read", "/etc/passwd", true},
		{"write /etc", rw, "write", "/etc/agenthost-sandbox-test", false},
		{"exec a shell", rw, "exec", "/bin/sh", false},
		{"the host's environment", ro, "read", fmt.Sprintf("/proc/%d/environ", os.Getpid()), false},
		{"the host's memory", ro, "read", fmt.Sprintf("/proc/%d/mem", os.Getpid()), false},
		{"its own status", ro, "read", "/proc/self/status", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := confined(t, c.p, c.act, c.arg)
			if c.wantAllow && got != "ok" {
				t.Fatalf("want allowed, got %q", got)
			}
			if !c.wantAllow && !strings.Contains(got, "permission denied") {
				t.Fatalf("want permission denied, got %q", got)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a file was written outside the rules")
	}
}

func TestExecuteGrant(t *testing.T) {
	requireLandlock(t)
	p := &Policy{Rules: System(true)}
	if got := confined(t, p, "exec", "/bin/sh"); got != "" {
		// A successful exec replaces the test binary with a shell that
		// prints nothing.
		t.Fatalf("exec with programs allowed: %q", got)
	}
}

func TestNetwork(t *testing.T) {
	s := requireLandlock(t)
	if s.ABI < 4 {
		t.Skipf("Landlock ABI %d restricts no TCP", s.ABI)
	}
	port := tcpListener(t)
	if got := confined(t, &Policy{}, "connect", port); !strings.Contains(got, "permission denied") {
		t.Errorf("connect without network: %q", got)
	}
	if got := confined(t, &Policy{Network: true}, "connect", port); got != "ok" {
		t.Errorf("connect with network: %q", got)
	}
	if got := confined(t, &Policy{Network: true}, "bind", ""); !strings.Contains(got, "permission denied") {
		t.Errorf("bind with network: %q", got)
	}
}

func TestScopes(t *testing.T) {
	s := requireLandlock(t)
	if s.ABI < 6 {
		t.Skipf("Landlock ABI %d has no scopes", s.ABI)
	}
	name := fmt.Sprintf("agenthost-sandbox-test-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Unix sockets allowed, so that Landlock, not the system call
	// filter, refuses.
	if got := confined(t, &Policy{UnixSockets: true}, "abstract", name); !strings.Contains(got, "operation not permitted") {
		t.Errorf("connecting to an abstract socket outside: %q", got)
	}
	// A process of the test's own that ignores SIGUSR1 is a target the
	// sandboxed one may not signal.
	target := exec.Command("sleep", "30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	if got := confined(t, &Policy{}, "signal", strconv.Itoa(target.Process.Pid)); !strings.Contains(got, "operation not permitted") {
		t.Errorf("signalling a process outside: %q", got)
	}
}

// TestNoCapabilities checks that a sandboxed process has no capability,
// not even those over files, when the host has them all (as root).
func TestNoCapabilities(t *testing.T) {
	requireLandlock(t)
	if got := confined(t, &Policy{}, "caps", ""); got != "ok" {
		t.Fatalf("the sandboxed process has capabilities: %s", got)
	}
}

// TestHostStaysFree checks that Start restricts only the child: the
// process that called it can still read what the child could not.
func TestHostStaysFree(t *testing.T) {
	requireLandlock(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if got := confined(t, &Policy{}, "read", secret); !strings.Contains(got, "permission denied") {
			t.Fatalf("child read: %q", got)
		}
	}
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := os.ReadFile(secret)
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatalf("the host was restricted too: %v", err)
		}
	}
}

// BenchmarkStart measures what confining a process costs: starting and
// waiting for /bin/true inside a policy like a plugin's, and without one.
func BenchmarkStart(b *testing.B) {
	if !Probe().Enforced() {
		b.Fatal("no Landlock")
	}
	root := b.TempDir()
	for _, sandboxed := range []bool{true, false} {
		name := "unsandboxed"
		if sandboxed {
			name = "sandboxed"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
				if sandboxed {
					p := &Policy{Rules: System(false)}
					p.Allow(Read|Write, root)
					f, err := os.Open("/bin/true")
					if err != nil {
						b.Fatal(err)
					}
					p.Rules = append(p.Rules, Rule{Path: "/bin/true", File: f, Access: Read | Execute})
					p.Allow(Read|Execute, Interpreters(f, "")...)
					proc, err := Start(cmd, p)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
					if err := proc.Wait(); err != nil {
						b.Fatal(err)
					}
					proc.Release()
					continue
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tcpListener listens on a TCP port of 127.0.0.1, which it returns, and
// accepts and closes connections until the test ends.
func tcpListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
