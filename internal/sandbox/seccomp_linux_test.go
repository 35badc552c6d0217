//go:build amd64 || arm64

package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var (
	retAllow        = uint32(unix.SECCOMP_RET_ALLOW)
	retEPERM        = uint32(unix.SECCOMP_RET_ERRNO | unix.EPERM)
	retENOSYS       = uint32(unix.SECCOMP_RET_ERRNO | unix.ENOSYS)
	retEAFNOSUPPORT = uint32(unix.SECCOMP_RET_ERRNO | unix.EAFNOSUPPORT)
)

// filters are the four combinations of the options.
var filters = []Filter{{}, {UnixSockets: true}, {UDP: true}, {UnixSockets: true, UDP: true}}

// seccompData lays out struct seccomp_data as the kernel hands it to the
// filter on a little-endian machine, for the native architecture when
// arch is 0.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	if arch == 0 {
		arch = native.audit
	}
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], nr)
	binary.LittleEndian.PutUint32(b[4:], arch)
	binary.LittleEndian.PutUint64(b[8:], 0x7f0000001234) // instruction_pointer
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// runFilter runs the program on data in x/net/bpf's VM. The VM loads
// words big-endian (network order) where the kernel loads them in the
// machine's order, so each 32-bit word's bytes are reversed first.
func runFilter(t *testing.T, vm *bpf.VM, data []byte) uint32 {
	t.Helper()
	in := make([]byte, len(data))
	for i := 0; i < len(data); i += 4 {
		binary.BigEndian.PutUint32(in[i:], binary.LittleEndian.Uint32(data[i:]))
	}
	ret, err := vm.Run(in)
	if err != nil {
		t.Fatalf("VM: %v", err)
	}
	return uint32(ret)
}

func filterVM(t *testing.T, f Filter) *bpf.VM {
	t.Helper()
	p, err := f.Program()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(p)
	if err != nil {
		t.Fatalf("the program does not assemble: %v", err)
	}
	return vm
}

// What a case expects, by filter.
func always(r uint32) func(Filter) uint32 { return func(Filter) uint32 { return r } }

func unixOr(r uint32) func(Filter) uint32 {
	return func(f Filter) uint32 {
		if f.UnixSockets {
			return retAllow
		}
		return r
	}
}

func udpOr(r uint32) func(Filter) uint32 {
	return func(f Filter) uint32 {
		if f.UDP {
			return retAllow
		}
		return r
	}
}

// deniedByName is the deny list, written out apart from the program's.
var deniedByName = map[string]uint32{
	"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "kcmp": unix.SYS_KCMP,
	"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd": unix.SYS_USERFAULTFD, "io_uring_setup": unix.SYS_IO_URING_SETUP,
	"io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
	"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE,
	"delete_module": unix.SYS_DELETE_MODULE, "reboot": unix.SYS_REBOOT,
	"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "mount": unix.SYS_MOUNT,
	"umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
	"move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "fsopen": unix.SYS_FSOPEN,
	"fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
	"mount_setattr": unix.SYS_MOUNT_SETATTR, "setns": unix.SYS_SETNS,
	"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
	"keyctl": unix.SYS_KEYCTL, "acct": unix.SYS_ACCT, "quotactl": unix.SYS_QUOTACTL,
	"quotactl_fd": unix.SYS_QUOTACTL_FD, "settimeofday": unix.SYS_SETTIMEOFDAY,
	"clock_settime": unix.SYS_CLOCK_SETTIME, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
	"adjtimex": unix.SYS_ADJTIMEX, "syslog": unix.SYS_SYSLOG, "vhangup": unix.SYS_VHANGUP,
	"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
}

type filterCase struct {
	arch uint32 // 0: the native one
	nr   uint32
	args []uint64
	want func(Filter) uint32
}

