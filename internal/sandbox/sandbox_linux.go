package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/sandbox/stage"
)

var probe = sync.OnceValue(func() Support {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		var err error = errno
		switch errno {
		case syscall.ENOSYS:
			err = errors.New("the kernel was built without it")
		case syscall.EOPNOTSUPP:
			err = errors.New("it is not enabled (add landlock to the kernel's lsm= boot parameter)")
		}
		return Support{Err: err}
	}
	return Support{ABI: int(v)}
})

// Probe asks the kernel which Landlock ABI it supports (the
// landlock_create_ruleset version query), once per process.
func Probe() Support { return probe() }

// Rights of a rule on a directory, by Access, and which of them a rule on
// a file may carry.
const (
	fsRead    = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsExecute = unix.LANDLOCK_ACCESS_FS_EXECUTE
	fsWrite   = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REFER
	fsFileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is every file-system right the kernel knows at abi: all of
// them are denied unless a rule allows them.
func handledFS(abi int) uint64 {
	h := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // ABI 1: bits 0 to 12
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

func (a Access) rights() uint64 {
	var r uint64
	if a&Read != 0 {
		r |= fsRead
	}
	if a&Write != 0 {
		r |= fsWrite
	}
	if a&Execute != 0 {
		r |= fsExecute
	}
	if a&RemoveDir != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	}
	if a&List != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	return r
}

// ruleset builds the kernel's ruleset for p at abi and returns its file
// descriptor (close-on-exec). In a network namespace of its own
// (PrivateNetwork) a process may bind and connect TCP ports: they reach
// nothing outside.
func (p *Policy) ruleset(abi int) (int, error) {
	attr := unix.LandlockRulesetAttr{Access_fs: handledFS(abi)}
	if abi >= 4 && !p.PrivateNetwork {
		attr.Access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP
		if !p.Network {
			attr.Access_net |= unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	// The size tells the kernel which fields the caller knows: older
	// kernels reject fields they do not.
	size := unsafe.Sizeof(attr)
	switch {
	case abi < 4:
		size = unsafe.Offsetof(attr.Access_net)
	case abi < 6:
		size = unsafe.Offsetof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, fmt.Errorf("creating the Landlock ruleset: %w", errno)
	}
	for _, r := range p.rules() {
		if err := addRule(int(fd), r, attr.Access_fs); err != nil {
			unix.Close(int(fd))
			return -1, err
		}
	}
	return int(fd), nil
}

// rules are p's rules as the kernel gets them: nothing of p.Secrets
// (withoutSecrets), and a rule that lets the process read /etc becomes
// rules for every entry of /etc but its secrets, when it could read one
// and they are not covered already (etcMasked).
func (p *Policy) rules() []Rule {
	rules := withoutSecrets(p.Rules, p.Secrets)
	if p.etcMasked || len(etcSecretPaths()) == 0 {
		return rules
	}
	var out []Rule
	for _, r := range rules {
		if r.Path == "/etc" && r.File == nil && r.Access&^List == Read {
			out = append(out, etcRules()...)
			continue
		}
		out = append(out, r)
	}
	return out
}

// addRule adds r to the ruleset; a path that does not exist is skipped.
func addRule(ruleset int, r Rule, handled uint64) error {
	rights := r.Access.rights() & handled
	if rights == 0 {
		return nil
	}
	fd := -1
	if r.File != nil {
		fd = int(r.File.Fd())
	} else {
		var err error
		fd, err = unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox rule on %s: %w", r.Path, err)
		}
		defer unix.Close(fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox rule on %s: %w", r.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fsFileOnly
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	runtime.KeepAlive(r.File)
	if errno != 0 {
		return fmt.Errorf("sandbox rule on %s: %w", r.Path, errno)
	}
	return nil
}

// Start starts cmd inside p: the process begins, and stays, confined to
// what p allows, and so does every process it starts. Its walls:
//   - Landlock: the paths of p.Rules, TCP as p says (ABI 4), abstract
//     unix sockets and signals scoped to the sandbox (ABI 6);
//   - a system call filter (seccomp, see Filter), when the kernel has
//     one;
//   - no_new_privs, and no capability: a host running as root gives the
//     process none, not even those over files;
//   - with p.Isolate, namespaces of its own and p.Limits, through the
//     stage (see startStaged).
//
// It returns ErrUnsupported, starting nothing, when the kernel has no
// Landlock; the caller decides whether to run the command unconfined.
// On a kernel with an older ABI, what that ABI can restrict is
// (Support.Missing says what is not).
//
// The caller waits for the process with the Process's Wait (cmd's own,
// when there is no stage), and calls its Release once it has ended.
// The kernel sends a parent-death signal (SysProcAttr.Pdeathsig) when
// the thread that started the process ends, not when the host does; so
// the thread that started it, when cmd asks for such a signal (the stage
// always does), waits for Release before it ends.
func Start(cmd *exec.Cmd, p *Policy) (*Process, error) {
	s := Probe()
	if !s.Enforced() {
		return nil, ErrUnsupported
	}
	if p.Isolate {
		return startStaged(cmd, p)
	}
	keep := cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0
	release, err := onThread(keep, func() error { return startOnThisThread(cmd, p) })
	if err != nil {
		return nil, err
	}
	return &Process{cmd: cmd, release: release}, nil
}

// onThread runs start on a thread of its own (goLocked), and when start
// succeeds and keep is set, keeps the thread until the returned release
// is called.
func onThread(keep bool, start func() error) (release func(), err error) {
	done := make(chan error, 1)
	released := make(chan struct{})
	goLocked(func() {
		// The thread is never unlocked: once restricted, it must run
		// nothing else, and the runtime ends a thread whose goroutine
		// returns while locked to it. Threads the runtime makes later are
		// made by its template thread, not by this one, so they start
		// unrestricted.
		err := start()
		done <- err
		if err == nil && keep {
			<-released
		}
	})
	if err := <-done; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(released) }) }, nil
}

// goLocked runs f on a new goroutine locked to an OS thread that is not
// the process's main thread. The main thread is the thread-group leader:
// restricted, it would put the host itself in the sandbox's domain, and a
// sandboxed process may signal a process of its own domain (Landlock's
// signal scoping looks at the leader). A goroutine that lands on the main
// thread keeps it, so that f's goroutine cannot, until f's goroutine is
// locked to a thread of its own; then it lets the main thread go.
func goLocked(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// startOnThisThread starts cmd in p from the calling thread, which it
// restricts for good (see stage.Restrict).
func startOnThisThread(cmd *exec.Cmd, p *Policy) error {
	s := Probe()
	if !s.Enforced() {
		return ErrUnsupported
	}
	var filter []byte
	if SeccompSupport() == nil {
		var err error
		if filter, err = p.filter().raw(); err != nil {
			return err
		}
	}
	ruleset, err := p.ruleset(s.ABI)
	if err != nil {
		return err
	}
	defer unix.Close(ruleset)
	if err := stage.Restrict(ruleset, filter); err != nil {
		return err
	}
	return cmd.Start()
}
