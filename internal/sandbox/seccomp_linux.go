//go:build amd64 || arm64

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/sandbox/stage"
)

// arch is what the filter needs to know of the running architecture;
// native, in the file of each architecture, is the running one's.
type arch struct {
	// audit is seccomp_data.arch for the architecture's own system
	// calls.
	audit uint32
	// x32 is set where numbers with x32Bit set are another ABI's system
	// calls under the same audit arch (amd64).
	x32 bool
	// denied are the architecture's own system calls to deny, besides
	// deniedSyscalls.
	denied []uint32
}

// Offsets in struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }, which the kernel hands the
// program and a load reads in the machine's byte order. Both
// architectures are little-endian: an argument's low 32 bits come first.
// An argument of type int or unsigned int is those 32 bits; the kernel
// ignores the rest.
const (
	dataNr   = 0
	dataArch = 4
	dataArgs = 16

	x32Bit = 0x40000000 // __X32_SYSCALL_BIT
)

// deniedSyscalls fail with EPERM on every architecture.
var deniedSyscalls = []uint32{
	// Other processes: their memory, their kernel objects.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	// Programs in the kernel, and the kernel's widest attack surfaces.
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// Another kernel, modules.
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	// The machine: reboot, swap.
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	// Mounts, old and new API (open_tree_attr is open_tree's successor),
	// and joining namespaces.
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_SETNS,
	// The kernel's keyrings, which are not namespaced.
	unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
	// Accounting and quotas.
	unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD,
	// The clock.
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	// The kernel log, the terminal.
	unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	// Files by handle: any file of a file system, whatever its path.
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
}

// Values of arguments the program tests.
const (
	// namespaceFlags are the clone and unshare flags that make a
	// namespace.
	namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
		unix.CLONE_NEWNET | unix.CLONE_NEWTIME

	// Personalities a process may take, as Docker's default profile
	// allows: Linux, 32-bit Linux, a 2.6 uname, both, and the query
	// (0xffffffff), which changes nothing.
	perLinux        = 0x0
	perLinux32      = 0x8
	perUname26      = 0x20000
	perLinux32Uname = perLinux32 | perUname26
	perQuery        = 0xffffffff

	sockTypeMask = 0xf // SOCK_TYPE_MASK: the type without SOCK_NONBLOCK and SOCK_CLOEXEC
)

// The program's shared returns.
const (
	allow  label = "allow"
	eperm  label = "eperm"
	enosys label = "enosys"
)

// Program returns the filter's BPF program for the running architecture:
// instructions for x/net/bpf's VM, or for bpf.Assemble and the kernel.
func (f Filter) Program() ([]bpf.Instruction, error) { return f.program(native) }

func (f Filter) program(a arch) ([]bpf.Instruction, error) {
	unixSockets, udp := eperm, eperm
	if f.UnixSockets {
		unixSockets = allow
	}
	if f.UDP {
		udp = allow
	}
	p := []bpf.Instruction{
		// 1. System calls of another ABI (on amd64, 32-bit x86's int
		// 0x80) have numbers of their own: none of them.
		bpf.LoadAbsolute{Off: dataArch, Size: 4},
		jumpIf(bpf.JumpNotEqual, a.audit, enosys),
		// 2. The system call's number, which stays in A until a rule
		// below loads an argument, and then returns on every path.
		bpf.LoadAbsolute{Off: dataNr, Size: 4},
	}
	if a.x32 {
		p = append(p, jumpIf(bpf.JumpBitsSet, x32Bit, enosys))
	}
	// 3. The denied system calls.
	for _, nr := range slices.Concat(deniedSyscalls, a.denied) {
		p = append(p, jumpIf(bpf.JumpEqual, nr, eperm))
	}
	p = append(p,
		// 4. No new namespace. clone3 takes its flags in memory, which
		// the filter cannot read: ENOSYS sends the C library and Go
		// back to clone.
		jumpIf(bpf.JumpEqual, unix.SYS_UNSHARE, "namespaces"),
		jumpIf(bpf.JumpEqual, unix.SYS_CLONE, "namespaces"),
		jumpIf(bpf.JumpEqual, unix.SYS_CLONE3, enosys),
		// 5. Only the harmless personalities.
		jumpIf(bpf.JumpEqual, unix.SYS_PERSONALITY, "personality"),
		// 6. No input pushed into a terminal.
		jumpIf(bpf.JumpEqual, unix.SYS_IOCTL, "ioctl"),
		// 7. Sockets of the families the filter allows.
		jumpIf(bpf.JumpEqual, unix.SYS_SOCKET, "socket"),
		// 8. Everything else.
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},

		label("namespaces"),
		arg(0), // flags, on both architectures
		jumpIf(bpf.JumpBitsSet, namespaceFlags, eperm),
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},

		label("personality"),
		arg(0), // persona
		jumpIf(bpf.JumpEqual, perLinux, allow),
		jumpIf(bpf.JumpEqual, perLinux32, allow),
		jumpIf(bpf.JumpEqual, perUname26, allow),
		jumpIf(bpf.JumpEqual, perLinux32Uname, allow),
		jumpIf(bpf.JumpEqual, perQuery, allow),
		retErrno(unix.EPERM),

		label("ioctl"),
		arg(1), // request
		jumpIf(bpf.JumpEqual, unix.TIOCSTI, eperm),
		jumpIf(bpf.JumpEqual, unix.TIOCLINUX, eperm),
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},

		label("socket"),
		arg(0), // domain
		jumpIf(bpf.JumpEqual, unix.AF_UNIX, unixSockets),
		jumpIf(bpf.JumpEqual, unix.AF_INET, "inet"),
		jumpIf(bpf.JumpEqual, unix.AF_INET6, "inet"),
		jumpIf(bpf.JumpEqual, unix.AF_NETLINK, "netlink"),
		retErrno(unix.EAFNOSUPPORT),

		label("inet"),
		arg(1), // type
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
		jumpIf(bpf.JumpEqual, unix.SOCK_STREAM, "stream"),
		jumpIf(bpf.JumpEqual, unix.SOCK_DGRAM, udp),
		retErrno(unix.EPERM), // raw sockets and the rest

		// A stream socket is TCP's: not SCTP's or MPTCP's, which
		// Landlock's TCP rules do not cover.
		label("stream"),
		arg(2), // protocol
		jumpIf(bpf.JumpEqual, 0, allow),
		jumpIf(bpf.JumpEqual, unix.IPPROTO_TCP, allow),
		retErrno(unix.EPERM),

		label("netlink"),
		arg(2), // protocol
		jumpIf(bpf.JumpEqual, unix.NETLINK_ROUTE, allow),
		retErrno(unix.EPERM),

		allow,
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		eperm,
		retErrno(unix.EPERM),
		enosys,
		retErrno(unix.ENOSYS),
	)
	return link(p)
}