func filterCases() map[string]filterCase {
	foreign := uint32(unix.AUDIT_ARCH_AARCH64)
	if native.audit == foreign {
		foreign = unix.AUDIT_ARCH_X86_64
	}
	x32 := retAllow // arm64 has no x32: the kernel itself answers ENOSYS
	if native.x32 {
		x32 = retENOSYS
	}
	c := map[string]filterCase{
		"i386 getpid":             {arch: unix.AUDIT_ARCH_I386, nr: 20, want: always(retENOSYS)},
		"i386 socketcall":         {arch: unix.AUDIT_ARCH_I386, nr: 102, args: []uint64{1}, want: always(retENOSYS)},
		"arm getpid":              {arch: unix.AUDIT_ARCH_ARM, nr: 20, want: always(retENOSYS)},
		"the other 64-bit arch":   {arch: foreign, nr: unix.SYS_GETPID, want: always(retENOSYS)},
		"x32 getpid":              {nr: unix.SYS_GETPID | x32Bit, want: always(x32)},
		"x32 ptrace":              {nr: unix.SYS_PTRACE | x32Bit, want: always(x32)},
		"getpid":                  {nr: unix.SYS_GETPID, want: always(retAllow)},
		"getppid":                 {nr: unix.SYS_GETPPID, want: always(retAllow)},
		"read":                    {nr: unix.SYS_READ, args: []uint64{0, 0, 1}, want: always(retAllow)},
		"openat":                  {nr: unix.SYS_OPENAT, want: always(retAllow)},
		"execve":                  {nr: unix.SYS_EXECVE, want: always(retAllow)},
		"a number past the table": {nr: 1000, want: always(retAllow)},

		"unshare files":                  {nr: unix.SYS_UNSHARE, args: []uint64{unix.CLONE_FILES}, want: always(retAllow)},
		"unshare nothing":                {nr: unix.SYS_UNSHARE, args: []uint64{0}, want: always(retAllow)},
		"unshare fs and net":             {nr: unix.SYS_UNSHARE, args: []uint64{unix.CLONE_FS | unix.CLONE_NEWNET}, want: always(retEPERM)},
		"unshare, flag in the high half": {nr: unix.SYS_UNSHARE, args: []uint64{unix.CLONE_NEWUSER << 32}, want: always(retAllow)},
		"clone as os/exec":               {nr: unix.SYS_CLONE, args: []uint64{unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD | uint64(unix.SIGCHLD)}, want: always(retAllow)},
		"clone a thread": {nr: unix.SYS_CLONE, args: []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES |
			unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD}, want: always(retAllow)},
		"clone a pid namespace": {nr: unix.SYS_CLONE, args: []uint64{unix.CLONE_NEWPID | uint64(unix.SIGCHLD)}, want: always(retEPERM)},
		"clone3":                {nr: unix.SYS_CLONE3, args: []uint64{0x7f0000000000, 88}, want: always(retENOSYS)},

		"personality linux":             {nr: unix.SYS_PERSONALITY, args: []uint64{0}, want: always(retAllow)},
		"personality linux32":           {nr: unix.SYS_PERSONALITY, args: []uint64{0x8}, want: always(retAllow)},
		"personality uname26":           {nr: unix.SYS_PERSONALITY, args: []uint64{0x20000}, want: always(retAllow)},
		"personality linux32 uname26":   {nr: unix.SYS_PERSONALITY, args: []uint64{0x20008}, want: always(retAllow)},
		"personality query":             {nr: unix.SYS_PERSONALITY, args: []uint64{0xffffffff}, want: always(retAllow)},
		"personality query, 64 bits":    {nr: unix.SYS_PERSONALITY, args: []uint64{^uint64(0)}, want: always(retAllow)},
		"personality no randomizing":    {nr: unix.SYS_PERSONALITY, args: []uint64{0x0040000}, want: always(retEPERM)},
		"personality read implies exec": {nr: unix.SYS_PERSONALITY, args: []uint64{0x0400000}, want: always(retEPERM)},
		"personality bsd":               {nr: unix.SYS_PERSONALITY, args: []uint64{0x6}, want: always(retEPERM)},

		"ioctl TIOCSTI":                {nr: unix.SYS_IOCTL, args: []uint64{0, unix.TIOCSTI}, want: always(retEPERM)},
		"ioctl TIOCLINUX":              {nr: unix.SYS_IOCTL, args: []uint64{0, unix.TIOCLINUX}, want: always(retEPERM)},
		"ioctl TIOCSTI, high bits set": {nr: unix.SYS_IOCTL, args: []uint64{0, 1<<32 | unix.TIOCSTI}, want: always(retEPERM)},
		"ioctl TCGETS":                 {nr: unix.SYS_IOCTL, args: []uint64{0, unix.TCGETS}, want: always(retAllow)},
		"ioctl on fd 0x5412":           {nr: unix.SYS_IOCTL, args: []uint64{unix.TIOCSTI, unix.TCGETS}, want: always(retAllow)},

		"socket unix":                 {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, want: unixOr(retEPERM)},
		"socket unix dgram cloexec":   {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, want: unixOr(retEPERM)},
		"socket unix, high bits set":  {nr: unix.SYS_SOCKET, args: []uint64{1<<32 | unix.AF_UNIX, unix.SOCK_STREAM}, want: unixOr(retEPERM)},
		"socket tcp":                  {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_STREAM}, want: always(retAllow)},
		"socket tcp nonblock cloexec": {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP}, want: always(retAllow)},
		"socket tcp6":                 {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET6, unix.SOCK_STREAM}, want: always(retAllow)},
		"socket mptcp":                {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, want: always(retEPERM)},
		"socket sctp stream":          {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, want: always(retEPERM)},
		"socket udp":                  {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_DGRAM}, want: udpOr(retEPERM)},
		"socket udp6 nonblock":        {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK}, want: udpOr(retEPERM)},
		"socket raw":                  {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, want: always(retEPERM)},
		"socket raw6":                 {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6}, want: always(retEPERM)},
		"socket inet seqpacket":       {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP}, want: always(retEPERM)},
		"socket netlink route":        {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}, want: always(retAllow)},
		"socket netlink audit":        {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, want: always(retEPERM)},
		"socket netlink sock_diag":    {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_SOCK_DIAG}, want: always(retEPERM)},
		"socket packet":               {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_PACKET, unix.SOCK_RAW}, want: always(retEAFNOSUPPORT)},
		"socket unspec":               {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_UNSPEC, unix.SOCK_STREAM}, want: always(retEAFNOSUPPORT)},
		"socket vsock":                {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, want: always(retEAFNOSUPPORT)},
		"socket alg":                  {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, want: always(retEAFNOSUPPORT)},
		"socket bluetooth":            {nr: unix.SYS_SOCKET, args: []uint64{unix.AF_BLUETOOTH, unix.SOCK_STREAM}, want: always(retEAFNOSUPPORT)},
		"socketpair unix":             {nr: unix.SYS_SOCKETPAIR, args: []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, want: always(retAllow)},
	}
	for name, flag := range map[string]uint64{
		"mount": unix.CLONE_NEWNS, "cgroup": unix.CLONE_NEWCGROUP, "uts": unix.CLONE_NEWUTS,
		"ipc": unix.CLONE_NEWIPC, "user": unix.CLONE_NEWUSER, "pid": unix.CLONE_NEWPID,
		"net": unix.CLONE_NEWNET, "time": unix.CLONE_NEWTIME,
	} {
		c["unshare a "+name+" namespace"] = filterCase{nr: unix.SYS_UNSHARE, args: []uint64{flag}, want: always(retEPERM)}
		c["clone into a "+name+" namespace"] = filterCase{nr: unix.SYS_CLONE, args: []uint64{flag | uint64(unix.SIGCHLD)}, want: always(retEPERM)}
	}
	for name, nr := range deniedByName {
		c[name] = filterCase{nr: nr, want: always(retEPERM)}
	}
	for _, nr := range native.denied {
		c[fmt.Sprintf("%s's own %d", runtime.GOARCH, nr)] = filterCase{nr: nr, want: always(retEPERM)}
	}
	return c
}

