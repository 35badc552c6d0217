//go:build unix && !linux

package host

import "syscall"

func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited cannot wait without reaping here: the group is not
// signalled at exit.
func waitExited(int) bool { return false }
