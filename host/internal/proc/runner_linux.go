package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pluginSysProcAttr puts the plugin in a process group of its own and has
// the kernel send it SIGTERM when the host dies, even by SIGKILL. A plugin
// served by the sdk then kills its whole group; any other dies of the
// signal unless it handles it.
func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// waitExited returns once the process has exited, leaving it unreaped,
// and reports whether it could.
func waitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// unread reports whether the pipe f holds bytes that have not been read
// (TIOCINQ is FIONREAD).
func unread(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n > 0
}