func TestFilterProgram(t *testing.T) {
	t.Parallel()
	vms := map[Filter]*bpf.VM{}
	for _, f := range filters {
		vms[f] = filterVM(t, f)
	}
	for name, c := range filterCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, f := range filters {
				got := runFilter(t, vms[f], seccompData(c.arch, c.nr, c.args...))
				if want := c.want(f); got != want {
					t.Errorf("%+v: got %#x, want %#x", f, got, want)
				}
			}
		})
	}
}

// TestFilterProgramArguments checks which system calls the program looks
// at the arguments of: the others it answers by their number alone,
// which lets the kernel's action cache (Linux 5.11) allow them without
// running the program.
func TestFilterProgramArguments(t *testing.T) {
	t.Parallel()
	byArguments := map[uint32]bool{
		unix.SYS_UNSHARE: true, unix.SYS_CLONE: true, unix.SYS_PERSONALITY: true,
		unix.SYS_IOCTL: true, unix.SYS_SOCKET: true,
	}
	// Between them, these make each of the five answer two ways.
	argSets := [][]uint64{
		{},
		{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)},
		{0x0040000, unix.TIOCSTI},
		{unix.AF_INET, unix.SOCK_STREAM},
		{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT, 7, 8, 9},
	}
	for _, f := range filters {
		vm := filterVM(t, f)
		for nr := uint32(0); nr < 600; nr++ {
			answers := map[uint32]bool{}
			for _, args := range argSets {
				answers[runFilter(t, vm, seccompData(0, nr, args...))] = true
			}
			if (len(answers) > 1) != byArguments[nr] {
				t.Errorf("%+v: system call %d: answers %v", f, nr, answers)
			}
		}
	}
}

