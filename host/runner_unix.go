//go:build unix && !linux

package host

import "syscall"

func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
