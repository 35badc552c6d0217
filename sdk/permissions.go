package sdk

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// Permissions declare what a plugin's process needs beyond what the host
// gives every plugin: access to the workspace roots and to other paths,
// the network, other programs, the session context file. A plugin
// declares them in [Plugin]; the host may confine the process to its
// declaration (on Linux with Landlock) and show it to the user. The zero
// value asks for nothing beyond the host's defaults.
//
// A path is absolute, or starts with "~/" (in the user's home directory),
// or is "$TMPDIR" or starts with "$TMPDIR/" (the temporary directory, as
// the host sees it); the host expands those prefixes. A path may name a
// file or a directory: a directory's grant covers everything under it. A
// path holds no ".." element.
type Permissions struct {
	// Roots is what the plugin does in the host's workspace roots (see
	// [Roots]).
	Roots RootAccess
	// Read lists the paths outside the roots that the plugin reads, such
	// as "~/.config/mytool".
	Read []string
	// Write lists the paths outside the roots that the plugin reads and
	// writes (creates, replaces, removes), such as "$TMPDIR".
	Write []string
	// Network: the plugin opens outbound TCP connections.
	Network bool
	// Exec: the plugin runs other programs.
	Exec bool
	// SessionFile: the plugin writes the host's session context file
	// (State.SessionContextFilePath). The file is replaced atomically, so
	// the grant covers the directory that holds it.
	SessionFile bool
	// UnixSockets: the plugin makes unix sockets, to connect to a socket
	// file (a container engine's, a database's) or to listen on one.
	// Without it the host's sandbox lets it make socket pairs only.
	UnixSockets bool
}

// RootAccess is what a plugin does in the host's workspace roots.
type RootAccess int

// The values of RootAccess are those of the protocol's
// Permissions.RootAccess.
const (
	// RootsDefault is what the host gives a plugin that does not say:
	// read and write.
	RootsDefault RootAccess = iota
	// RootsNone: the plugin touches nothing in the roots.
	RootsNone
	// RootsRead: the plugin reads in the roots and writes nothing there.
	RootsRead
	// RootsReadWrite: the plugin reads and writes in the roots.
	RootsReadWrite
)

// String returns "default", "none", "read" or "read-write", or
// "RootAccess(N)" for a value that is none of the constants.
func (r RootAccess) String() string {
	switch r {
	case RootsDefault:
		return "default"
	case RootsNone:
		return "none"
	case RootsRead:
		return "read"
	case RootsReadWrite:
		return "read-write"
	}
	return "RootAccess(" + strconv.Itoa(int(r)) + ")"
}

// String lists what p asks for, for a person to read, such as
// "roots read-only, read ~/.config/x, network, exec"; the zero
// Permissions is "nothing beyond the defaults". A path that could be
// misread (a control character, a comma) is Go-quoted.
func (p Permissions) String() string {
	var items []string
	switch p.Roots {
	case RootsDefault:
	case RootsNone:
		items = append(items, "no roots")
	case RootsRead:
		items = append(items, "roots read-only")
	case RootsReadWrite:
		items = append(items, "roots read-write")
	default:
		items = append(items, "roots "+p.Roots.String())
	}
	for _, path := range p.Read {
		items = append(items, "read "+showPath(path))
	}
	for _, path := range p.Write {
		items = append(items, "write "+showPath(path))
	}
	if p.Network {
		items = append(items, "network")
	}
	if p.Exec {
		items = append(items, "exec")
	}
	if p.SessionFile {
		items = append(items, "session file")
	}
	if p.UnixSockets {
		items = append(items, "unix sockets")
	}
	if len(items) == 0 {
		return "nothing beyond the defaults"
	}
	return strings.Join(items, ", ")
}

// showPath is path as String shows it: quoted when it could forge a line
// or another item of the list.
func showPath(path string) string {
	if path == "" || textsafe.NeedsQuoting(path) || strings.ContainsRune(path, ',') {
		return strconv.Quote(path)
	}
	return path
}

// Validate reports the first thing wrong with p: a RootAccess that is
// none of the constants, or a path of the wrong form (see [Permissions]).
// [ServePlugin] panics on such a declaration; a host refuses one that a
// plugin sends.
func (p Permissions) Validate() error {
	if p.Roots < RootsDefault || p.Roots > RootsReadWrite {
		return fmt.Errorf("permissions: unknown root access %d", int(p.Roots))
	}
	for _, path := range p.Read {
		if err := checkPath(path); err != nil {
			return fmt.Errorf("permissions: read path %q %w", path, err)
		}
	}
	for _, path := range p.Write {
		if err := checkPath(path); err != nil {
			return fmt.Errorf("permissions: write path %q %w", path, err)
		}
	}
	return nil
}

// checkPath says what is wrong with a declared path, in words that
// follow the path.
func checkPath(path string) error {
	var rest string
	switch {
	case strings.HasPrefix(path, "~/"):
		rest = path[len("~/"):]
	case path == "$TMPDIR":
	case strings.HasPrefix(path, "$TMPDIR/"):
		rest = path[len("$TMPDIR/"):]
	case filepath.IsAbs(path):
		rest = path
	default:
		return errors.New(`is not absolute and does not start with "~/" or "$TMPDIR"`)
	}
	if strings.ContainsRune(path, 0) {
		return errors.New("holds a NUL byte")
	}
	if slices.Contains(strings.Split(filepath.ToSlash(rest), "/"), "..") {
		return errors.New(`holds a ".." element`)
	}
	return nil
}

// Proto returns p as the protocol carries it, never nil. It shares no
// memory with p.
func (p Permissions) Proto() *toolv1.Permissions {
	return &toolv1.Permissions{
		Roots:       toolv1.Permissions_RootAccess(p.Roots),
		ReadPaths:   clonePaths(p.Read),
		WritePaths:  clonePaths(p.Write),
		Network:     p.Network,
		Exec:        p.Exec,
		SessionFile: p.SessionFile,
		UnixSockets: p.UnixSockets,
	}
}

// clonePaths copies paths; none is nil.
func clonePaths(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	return slices.Clone(paths)
}