func TestFilterProgramShape(t *testing.T) {
	t.Parallel()
	for _, f := range filters {
		p, err := f.Program()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := bpf.Assemble(p)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel takes up to 4096 (BPF_MAXINSNS); the program stays
		// a short list.
		if len(raw) > 256 {
			t.Errorf("%+v: %d instructions", f, len(raw))
		}
		for i, ins := range p {
			if l, ok := ins.(bpf.LoadAbsolute); ok && (l.Size != 4 || l.Off%4 != 0 || l.Off >= 64) {
				t.Errorf("%+v: instruction %d loads outside seccomp_data's words: %v", f, i, l)
			}
		}
		if f == (Filter{}) {
			t.Logf("%d instructions", len(raw))
		}
	}
	if _, err := link([]bpf.Instruction{jumpIf(bpf.JumpEqual, 1, "nowhere"), bpf.RetA{}}); err == nil {
		t.Error("link accepted a jump to no label")
	}
	if _, err := link([]bpf.Instruction{label("back"), bpf.RetA{}, jumpIf(bpf.JumpEqual, 1, "back"), bpf.RetA{}}); err == nil {
		t.Error("link accepted a jump backwards")
	}
}

func TestSeccompSupport(t *testing.T) {
	if err := SeccompSupport(); err != nil {
		t.Fatalf("this kernel has no seccomp filters (%v): the tests run for real or fail", err)
	}
}

// seccompTestEnv makes the test binary a helper process: "filter" (with
// ",unix" and ",udp" for the options) installs the filter on a thread and
// reports what system calls get there; "child" reports what they get in
// a process started from that thread. TestMain is another file's, so an
// init function looks for it.
const seccompTestEnv = "SANDBOX_SECCOMP_TEST"

func init() {
	mode, ok := os.LookupEnv(seccompTestEnv)
	if !ok {
		return
	}
	switch opts := strings.Split(mode, ","); opts[0] {
	case "filter":
		var f Filter
		for _, o := range opts[1:] {
			f.UnixSockets = f.UnixSockets || o == "unix"
			f.UDP = f.UDP || o == "udp"
		}
		filteredHelper(f)
	case "child":
		fmt.Printf("child socket unix: %s\n", outcome(probeSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0)))
		fmt.Printf("child seccomp: %s\n", seccompMode())
	}
	os.Exit(0)
}

