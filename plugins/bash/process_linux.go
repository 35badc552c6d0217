package main

import "syscall"

// sysProcAttr puts the shell in process group pgid, and has the kernel
// kill it when the plugin dies.
func sysProcAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
}
