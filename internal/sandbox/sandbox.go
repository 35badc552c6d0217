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
	"strings"
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
	// Network allows outbound TCP connections (to any port). Binding a
	// TCP port is never allowed.
	Network bool
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
	Roots   string   `json:"roots"`
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	Network bool     `json:"network,omitempty"`
	Exec    bool     `json:"exec,omitempty"`
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
