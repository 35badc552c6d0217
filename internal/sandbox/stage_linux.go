package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The stage is the first process of a sandbox started with
// Policy.Isolate: the host's own executable again (/proc/self/exe),
// which this package's init recognises by stageArg and stageEnv, and
// runs as the stage before any other package of the program is
// initialised. The host starts it in new namespaces (a user namespace in
// which it keeps, for its set-up only, the capabilities to mount and to
// configure a network interface; a PID namespace, of which it is the
// first process; a mount namespace; and without the network, a network
// namespace), and it:
//
//  1. reads the program's description (stageSpec) from descriptor 3;
//  2. mounts a /proc of its own PID namespace, so that the program sees
//     no other process, and brings up the loopback interface of its own
//     network namespace;
//  3. sets the limits (SetLimits), which the program inherits;
//  4. starts the program from a thread of its own, in the Landlock
//     ruleset, behind the system call filter, without capabilities, as
//     Start does for a process without a stage;
//  5. reports on descriptor 4 that the program runs, or why it does not;
//  6. reaps what ends beneath it, passes on the signals that ask the
//     program to stop, and when the program has ended, reports its wait
//     status and exits. A PID namespace dies with its first process:
//     the kernel kills whatever the program left behind, whatever
//     session or group it moved to.
//
// The host gives the stage a parent-death signal, SIGKILL: a host that
// dies takes its sandboxes with it. Where the kernel allows no user
// namespace to an unprivileged process, the stage runs without
// namespaces (see namespaceSupport) as a child subreaper: what the
// program leaves behind is its child then, and it kills all of it when
// the program ends or the host dies (its parent-death signal is SIGTERM
// then, which it handles).
const (
	stageArg      = "--agenthost-sandbox-stage"
	stageEnv      = "AGENTHOST_SANDBOX_STAGE"
	stageEnvValue = "1"
	// stageName is the stage's argv[0], as ps shows it.
	stageName = "agenthost-sandbox"

	// The stage's reports on descriptor 4.
	reportStarted = 's' // the program runs
	reportFailed  = 'e' // then: a byte saying what failed, the errno (4 bytes little-endian, 0 for none) and the message, to the end
	reportExited  = 'x' // then: the program's wait status, 4 bytes little-endian

	// What failed, after reportFailed.
	failedWalls   = 'w' // setting up the namespaces
	failedProgram = 'p' // starting the program, or anything else
)

// stageSpec is what the host tells the stage of the program to start.
type stageSpec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	// Files is how many descriptors the program gets beyond 0, 1 and 2,
	// which the stage has at 5 and after, in order, and the program at 3
	// and after.
	Files int
	// Rules are the Landlock rules; File is the descriptor of the open
	// file of a rule, counted after Files (-1: none).
	Rules []stageRule
	// ExecRule, when not -1, is the rule whose open file the program
	// is: Path named the host's descriptor of it (/proc/self/fd/N), and
	// names the stage's.
	ExecRule    int
	Network     bool
	UnixSockets bool
	Limits      Limits
	// Namespaces: the stage was started in namespaces of its own, and
	// sets them up; PrivateNetwork: a network namespace among them.
	Namespaces     bool
	PrivateNetwork bool
	// Probe: set the namespaces up, report, and exit, starting nothing.
	Probe bool
}

type stageRule struct {
	Path   string
	Access Access
	File   int
}

func init() {
	if len(os.Args) == 2 && os.Args[1] == stageArg && os.Getenv(stageEnv) == stageEnvValue {
		// Exited without the race detector's wait at exit, which
		// os.Exit would sit out.
		syscall.Exit(stageMain())
	}
}

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
	proc, err := launchStage(&exec.Cmd{}, stageSpec{Probe: true, Namespaces: true, PrivateNetwork: true}, nil, true)
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
	spec := stageSpec{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Files:       len(cmd.ExtraFiles),
		Network:     p.Network,
		UnixSockets: p.UnixSockets,
		Limits:      p.Limits,
		Namespaces:  ns,
		// A process with the network shares the host's network
		// namespace: it connects where the host does.
		PrivateNetwork: p.PrivateNetwork || ns && !p.Network,
	}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	var ruleFiles []*os.File
	spec.ExecRule = -1
	for _, r := range p.Rules {
		sr := stageRule{Path: r.Path, Access: r.Access, File: -1}
		if r.File != nil {
			sr.File = len(ruleFiles)
			ruleFiles = append(ruleFiles, r.File)
			// A program executed through the host's descriptor of its
			// file (see host's openedBinary), which is close-on-exec:
			// the stage executes its own.
			if spec.Path == "/proc/self/fd/"+strconv.Itoa(int(r.File.Fd())) {
				spec.ExecRule = sr.File
			}
		}
		spec.Rules = append(spec.Rules, sr)
	}
	stage := &exec.Cmd{Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	return launchStage(stage, spec, append(slices.Clone(cmd.ExtraFiles), ruleFiles...), ns)
}

