//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// Probe reports that this system has no Landlock.
func Probe() Support {
	return Support{Err: errors.New("Landlock is a Linux feature")}
}

// Start returns ErrUnsupported: there is no Landlock to start cmd in.
func Start(cmd *exec.Cmd, p *Policy) (*Process, error) { return nil, ErrUnsupported }

// NamespaceSupport reports that this system gives no namespaces.
func NamespaceSupport() error { return errors.New("namespaces are a Linux feature") }

// NamespacesKnown reports that this system gives no namespaces.
func NamespacesKnown() (bool, error) { return true, NamespaceSupport() }

// PIDMaxPerNamespace reports that there are no PID namespaces here.
func PIDMaxPerNamespace() bool { return false }

// Parent reports that it cannot tell a process's parent here.
func Parent(int) (int, bool) { return 0, false }
