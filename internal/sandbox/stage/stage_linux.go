package stage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"
)

// How the host starts the stage: argv and environment.
const (
	Arg      = "--agenthost-sandbox-stage"
	Env      = "AGENTHOST_SANDBOX_STAGE"
	EnvValue = "1"
	// Name is the stage's argv[0], as ps shows it.
	Name = "agenthost-sandbox"
)

func init() {
	if len(os.Args) == 2 && os.Args[1] == Arg && os.Getenv(Env) == EnvValue {
		// Exited without the race detector's wait at exit, which
		// os.Exit would sit out.
		syscall.Exit(run())
	}
}

// run is the stage's life, as the package comment tells it, and returns
// its exit status. It runs in init, on the main thread, to which the
// runtime keeps it locked.
func run() int {
	report := os.NewFile(ReportFD, "report")
	fail := func(what byte, err error) int {
		var errno syscall.Errno
		errors.As(err, &errno)
		msg := []byte{ReportFailed, what, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(msg[2:], uint32(errno))
		_, _ = report.Write(append(msg, err.Error()...))
		return 1
	}
	// No descriptor the stage inherited reaches the program but those
	// the host gave it for the program, which it passes on itself.
	if _, _, errno := syscall.Syscall(sysCloseRange, 3, ^uintptr(0), closeRangeCloexec); errno != 0 {
		return fail(FailedProgram, fmt.Errorf("marking inherited descriptors close-on-exec: %w", errno))
	}
	var spec Spec
	specFile := os.NewFile(SpecFD, "spec")
	data, err := io.ReadAll(specFile)
	if err == nil {
		err = spec.UnmarshalBinary(data)
	}
	if err != nil {
		return fail(FailedProgram, fmt.Errorf("reading what to start: %w", err))
	}
	specFile.Close()

	if spec.Namespaces {
		if err := setUpNamespaces(&spec); err != nil {
			return fail(FailedWalls, err)
		}
	}
	if spec.Probe {
		_, _ = report.Write([]byte{ReportStarted})
		return 0
	}
	if !spec.Namespaces {
		if _, err := prctl(prSetChildSubreaper, 1); err != nil {
			return fail(FailedProgram, fmt.Errorf("becoming a child subreaper: %w", err))
		}
	}
	// The limits are the stage's, which the program inherits; a stage
	// built with the race detector gives them to the program alone, once
	// it runs (see RaceEnabled).
	if !RaceEnabled {
		if err := SetLimits(0, spec.Limits, spec.Namespaces); err != nil {
			return fail(FailedProgram, err)
		}
	}
	if err := addProcRules(RulesetFD, spec.ProcRules); err != nil {
		return fail(FailedProgram, err)
	}
	host := os.Getppid()
	// The stage itself enters the program's Landlock domain, in which it
	// may still signal the program and read /proc, and behind its
	// filter, which lets it reap, signal and report; it needs no
	// capability any more. The main thread, which the program's
	// parent-death signal is tied to, lives as long as the stage.
	if err := Restrict(RulesetFD, spec.Filter); err != nil {
		return fail(FailedProgram, err)
	}
	syscall.Close(RulesetFD)
	pid, err := spec.start()
	if err != nil {
		return fail(FailedProgram, err)
	}
	if RaceEnabled {
		if err := SetLimits(pid, spec.Limits, spec.Namespaces); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fail(FailedProgram, err)
		}
	}
	// The stage keeps no end of the program's stdio, which tells the
	// host that the program is done when the program closes it.
	if null, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0); err == nil {
		for fd := range 3 {
			_ = syscall.Dup3(null, fd, 0)
		}
		syscall.Close(null)
	}
	_, _ = report.Write([]byte{ReportStarted})

	// Passed on once the program runs, off the host's wait for it. Until
	// then the runtime's own handler ends the stage, and the program
	// with it (its parent-death signal). Handled, not ignored: an
	// ignored signal would stay ignored in the program.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	ended := make(chan syscall.WaitStatus, 1)
	b := NewBrood(pid, func(ws syscall.WaitStatus) { ended <- ws })
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
			_ = syscall.Kill(pid, sig.(syscall.Signal))
		case ws := <-ended:
			msg := []byte{ReportExited, 0, 0, 0, 0}
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

