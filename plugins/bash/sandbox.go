package main

import "os/exec"

// startCommand starts a command's shell, cmd. It is the one place a
// shell is started: on Linux in the command's watchdog process (see
// watchdogMain), elsewhere in the plugin.
//
// On Linux, cmd.SysProcAttr asks for a parent-death signal (Pdeathsig),
// which the kernel sends when the thread that started the shell ends: a
// start from a locked OS thread must keep that thread until the shell
// has ended. The watchdog process lives until then, and exits as soon
// as the shell and everything it started are gone.
func startCommand(cmd *exec.Cmd) error {
	return cmd.Start()
}