// launcher is a thread of the host's own, locked to a goroutine that
// never returns, that starts every stage: a stage's parent-death signal
// is tied to the thread that started it, which so lives as long as the
// host. Go's process starts take turns anyway (syscall.ForkLock).
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
// gives it spec, and waits for its first report. A kernel that refuses
// the namespaces is an errWalls.
func launchStage(cmd *exec.Cmd, spec stageSpec, files []*os.File, ns bool) (*Process, error) {
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
		// gets none (dropCapabilities).
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	} else {
		// Handled by the stage, which kills what the program left.
		attr.Pdeathsig = syscall.SIGTERM
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{stageName, stageArg}
	cmd.Env = []string{stageEnv + "=" + stageEnvValue}
	cmd.Dir = ""
	cmd.ExtraFiles = append([]*os.File{specR, reportW}, files...)
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
	err = json.NewEncoder(specW).Encode(spec)
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
	case reportStarted:
		return nil
	case reportFailed:
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
	case msg[0] == failedWalls:
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
	if _, err := io.ReadFull(r, msg[:]); err == nil && msg[0] == reportExited {
		p.status = syscall.WaitStatus(binary.LittleEndian.Uint32(msg[1:]))
		p.reported = true
	}
	_, _ = io.Copy(io.Discard, r)
}

// stageMain is the stage's life, as the comment on stageArg tells it,
// and returns its exit status.
func stageMain() int {
	report := os.NewFile(4, "report")
	fail := func(what byte, err error) int {
		var errno syscall.Errno
		errors.As(err, &errno)
		msg := []byte{reportFailed, what, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(msg[2:], uint32(errno))
		_, _ = report.Write(append(msg, err.Error()...))
		return 1
	}
	// No descriptor the stage inherited reaches the program but those
	// the host gave it for the program, which it passes on itself.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(failedProgram, fmt.Errorf("marking inherited descriptors close-on-exec: %w", err))
	}
	var spec stageSpec
	specFile := os.NewFile(3, "spec")
	if err := json.NewDecoder(specFile).Decode(&spec); err != nil {
		return fail(failedProgram, fmt.Errorf("reading what to start: %w", err))
	}
	specFile.Close()

	if spec.Namespaces {
		if err := setUpNamespaces(spec.PrivateNetwork, spec.Limits.Processes); err != nil {
			return fail(failedWalls, err)
		}
	}
	if spec.Probe {
		_, _ = report.Write([]byte{reportStarted})
		return 0
	}
	if !spec.Namespaces {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fail(failedProgram, fmt.Errorf("becoming a child subreaper: %w", err))
		}
	}
	// The limits are the stage's, which the program inherits; a stage
	// built with the race detector gives them to the program alone, once
	// it runs (see raceEnabled).
	if !raceEnabled {
		if err := SetLimits(spec.Limits, spec.Namespaces); err != nil {
			return fail(failedProgram, err)
		}
	}
	cmd, policy := spec.command()
	policy.etcMasked = spec.Namespaces
	// Handled, not ignored: an ignored signal would stay ignored in the
	// program.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	host := os.Getppid()
	if err := startOnThisThread(cmd, policy); err != nil {
		return fail(failedProgram, err)
	}
	if raceEnabled {
		if err := setLimitsOf(cmd.Process.Pid, spec.Limits, spec.Namespaces); err != nil {
			_ = cmd.Process.Kill()
			return fail(failedProgram, err)
		}
	}
	// The stage keeps no end of the program's stdio, which tells the
	// host that the program is done when the program closes it.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := range 3 {
			_ = unix.Dup3(int(null.Fd()), fd, 0)
		}
		null.Close()
	}
	_, _ = report.Write([]byte{reportStarted})

	ended := make(chan syscall.WaitStatus, 1)
	b := NewBrood(cmd.Process.Pid, func(ws syscall.WaitStatus) { ended <- ws })
	go b.Reap()
	for {
		select {
		case sig := <-sigs:
			if !spec.Namespaces && os.Getppid() != host {
				// The host died (SIGTERM is the stage's parent-death
				// signal without namespaces): nothing is left to serve.
				b.KillAll()
				return 0
			}
			_ = cmd.Process.Signal(sig)
		case ws := <-ended:
			msg := []byte{reportExited, 0, 0, 0, 0}
			binary.LittleEndian.PutUint32(msg[1:], uint32(ws))
			_, _ = report.Write(msg)
			if !spec.Namespaces {
				b.KillAll()
			}
			// The first process of a PID namespace takes the rest with
			// it.
			return 0
		}
	}
}

