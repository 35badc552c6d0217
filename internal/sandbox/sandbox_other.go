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

// PidsGroupsAvailable reports that there are no cgroups here.
func PidsGroupsAvailable() bool { return false }

func removeGroup(string) {}
