//go:build unix && !linux

package proc

import (
	"os"
	"syscall"
)

func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited cannot wait without reaping here: the group is not
// signalled at exit.
func waitExited(int) bool { return false }

// unread cannot tell here: a pipe's unread output is given DrainGrace only.
func unread(*os.File) bool { return false }