// startOnThisThread starts cmd in policy from the calling thread, which
// it restricts for good, as Start does on a thread of its own. The stage
// calls it from its init, which runs on the main thread, locked to it:
// the stage itself enters the program's Landlock domain, in which it may
// still signal the program and read /proc, and behind its filter, which
// lets it reap, signal and report; it needs no capability any more. A
// thread the program's parent-death signal is tied to lives as long as
// the stage.
func startOnThisThread(cmd *exec.Cmd, p *Policy) error {
	s := Probe()
	if !s.Enforced() {
		return ErrUnsupported
	}
	ruleset, err := p.ruleset(s.ABI)
	if err != nil {
		return err
	}
	defer unix.Close(ruleset)
	var filter *Filter
	if SeccompSupport() == nil {
		f := p.filter()
		filter = &f
	}
	return startRestricted(cmd, ruleset, filter)
}

// command is the program to start, and its policy.
func (spec *stageSpec) command() (*exec.Cmd, *Policy) {
	path := spec.Path
	if spec.ExecRule >= 0 {
		path = "/proc/self/fd/" + strconv.Itoa(5+spec.Files+spec.ExecRule)
	}
	cmd := &exec.Cmd{
		Path: path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	for i := range spec.Files {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(5+i), "program file"))
	}
	p := &Policy{Network: spec.Network, UnixSockets: spec.UnixSockets, PrivateNetwork: spec.PrivateNetwork}
	for _, r := range spec.Rules {
		rule := Rule{Path: r.Path, Access: r.Access}
		if r.File >= 0 {
			rule.File = os.NewFile(uintptr(5+spec.Files+r.File), r.Path)
		}
		p.Rules = append(p.Rules, rule)
	}
	return cmd, p
}

// setUpNamespaces sets up the stage's namespaces: a /proc of its PID
// namespace, mounted in its mount namespace, whose mounts go nowhere
// else; /etc's secrets covered (maskEtcSecrets); the processes of the
// PID namespace bounded (boundPIDs); and, in a network namespace of its
// own, the loopback interface up.
func setUpNamespaces(privateNetwork bool, processes uint64) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := maskEtcSecrets(etcSecretPaths()); err != nil {
		return fmt.Errorf("covering /etc's secrets: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	boundPIDs(processes)
	if privateNetwork {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface: %w", err)
		}
	}
	return nil
}

// minPIDMax is the lowest pid_max the kernel takes.
const minPIDMax = 301

// boundPIDs bounds the processes and threads of the stage's PID namespace,
// the stage's own among them, to limit (0: not at all; at least 300), by giving the
// namespace that pid_max: once its numbers are all in use, a fork fails.
// The bound counts every process whoever runs it (RLIMIT_NPROC counts
// none of root's), and costs one write; pid_max is the PID namespace's
// own from Linux 6.14. An older kernel refuses it, and the sandbox has
// RLIMIT_NPROC alone.
func boundPIDs(limit uint64) {
	if limit == 0 {
		return
	}
	// Numbers from 1 to pid_max-1.
	_ = os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.FormatUint(max(limit+1, minPIDMax), 10)), 0)
}

// PIDMaxPerNamespace reports whether the kernel gives each PID namespace
// a pid_max of its own (Linux 6.14), which boundPIDs sets.
var PIDMaxPerNamespace = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	_, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return err == nil && (major > 6 || major == 6 && minor >= 14)
})

// maskEtcSecrets covers each of paths, the secrets of /etc the sandbox
// could read, with an empty file or directory of mode 0, which a process
// without capabilities may not open, whoever it is. They come from a
// tmpfs mounted on /proc, which the /proc of the sandbox is mounted on
// next: the covers stay, and the tmpfs is out of sight.
func maskEtcSecrets(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if err := unix.Mount("tmpfs", "/proc", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0700"); err != nil {
		return err
	}
	file, dir := "/proc/masked-file", "/proc/masked-dir"
	if err := os.WriteFile(file, nil, 0); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0); err != nil {
		return err
	}
	for _, p := range paths {
		cover := file
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			cover = dir
		}
		if err := unix.Mount(cover, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// loopbackUp brings up the interface lo.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