// filteredHelper installs f on a thread of its own and, from it, makes
// the system calls of seccompProbes, starts a child, and asks another
// thread, printing what each gets.
func filteredHelper(f Filter) {
	done := make(chan struct{})
	goLocked(func() {
		defer close(done)
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Println("install:", err)
			return
		}
		if err := InstallFilter(f); err != nil {
			fmt.Println("install:", err)
			return
		}
		fmt.Println("install: ok")
		fmt.Println("seccomp:", seccompMode())
		for _, p := range seccompProbes() {
			fmt.Printf("%s: %s\n", p.name, outcome(p.call()))
		}
		// A goroutine cannot run on this thread, which is locked to this
		// one: it runs on another.
		other := make(chan string)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			other <- fmt.Sprintf("other thread socket unix: %s\nother thread seccomp: %s\n",
				outcome(probeSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0)), seccompMode())
		}()
		fmt.Print(<-other)
		exe, err := os.Executable()
		if err != nil {
			fmt.Println("child:", err)
			return
		}
		child := exec.Command(exe)
		child.Env = []string{seccompTestEnv + "=child", "GORACE=atexit_sleep_ms=0"}
		out, err := child.CombinedOutput()
		if err != nil {
			fmt.Printf("child: %v: %s\n", err, out)
			return
		}
		os.Stdout.Write(out)
		// Last: from here on the thread has a file table of its own.
		fmt.Printf("unshare files: %s\n", outcome(sysErrno(unix.SYS_UNSHARE, unix.CLONE_FILES)))
		// Very last: should the filter let it through, the helper is
		// traced by the test, and stops at its next signal.
		fmt.Printf("ptrace traceme: %s\n", outcome(sysErrno(unix.SYS_PTRACE, unix.PTRACE_TRACEME)))
	})
	<-done
}

type syscallProbe struct {
	name string
	call func() unix.Errno
}

// seccompProbes are system calls that the filter answers, made so that
// what the kernel would answer without the filter differs, and does no
// harm.
func seccompProbes() []syscallProbe {
	probes := []syscallProbe{
		{"socket unix", func() unix.Errno { return probeSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0) }},
		{"socketpair unix", func() unix.Errno {
			var fds [2]int32
			_, _, errno := unix.RawSyscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0, uintptr(unsafe.Pointer(&fds)), 0, 0)
			if errno == 0 {
				unix.Close(int(fds[0]))
				unix.Close(int(fds[1]))
			}
			return errno
		}},
		{"socket tcp", func() unix.Errno { return probeSocket(unix.AF_INET, unix.SOCK_STREAM, 0) }},
		{"socket udp", func() unix.Errno { return probeSocket(unix.AF_INET, unix.SOCK_DGRAM, 0) }},
		{"socket raw", func() unix.Errno { return probeSocket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) }},
		{"socket netlink route", func() unix.Errno { return probeSocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) }},
		{"socket netlink audit", func() unix.Errno { return probeSocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT) }},
		{"socket packet", func() unix.Errno { return probeSocket(unix.AF_PACKET, unix.SOCK_RAW, 0) }},
		{"io_uring_setup", func() unix.Errno {
			var params [120]byte // struct io_uring_params
			return sysErrno(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
		}},
		// Unfiltered, these two fail with EINVAL: a process with threads
		// cannot enter a new user namespace, and a new user namespace
		// cannot share its file system attributes.
		{"unshare newuser", func() unix.Errno { return sysErrno(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }},
		{"clone newuser", func() unix.Errno { return sysErrno(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS) }},
		{"clone3", func() unix.Errno { return sysErrno(unix.SYS_CLONE3) }},
		{"bpf", func() unix.Errno { return sysErrno(unix.SYS_BPF, unix.BPF_MAP_CREATE) }},
		{"mount", func() unix.Errno { return sysErrno(unix.SYS_MOUNT) }},
		{"keyctl", func() unix.Errno {
			return sysErrno(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(unix.KEY_SPEC_SESSION_KEYRING&0xffffffff))
		}},
		{"personality addr_no_randomize", func() unix.Errno { return sysErrno(unix.SYS_PERSONALITY, 0x0040000) }},
		{"personality query", func() unix.Errno { return sysErrno(unix.SYS_PERSONALITY, 0xffffffff) }},
		{"ioctl tiocsti", func() unix.Errno {
			c := byte('x')
			return sysErrno(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		}},
		{"getppid", func() unix.Errno { return sysErrno(unix.SYS_GETPPID) }},
	}
	if native.x32 {
		probes = append(probes, syscallProbe{"x32 getpid", func() unix.Errno { return sysErrno(unix.SYS_GETPID | x32Bit) }})
	}
	return probes
}

func sysErrno(nr uintptr, args ...uintptr) unix.Errno {
	var a [6]uintptr
	copy(a[:], args)
	_, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return errno
}

func probeSocket(domain, typ, proto uintptr) unix.Errno {
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, domain, typ|unix.SOCK_CLOEXEC, proto)
	if errno == 0 {
		unix.Close(int(fd))
	}
	return errno
}

