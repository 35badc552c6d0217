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
func Start(cmd *exec.Cmd, p *Policy) (release func(), err error) { return nil, ErrUnsupported }
