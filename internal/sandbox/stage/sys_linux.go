package stage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// What package syscall lacks, from the kernel's headers: system calls
// whose numbers are the same on every architecture, and prctl's and
// others' constants.
const (
	sysCloseRange           = 436
	sysLandlockAddRule      = 445
	sysLandlockRestrictSelf = 446

	closeRangeCloexec = 1 << 2

	prCapbsetRead        = 23
	prCapbsetDrop        = 24
	prSetChildSubreaper  = 36
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4

	linuxCapabilityVersion3 = 0x20080522

	seccompSetModeFilter = 1

	landlockRulePathBeneath = 1

	oPath = 0x200000 // O_PATH

	rlimitFsize = 1
	rlimitData  = 2
	rlimitNproc = 6
)

func prctl(option, arg uintptr) (uintptr, error) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// Restrict restricts the calling thread, for good, and every process
// started from it from then on: no_new_privs (which Landlock and seccomp
// require of an unprivileged caller, and a set-user-ID program gains no
// privileges under), no capability (DropCapabilities), the Landlock
// ruleset, and the system call filter when there is one (InstallFilter).
// The caller has locked its goroutine to the thread, never to unlock
// it.
func Restrict(ruleset int, filter []byte) error {
	if _, err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := DropCapabilities(); err != nil {
		return err
	}
	if _, _, errno := syscall.Syscall(sysLandlockRestrictSelf, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("enforcing the Landlock ruleset: %w", errno)
	}
	if len(filter) > 0 {
		return InstallFilter(filter)
	}
	return nil
}

// InstallFilter installs a system call filter on the calling thread, for
// good: the system calls of the thread, and of every process started
// from it from then on, go through it. The other threads of the process
// do not (no SECCOMP_FILTER_FLAG_TSYNC). filter is struct sock_filter
// after struct sock_filter, in the machine's byte order. The caller has
// locked its goroutine to the thread, never to unlock it, and has set
// no_new_privs on the thread, which the kernel requires of a caller
// without CAP_SYS_ADMIN.
func InstallFilter(filter []byte) error {
	const size = 8 // struct sock_filter
	if len(filter) == 0 || len(filter)%size != 0 || len(filter)/size > 4096 {
		return fmt.Errorf("installing the seccomp filter: %d bytes are no program", len(filter))
	}
	nr := sysSeccomp
	if nr < 0 {
		return fmt.Errorf("installing the seccomp filter: %w", errors.ErrUnsupported)
	}
	prog := struct {
		len    uint16
		filter unsafe.Pointer
	}{uint16(len(filter) / size), unsafe.Pointer(&filter[0])}
	_, _, errno := syscall.Syscall(uintptr(nr), seccompSetModeFilter, 0, uintptr(unsafe.Pointer(&prog)))
	if errno == syscall.EACCES {
		return fmt.Errorf("installing the seccomp filter: %w (no_new_privs is not set)", errno)
	}
	if errno != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", errno)
	}
	return nil
}

// DropCapabilities empties the calling thread's capability bounding set,
// and its inheritable and ambient sets, so that a program it starts has
// no capability even when the host runs as root: executing a program as
// root grants the bounding set, and capabilities such as CAP_SYS_PTRACE
// (another process's environment in /proc), CAP_SYS_ADMIN, CAP_SETUID,
// CAP_NET_RAW or CAP_DAC_OVERRIDE (any file the rules allow, whoever
// owns it) would reach around what the walls restrict. A thread without
// capabilities has nothing to drop.
func DropCapabilities() error {
	hdr := struct {
		version uint32
		pid     int32
	}{version: linuxCapabilityVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("reading capabilities: %w", errno)
	}
	if data[0].permitted == 0 && data[1].permitted == 0 && data[0].inheritable == 0 && data[1].inheritable == 0 && os.Geteuid() != 0 {
		return nil
	}
	for c := uintptr(0); c < 64; c++ {
		in, err := prctl(prCapbsetRead, c)
		if errors.Is(err, syscall.EINVAL) {
			break // past the last capability
		}
		if err == nil && in == 0 {
			continue // dropped already (a sandbox within a sandbox)
		}
		if _, err := prctl(prCapbsetDrop, c); err != nil {
			if errors.Is(err, syscall.EINVAL) {
				break // past the last capability
			}
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); errno != 0 && errno != syscall.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", errno)
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("clearing inheritable capabilities: %w", errno)
	}
	return nil
}

// SetLimits sets l on process pid (0: the calling one), whose children
// inherit it; ownUserNS says the process runs in a user namespace of its
// own, without which Processes is not set (see package sandbox's
// Limits). A limit lower than one already in force is kept; one higher
// is lowered to the hard limit in force, which an unprivileged process
// cannot raise.
func SetLimits(pid int, l Limits, ownUserNS bool) error {
	set := func(resource int, what string, v uint64) error {
		if v == 0 {
			return nil
		}
		var cur syscall.Rlimit
		if err := prlimit(pid, resource, nil, &cur); err != nil {
			return fmt.Errorf("reading the %s limit: %w", what, err)
		}
		v = min(v, cur.Max)
		if err := prlimit(pid, resource, &syscall.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("setting the %s limit: %w", what, err)
		}
		return nil
	}
	if err := set(rlimitData, "memory", l.Memory); err != nil {
		return err
	}
	if err := set(rlimitFsize, "file size", l.FileSize); err != nil {
		return err
	}
	if ownUserNS {
		return set(rlimitNproc, "process", l.Processes)
	}
	return nil
}

func prlimit(pid, resource int, limit, old *syscall.Rlimit) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(resource), uintptr(unsafe.Pointer(limit)), uintptr(unsafe.Pointer(old)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
