// Package sandbox confines the processes the host starts — plugins and the
// commands run_bash runs — with Landlock, the Linux security module that
// lets an unprivileged process restrict what it and its descendants may
// do.
//
// A Policy lists what the process may touch: paths it may read, write or
// execute, whether it may open outbound TCP connections. Everything else
// the kernel can restrict is denied: every other path, binding a TCP port,
// connecting to an abstract unix socket or signalling a process outside
// the sandbox. Start applies the policy to a command about to be
// executed, so the ruleset is in force before the program's first
// instruction: a program cannot opt out, and what it starts inherits it.
//
// The host itself is never restricted. Landlock restricts the thread that
// asks for it, so Start builds the ruleset, restricts a thread of its own
// (locked to its goroutine, and ended with it), and starts the command
// from that thread: the child inherits the thread's restrictions, the
// rest of the process keeps none.
//
// We do not use the go-landlock library: its enforcement restricts the
// calling process, every thread of it, which is the opposite of what a
// host that confines its children needs; and its system call package,
// the part that would serve here, brings the psx library, which in a cgo
// build wraps thread creation and installs a signal handler in the whole
// program, every embedder's included. The three system calls and their
// constants come from golang.org/x/sys/unix, which the host already uses.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Access is what a rule allows on a path.
type Access uint8

const (
	// Read allows reading files and listing directories.
	Read Access = 1 << iota
	// Write allows writing and truncating files, and making, renaming and
	// removing entries in directories.
	Write
	// Execute allows executing files.
	Execute
	// RemoveDir allows removing empty directories, and nothing else: on
	// the parent of a directory the process may remove once it is done
	// with it.
	RemoveDir
	// List allows listing directories, and reading no file.
	List
)

