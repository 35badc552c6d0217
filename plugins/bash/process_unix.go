//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts the shell in process group pgid.
func sysProcAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}