func outcome(errno unix.Errno) string {
	if errno == 0 {
		return "ok"
	}
	return unix.ErrnoName(errno)
}

// seccompMode is the calling thread's seccomp mode: 0, none; 2, filters.
func seccompMode() string {
	status, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestFilterKernel installs the filter in a helper process, for real,
// and checks what the kernel answers the helper, a process it starts and
// another of its threads.
func TestFilterKernel(t *testing.T) {
	if err := SeccompSupport(); err != nil {
		t.Fatalf("no seccomp filters: %v", err)
	}
	base := map[string]string{
		"install": "ok", "seccomp": "2",
		"socket unix": "EPERM", "socketpair unix": "ok", "socket tcp": "ok", "socket udp": "EPERM",
		"socket raw": "EPERM", "socket netlink route": "ok", "socket netlink audit": "EPERM",
		"socket packet":  "EAFNOSUPPORT",
		"ptrace traceme": "EPERM", "io_uring_setup": "EPERM",
		"unshare newuser": "EPERM", "clone newuser": "EPERM", "clone3": "ENOSYS",
		"bpf": "EPERM", "mount": "EPERM", "keyctl": "EPERM",
		"personality addr_no_randomize": "EPERM", "personality query": "ok",
		"ioctl tiocsti": "EPERM", "getppid": "ok",
		"other thread socket unix": "ok", "other thread seccomp": "0",
		"child socket unix": "EPERM", "child seccomp": "2",
		"unshare files": "ok",
	}
	if native.x32 {
		base["x32 getpid"] = "ENOSYS"
	}
	all := map[string]string{"socket unix": "ok", "socket udp": "ok", "child socket unix": "ok"}
	for name, c := range map[string]struct {
		mode string
		want map[string]string
	}{
		"default": {"filter", base},
		"unix and udp": {"filter,unix,udp", func() map[string]string {
			m := map[string]string{}
			for k, v := range base {
				m[k] = v
			}
			for k, v := range all {
				m[k] = v
			}
			return m
		}()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := runSeccompHelper(t, c.mode)
			for k, want := range c.want {
				if got[k] != want {
					t.Errorf("%s: got %q, want %q", k, got[k], want)
				}
			}
			for k, v := range got {
				if _, ok := c.want[k]; !ok {
					t.Errorf("unexpected line %s: %s", k, v)
				}
			}
		})
	}
}

func runSeccompHelper(t *testing.T, mode string) map[string]string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A helper the filter failed is stopped, not ended, by a stray ptrace.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{seccompTestEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v: %s", err, out.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("helper printed %q", line)
		}
		got[k] = v
	}
	return got
}

// BenchmarkFilteredSyscall measures what the filter adds to a system
// call: getppid, which the kernel's action cache lets through without
// running the program, and personality's query, whose argument the
// program looks at after all its tests of the number.
func BenchmarkFilteredSyscall(b *testing.B) {
	for _, call := range []struct {
		name string
		nr   uintptr
		arg  uintptr
	}{{"getppid", unix.SYS_GETPPID, 0}, {"personality", unix.SYS_PERSONALITY, 0xffffffff}} {
		for _, filtered := range []bool{false, true} {
			name := call.name + "/unfiltered"
			if filtered {
				name = call.name + "/filtered"
			}
			b.Run(name, func(b *testing.B) {
				errc := make(chan error, 1)
				// The goroutine ends locked to its thread, and the thread
				// with it: a filtered thread runs nothing else.
				goLocked(func() {
					if filtered {
						if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
							errc <- err
							return
						}
						if err := InstallFilter(Filter{}); err != nil {
							errc <- err
							return
						}
					}
					for b.Loop() {
						unix.RawSyscall(call.nr, call.arg, 0, 0)
					}
					errc <- nil
				})
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