func (a Access) String() string {
	var parts []string
	if a&Read != 0 {
		parts = append(parts, "read")
	}
	if a&Write != 0 {
		parts = append(parts, "write")
	}
	if a&Execute != 0 {
		parts = append(parts, "execute")
	}
	if a&RemoveDir != 0 {
		parts = append(parts, "remove-dir")
	}
	if a&List != 0 {
		parts = append(parts, "list")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Rule allows Access on a path and, for a directory, on everything
// beneath it. A rule on a path that does not exist is skipped.
type Rule struct {
	Path   string
	Access Access
	// File, when not nil, is an open file standing for Path: the rule is
	// made on the very file it refers to, whatever Path names by then.
	File *os.File
}

// Policy is what a sandboxed process may do.
type Policy struct {
	// Rules are the paths the process may use; every other path is
	// denied.
	Rules []Rule
	// Network allows outbound TCP connections (to any port) and UDP.
	// Binding a TCP port is never allowed, but in a network namespace of
	// the process's own (see Isolate, PrivateNetwork).
	Network bool
	// UnixSockets allows the process to make unix sockets, which can
	// connect to any socket file it can name (a container engine's, a
	// desktop bus, another program's). Without it, the system call
	// filter lets it make unix socket pairs only (see Filter).
	UnixSockets bool
	// Isolate starts the process in namespaces of its own (see Start):
	// a user namespace, a PID namespace with a /proc of its own, a mount
	// namespace, and without Network a network namespace of its own.
	Isolate bool
	// PrivateNetwork says the process runs in a network namespace that
	// it shares with no one outside its sandbox (its parent made one, or
	// Isolate does): TCP and UDP reach only inside it, so neither is
	// restricted.
	PrivateNetwork bool
	// Limits bound what each process of the sandbox may use.
	Limits Limits
	// Secrets are absolute paths no rule reaches, whatever it grants
	// (see withoutSecrets): a rule on a directory that holds one gives
	// access to the rest of it.
	Secrets []string

	// etcMasked: /etc's secrets are covered in the process's mount
	// namespace (see etcRules).
	etcMasked bool
}

// Limits bound a sandboxed process and what it starts, with resource
// limits (setrlimit), which every process it starts inherits. Zero is no
// limit.
type Limits struct {
	// Memory bounds the data of each process, in bytes (RLIMIT_DATA: its
	// heap and private writable mappings; not what it only reserves, as
	// runtimes with large reservations do, nor shared mappings). An
	// allocation past it fails.
	Memory uint64
	// Processes bounds the processes and threads of the sandbox's user
	// in its user namespace (RLIMIT_NPROC); a fork past it fails. It is
	// set only in a user namespace of the sandbox's own: elsewhere it
	// would count every process of the user, and root's are not
	// counted.
	Processes uint64
	// FileSize bounds the size of a file a process writes, in bytes
	// (RLIMIT_FSIZE): a write past it fails and sends the process
	// SIGXFSZ, which ends it unless it handles it.
	FileSize uint64
}

// filter is the system call filter of a process in p.
func (p *Policy) filter() Filter {
	return Filter{UnixSockets: p.UnixSockets, UDP: p.Network || p.PrivateNetwork}
}

// Allow adds a rule.
func (p *Policy) Allow(access Access, paths ...string) {
	for _, path := range paths {
		p.Rules = append(p.Rules, Rule{Path: path, Access: access})
	}
}

// Env is the variable through which the host tells a plugin that it runs
// sandboxed, and with what: Granted as JSON. A plugin that finds it
// absent runs unconfined.
const Env = "AGENTHOST_SANDBOX"

// Granted is what Env carries: the permissions the plugin's sandbox was
// built from, paths expanded. The bash plugin confines each command to
// the same, minus what is the plugin's own.
type Granted struct {
	Roots       string   `json:"roots"`
	Read        []string `json:"read,omitempty"`
	Write       []string `json:"write,omitempty"`
	Network     bool     `json:"network,omitempty"`
	Exec        bool     `json:"exec,omitempty"`
	UnixSockets bool     `json:"unix_sockets,omitempty"`
	// List are directories whose names the plugin may list (the home
	// directory, for a plugin that runs programs).
	List []string `json:"list,omitempty"`
	// Secrets are the paths no process of the plugin reaches, whatever
	// it grants (Policy.Secrets).
	Secrets []string `json:"secrets,omitempty"`
}

// ErrUnsupported is returned by Start when the kernel has no Landlock.
var ErrUnsupported = errors.New("the kernel does not support Landlock")

// Support is what the running kernel's Landlock enforces.
type Support struct {
	// ABI is the Landlock ABI version; 0 when Landlock is not available
	// (not built into the kernel, or not enabled at boot).
	ABI int
	// Err says why Landlock is not available, when ABI is 0.
	Err error
}

// FullABI is the ABI whose every restriction the package uses: file
// access (1), renaming across directories (2), truncation (3), TCP bind
// and connect (4), device ioctl (5), abstract unix sockets and signals
// (6). ABI 7 adds audit logging, which changes nothing enforced.
const FullABI = 6

// Enforced reports whether the kernel enforces any policy at all.
func (s Support) Enforced() bool { return s.ABI > 0 }

// Missing names what this package restricts but the kernel does not, at
// its ABI, each with the ABI that brings it; none at FullABI and above.
func (s Support) Missing() []string {
	if s.ABI == 0 {
		return []string{"everything (no Landlock)"}
	}
	var missing []string
	for _, f := range features {
		if s.ABI < f.abi {
			missing = append(missing, fmt.Sprintf("%s (Landlock ABI %d)", f.what, f.abi))
		}
	}
	return missing
}

func (s Support) String() string {
	if s.ABI == 0 {
		if s.Err != nil {
			return "no Landlock: " + s.Err.Error()
		}
		return "no Landlock"
	}
	return fmt.Sprintf("Landlock ABI %d", s.ABI)
}

// features are the restrictions that came after the first ABI.
var features = []struct {
	abi  int
	what string
}{
	{2, "renaming and linking across directories"},
	{3, "truncating files"},
	{4, "binding and connecting TCP sockets"},
	{5, "ioctl on devices"},
	{6, "abstract unix sockets and signals to processes outside the sandbox"},
}

// Process is a process that Start started in its sandbox.
type Process struct {
	// cmd is the command started: the caller's, or the stage's.
	cmd     *exec.Cmd
	release func()
	// isolated: it runs in namespaces of its own (Policy.Isolate, and the
	// kernel let it).
	isolated bool
	// read is closed once the stage's reports have been read to their
	// end (nil when there is no stage); then status holds the program's
	// wait status, when reported says the stage reported it.
	read     chan struct{}
	status   syscall.WaitStatus
	reported bool
}

// Release is called once the process has been waited for: the thread
// that started it, which its parent-death signal is tied to, may end.
func (p *Process) Release() {
	if p == nil {
		return
	}
	if p.release != nil {
		p.release()
	}
}

// Pid is the process's id: the program's, or its stage's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the process to end, as exec.Cmd's Wait does: the
// program, or its stage, which ends once the program has. ExitStatus
// says how the program ended.
func (p *Process) Wait() error { return p.cmd.Wait() }

// Isolated reports whether the process runs in namespaces of its own.
func (p *Process) Isolated() bool { return p != nil && p.isolated }

// ExitStatus returns how the program itself ended, once the process
// that Start started has been waited for. When the program runs under
// the stage (Policy.Isolate), the process waited for is the stage,
// which reports the program's status before it exits; ok is false when
// it did not (the stage was killed first), and for a process started
// without a stage, whose own status is the program's.
func (p *Process) ExitStatus() (status syscall.WaitStatus, ok bool) {
	if p == nil || p.read == nil {
		return 0, false
	}
	<-p.read
	return p.status, p.reported
}