// arg loads the low 32 bits of the system call's argument i.
func arg(i uint32) bpf.LoadAbsolute { return bpf.LoadAbsolute{Off: dataArgs + 8*i, Size: 4} }

// retErrno fails the system call with e, without running it.
func retErrno(e unix.Errno) bpf.RetConstant {
	return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA}
}

// label names the place of the instruction that follows it, for
// jumpIf; link removes it.
type label string

// jump is a conditional jump to a label, which link turns into a
// bpf.JumpIf: when A Cond Val holds, the program goes on at the label,
// else at the next instruction.
type jump struct {
	cond bpf.JumpTest
	val  uint32
	to   label
}

func jumpIf(cond bpf.JumpTest, val uint32, to label) jump { return jump{cond, val, to} }

// Assemble fails: link replaces labels and jumps before anything
// assembles the program.
func (l label) Assemble() (bpf.RawInstruction, error) {
	return bpf.RawInstruction{}, fmt.Errorf("label %q not linked", string(l))
}

// Assemble fails, as label's does.
func (j jump) Assemble() (bpf.RawInstruction, error) {
	return bpf.RawInstruction{}, fmt.Errorf("jump to %q not linked", string(j.to))
}

// link resolves p's jumps to its labels, and drops the labels. A
// conditional jump goes forward at most 255 instructions.
func link(p []bpf.Instruction) ([]bpf.Instruction, error) {
	at := map[label]int{}
	var out []bpf.Instruction
	for _, ins := range p {
		if l, ok := ins.(label); ok {
			if _, dup := at[l]; dup {
				return nil, fmt.Errorf("seccomp program: label %q twice", string(l))
			}
			at[l] = len(out)
			continue
		}
		out = append(out, ins)
	}
	for i, ins := range out {
		j, ok := ins.(jump)
		if !ok {
			continue
		}
		to, ok := at[j.to]
		if !ok {
			return nil, fmt.Errorf("seccomp program: no label %q", string(j.to))
		}
		skip := to - i - 1
		if skip < 0 || skip > 255 {
			return nil, fmt.Errorf("seccomp program: jump from %d to %q at %d", i, string(j.to), to)
		}
		out[i] = bpf.JumpIf{Cond: j.cond, Val: j.val, SkipTrue: uint8(skip)}
	}
	return out, nil
}

// InstallFilter installs f on the calling thread, for good (see
// stage.InstallFilter).
func InstallFilter(f Filter) error {
	raw, err := f.raw()
	if err != nil {
		return err
	}
	return stage.InstallFilter(raw)
}

// assembled are the filters assembled so far, by Filter.
var assembled sync.Map

// raw returns f as the kernel takes it: struct sock_filter after struct
// sock_filter, in the machine's byte order.
func (f Filter) raw() ([]byte, error) {
	if raw, ok := assembled.Load(f); ok {
		return raw.([]byte), nil
	}
	p, err := f.Program()
	if err != nil {
		return nil, err
	}
	insts, err := bpf.Assemble(p)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	raw := make([]byte, 0, 8*len(insts))
	for _, in := range insts {
		raw = binary.NativeEndian.AppendUint16(raw, in.Op)
		raw = append(raw, in.Jt, in.Jf)
		raw = binary.NativeEndian.AppendUint32(raw, in.K)
	}
	assembled.Store(f, raw)
	return raw, nil
}

var seccompProbe = sync.OnceValue(func() error {
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%w: the kernel was built without seccomp", errors.ErrUnsupported)
		}
		return fmt.Errorf("asking for the seccomp mode: %w", err)
	}
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	switch errno {
	case 0:
		return nil
	case unix.ENOSYS:
		return fmt.Errorf("%w: the kernel has no seccomp system call (Linux 3.17 brought it)", errors.ErrUnsupported)
	case unix.EINVAL:
		return fmt.Errorf("%w: the kernel cannot list its seccomp actions (Linux 4.14 can)", errors.ErrUnsupported)
	case unix.EOPNOTSUPP:
		return fmt.Errorf("%w: the kernel's seccomp has no SECCOMP_RET_ERRNO", errors.ErrUnsupported)
	}
	return fmt.Errorf("asking for seccomp's SECCOMP_RET_ERRNO: %w", errno)
})

// SeccompSupport reports whether the kernel offers seccomp filters that
// fail a system call with an error number (SECCOMP_RET_ERRNO), which
// InstallFilter needs: nil if it does, else an error saying why not,
// wrapping errors.ErrUnsupported when the kernel lacks them. It asks the
// kernel once per process (prctl PR_GET_SECCOMP, then seccomp
// SECCOMP_GET_ACTION_AVAIL).
func SeccompSupport() error { return seccompProbe() }
