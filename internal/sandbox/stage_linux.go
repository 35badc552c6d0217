package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/sandbox/stage"
)

// The stage (package stage) is the first process of a sandbox started
// with Policy.Isolate: the host's own executable again, which package
// stage's init recognises and runs as the stage. The host builds what the
// stage needs (the Landlock ruleset, the system call filter, the secrets
// of /etc to cover) and gives it over on descriptors; the stage sets up
// its namespaces and limits, enters the walls, starts the program and
// reaps what it leaves.

// namespaces is what this process knows of the namespaces the kernel
// gives it: whether it has tried (known), and why it gives none (err).
// The first isolated start finds out, and falls back to a stage without
// namespaces when they fail; NamespaceSupport asks when no start has.
var namespaces struct {
	sync.Mutex
	known bool
	err   error
}

// NamespacesKnown returns whether a process of Policy.Isolate gets
// namespaces of its own, when a start has found out: known, and nil or
// why not. It starts nothing (see NamespaceSupport).
func NamespacesKnown() (known bool, err error) { return namespacesKnown() }

// namespacesKnown returns whether namespaces work, when known.
func namespacesKnown() (known bool, err error) {
	namespaces.Lock()
	defer namespaces.Unlock()
	return namespaces.known, namespaces.err
}

// learnNamespaces records whether namespaces work: err is nil, or why
// not.
func learnNamespaces(err error) {
	namespaces.Lock()
	defer namespaces.Unlock()
	namespaces.known, namespaces.err = true, err
}

// errWalls is a stage's failure to set up its namespaces.
type errWalls struct{ err error }

func (e errWalls) Error() string { return "setting up the sandbox's namespaces: " + e.err.Error() }
func (e errWalls) Unwrap() error { return e.err }

// NamespaceSupport reports whether a process of Policy.Isolate gets
// namespaces of its own (user, PID with its own /proc, mount, network):
// nil, or why not. It is known once a sandbox has started; before, it is
// found out by starting a stage that sets them up and exits (about 3
// ms).
func NamespaceSupport() error {
	if known, err := namespacesKnown(); known {
		return err
	}
	proc, err := launchStage(&exec.Cmd{}, stage.Spec{Probe: true, Namespaces: true, PrivateNetwork: true}, nil, nil, true)
	if err == nil {
		err = proc.Wait()
	}
	var walls errWalls
	if err == nil || errors.As(err, &walls) {
		learnNamespaces(err)
	}
	return err
}

// startStaged starts cmd under a stage, in namespaces of its own when
// the kernel allows them, and else, once it has said so, without. The
// Process returned is the stage's, whose end follows the program's, and
// says how the program ended; cmd itself is not started.
func startStaged(cmd *exec.Cmd, p *Policy) (*Process, error) {
	known, nsErr := namespacesKnown()
	ns := !known || nsErr == nil
	proc, err := startStage(cmd, p, ns)
	var walls errWalls
	if ns && !known && errors.As(err, &walls) {
		learnNamespaces(err)
		return startStage(cmd, p, false)
	}
	if ns && !known && err == nil {
		learnNamespaces(nil)
	}
	return proc, err
}

// startStage starts cmd under a stage, in namespaces of its own with ns.
func startStage(cmd *exec.Cmd, p *Policy, ns bool) (*Process, error) {
	s := Probe()
	spec := stage.Spec{
		Path: cmd.Path, Args: cmd.Args, Env: dedupEnv(cmd.Env), Dir: cmd.Dir,
		Files:      len(cmd.ExtraFiles),
		Limits:     stage.Limits(p.Limits),
		Namespaces: ns,
		// A process with the network shares the host's network
		// namespace: it connects where the host does.
		PrivateNetwork: p.PrivateNetwork || ns && !p.Network,
	}
	if cmd.Env == nil {
		spec.Env = os.Environ()
	}
	q := *p
	q.PrivateNetwork = spec.PrivateNetwork
	var procRules []Rule
	if ns {
		// The stage covers /etc's secrets, and makes the rules beneath
		// /proc once its own /proc is mounted: a rule the host made
		// would be on the host's.
		spec.EtcSecrets = etcSecretPaths()
		q.etcMasked = true
		q.Rules = nil
		for _, r := range p.Rules {
			if r.File == nil && (r.Path == "/proc" || strings.HasPrefix(r.Path, "/proc/")) {
				procRules = append(procRules, r)
				continue
			}
			q.Rules = append(q.Rules, r)
		}
	}
	handled := handledFS(s.ABI)
	for _, r := range procRules {
		rights := r.Access.rights() & handled
		spec.ProcRules = append(spec.ProcRules, stage.ProcRule{Path: r.Path, DirRights: rights, FileRights: rights & fsFileOnly})
	}
	if SeccompSupport() == nil {
		filter, err := q.filter().raw()
		if err != nil {
			return nil, err
		}
		spec.Filter = filter
	}
	ruleset, err := q.ruleset(s.ABI)
	if err != nil {
		return nil, err
	}
	rulesetFile := os.NewFile(uintptr(ruleset), "landlock ruleset")
	defer rulesetFile.Close()
	files := slices.Clone(cmd.ExtraFiles)
	// A program executed through the host's descriptor of its file (see
	// host's openedBinary), which is close-on-exec: the stage executes
	// its own.
	if fd, ok := strings.CutPrefix(cmd.Path, "/proc/self/fd/"); ok {
		for _, r := range p.Rules {
			if r.File != nil && strconv.Itoa(int(r.File.Fd())) == fd {
				spec.Exec = true
				files = append(files, r.File)
				break
			}
		}
	}
	launch := &exec.Cmd{Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	return launchStage(launch, spec, rulesetFile, files, ns)
}

// dedupEnv keeps the last of each variable env sets, as os/exec does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(env[i], "=")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, env[i])
	}
	slices.Reverse(out)
	return out
}

