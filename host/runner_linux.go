package host

import "syscall"

// pluginSysProcAttr puts the plugin in a process group of its own and has
// the kernel send it SIGTERM when the host dies, even by SIGKILL. A plugin
// served by the sdk then kills its whole group; any other dies of the
// signal unless it handles it.
func pluginSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