// start starts the program from the calling thread, and returns its pid.
func (s *Spec) start() (int, error) {
	files := []uintptr{0, 1, 2}
	for i := range s.Files {
		files = append(files, uintptr(FirstFile+i))
	}
	path := s.Path
	if s.Exec {
		// The child, before it executes the program, moves what it
		// needs to the descriptors from one past the highest of files
		// on (syscall.ForkExec's nextfd), where the program's own file
		// is: a copy above them stays put.
		next := max(len(files), FirstFile+s.Files) + 1
		fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(FirstFile+s.Files), syscall.F_DUPFD_CLOEXEC, uintptr(next+1))
		if errno != 0 {
			return 0, fmt.Errorf("keeping the program's file: %w", errno)
		}
		path = "/proc/self/fd/" + strconv.Itoa(int(fd))
	}
	if s.Dir != "" {
		// As os.StartProcess says it.
		if _, err := os.Stat(s.Dir); err != nil {
			return 0, err
		}
	}
	return syscall.ForkExec(path, s.Args, &syscall.ProcAttr{
		Dir: s.Dir, Env: s.Env, Files: files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
}

// setUpNamespaces sets up the stage's namespaces: a /proc of its PID
// namespace, mounted in its mount namespace, whose mounts go nowhere
// else; /etc's secrets covered (maskEtcSecrets); the processes of the
// PID namespace bounded (boundPIDs); and, in a network namespace of its
// own, the loopback interface up.
func setUpNamespaces(spec *Spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := maskEtcSecrets(spec.EtcSecrets); err != nil {
		return fmt.Errorf("covering /etc's secrets: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	boundPIDs(spec.Limits.Processes)
	if spec.PrivateNetwork {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface: %w", err)
		}
	}
	return nil
}

// MinPIDMax is the lowest pid_max the kernel takes.
const MinPIDMax = 301

// boundPIDs bounds the processes and threads of the stage's PID
// namespace, the stage's own among them, to limit (0: not at all; at
// least 300), by giving the namespace that pid_max: once its numbers are
// all in use, a fork fails. The bound counts every process whoever runs
// it (RLIMIT_NPROC counts none of root's), and costs one write; pid_max
// is the PID namespace's own from Linux 6.14. An older kernel refuses
// it, and the sandbox has RLIMIT_NPROC alone.
func boundPIDs(limit uint64) {
	if limit == 0 {
		return
	}
	// Numbers from 1 to pid_max-1.
	_ = os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.FormatUint(max(limit+1, MinPIDMax), 10)), 0)
}

// maskEtcSecrets covers each of paths, the secrets of /etc the sandbox
// could read, with an empty file or directory of mode 0, which a process
// without capabilities may not open, whoever it is. They come from a
// tmpfs mounted on /proc, which the /proc of the sandbox is mounted on
// next: the covers stay, and the tmpfs is out of sight.
func maskEtcSecrets(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if err := syscall.Mount("tmpfs", "/proc", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=4k,mode=0700"); err != nil {
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
		if err := syscall.Mount(cover, p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// loopbackUp brings up the interface lo.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	// struct ifreq: the name, then a union of 24 bytes whose first
	// member here is the flags.
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	ioctl := func(req uintptr) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return errno
		}
		return nil
	}
	if err := ioctl(syscall.SIOCGIFFLAGS); err != nil {
		return err
	}
	ifr.flags |= syscall.IFF_UP
	return ioctl(syscall.SIOCSIFFLAGS)
}

// addProcRules adds rules to the Landlock ruleset, once /proc is the
// stage's own; a path that does not exist is skipped.
func addProcRules(ruleset int, rules []ProcRule) error {
	for _, r := range rules {
		if err := addProcRule(ruleset, r); err != nil {
			return fmt.Errorf("sandbox rule on %s: %w", r.Path, err)
		}
	}
	return nil
}

func addProcRule(ruleset int, r ProcRule) error {
	fd, err := syscall.Open(r.Path, oPath|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	rights := r.FileRights
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		rights = r.DirRights
	}
	if rights == 0 {
		return nil
	}
	// struct landlock_path_beneath_attr, packed: the kernel reads its
	// first 12 bytes.
	attr := struct {
		allowed  uint64
		parentFD int32
	}{rights, int32(fd)}
	if _, _, errno := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), landlockRulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
