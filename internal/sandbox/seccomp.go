package sandbox

// Filter is what a process's syscall filter allows beyond the default
// deny list. The filter is a seccomp-bpf program: the kernel runs it on
// every system call the process (and every process it starts) makes, and
// answers with an error those it denies, without running them.
//
// Denied with EPERM, whatever the options: the system calls that reach
// into other processes (ptrace, process_vm_readv and _writev, kcmp), load
// code into the kernel or reach far into it (bpf, perf_event_open,
// userfaultfd, io_uring, kexec, modules), change the system (reboot,
// swap, mounts, clock, accounting, quotas, the kernel log, the keyring),
// open files by handle, enter or make namespaces (setns; unshare and
// clone with a CLONE_NEW* flag), change the personality but for the
// harmless values, and push input into a terminal (TIOCSTI, TIOCLINUX).
// clone3 fails with ENOSYS, which makes the C library and Go fall back
// to clone, whose flags the filter can see. So do system calls of
// another architecture (32-bit x86 on amd64, x32): a 32-bit program does
// not run under the filter.
//
// Sockets: a process may make TCP sockets (SOCK_STREAM sockets of
// AF_INET or AF_INET6 with protocol 0 or IPPROTO_TCP: not SCTP or MPTCP,
// which Landlock's TCP rules do not cover), route netlink sockets (which name resolution and
// interface listing use) and unix socket pairs; the fields allow more.
// Other socket families fail with EAFNOSUPPORT, as if the kernel lacked
// them; raw and packet sockets, and other netlink protocols, with EPERM.
type Filter struct {
	// UnixSockets allows socket(AF_UNIX, ...): unix sockets that connect
	// to, or listen at, a path or an abstract name. Landlock's scoping
	// keeps a sandboxed process from abstract sockets outside its
	// sandbox, but not from connecting to a socket file it can name
	// (such as the Docker daemon's): Landlock checks that connect only
	// from ABI 8, which this package does not use yet.
	UnixSockets bool
	// UDP allows socket(AF_INET or AF_INET6, SOCK_DGRAM, ...). Landlock
	// does not restrict UDP: with it, a process can send datagrams
	// anywhere.
	UDP bool
}