// launcher is a thread of the host's own, locked to a goroutine that
// never returns, that starts every stage: a stage's parent-death signal
// is tied to the thread that started it, which so lives as long as the
// host. Go's process starts take turns anyway (syscall.ForkLock, which a
// start in new namespaces holds while it writes the stage's user and
// group maps).
var launcher = sync.OnceValue(func() chan func() {
	ch := make(chan func())
	goLocked(func() {
		for f := range ch {
			f()
		}
	})
	return ch
})

// onLauncher runs f on the launcher thread, and returns its error.
func onLauncher(f func() error) error {
	done := make(chan error, 1)
	launcher() <- func() { done <- f() }
	return <-done
}

// launchStage makes cmd, which has the program's stdio and process
// group, the stage's command, starts it (in new namespaces, with ns),
// gives it spec, the ruleset and files, and waits for its first report.
// A kernel that refuses the namespaces is an errWalls.
func launchStage(cmd *exec.Cmd, spec stage.Spec, ruleset *os.File, files []*os.File, ns bool) (*Process, error) {
	encoded, err := spec.MarshalBinary()
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specR.Close()
	defer specW.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer reportW.Close()

	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if old := cmd.SysProcAttr; old != nil {
		attr.Setpgid, attr.Pgid = old.Setpgid, old.Pgid
	}
	if ns {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		if spec.PrivateNetwork {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		// The same user and group inside as outside: files are owned
		// by whom they were, and the program is who it was.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		// Kept across the stage's exec, for its set-up; the program
		// gets none (stage.DropCapabilities).
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	} else {
		// Handled by the stage, which kills what the program left.
		attr.Pdeathsig = syscall.SIGTERM
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{stage.Name, stage.Arg}
	cmd.Env = []string{stage.Env + "=" + stage.EnvValue}
	cmd.Dir = ""
	// At stage.SpecFD, ReportFD, RulesetFD and FirstFile.
	cmd.ExtraFiles = append([]*os.File{specR, reportW, ruleset}, files...)
	cmd.SysProcAttr = attr

	err = onLauncher(cmd.Start)
	if err != nil {
		reportR.Close()
		if ns && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES)) {
			// The kernel refused a namespace (unprivileged user
			// namespaces off, a container's seccomp profile, a limit).
			return nil, errWalls{fmt.Errorf("making namespaces: %w", err)}
		}
		return nil, fmt.Errorf("starting the sandbox's first process: %w", err)
	}
	specR.Close()
	reportW.Close()
	proc := &Process{cmd: cmd, isolated: ns, read: make(chan struct{})}
	_, err = specW.Write(encoded)
	specW.Close()
	if err == nil {
		err = proc.readStart(reportR, spec.Path)
	}
	if err != nil {
		reportR.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	go proc.readEnd(reportR)
	return proc, nil
}

// readStart reads the stage's first report: the program runs, or why
// not.
func (p *Process) readStart(r io.Reader, path string) error {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("the sandbox's first process ended before it started %s", path)
	}
	switch b[0] {
	case stage.ReportStarted:
		return nil
	case stage.ReportFailed:
	default:
		return fmt.Errorf("the sandbox's first process reported %q", b[0])
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	if len(msg) < 5 {
		return errors.New("the sandbox's first process failed")
	}
	errno := syscall.Errno(binary.LittleEndian.Uint32(msg[1:5]))
	text := string(msg[5:])
	switch {
	case msg[0] == stage.FailedWalls:
		return errWalls{errors.New(text)}
	case errno != 0:
		// As os/exec says it, so that callers can tell the errno.
		return &os.PathError{Op: "fork/exec", Path: path, Err: errno}
	}
	return errors.New(text)
}

// readEnd reads the stage's last report, the program's wait status, to
// the end of the reports.
func (p *Process) readEnd(r *os.File) {
	defer close(p.read)
	defer r.Close()
	var msg [5]byte
	if _, err := io.ReadFull(r, msg[:]); err == nil && msg[0] == stage.ReportExited {
		p.status = syscall.WaitStatus(binary.LittleEndian.Uint32(msg[1:]))
		p.reported = true
	}
	_, _ = io.Copy(io.Discard, r)
}

// PIDMaxPerNamespace reports whether the kernel gives each PID namespace
// a pid_max of its own (Linux 6.14), which the stage sets to bound the
// processes of a sandbox.
var PIDMaxPerNamespace = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	_, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return err == nil && (major > 6 || major == 6 && minor >= 14)
})
