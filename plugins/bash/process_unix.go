//go:build unix && !linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Without Linux's child subreapers, a command runs in a process group of
// its own, led by a shell started first that ignores the signals a
// timeout or the command itself sends the group and kills the group when
// its stdin, the plugin's end of a pipe, closes: when the plugin exits or
// dies, however it dies. A process that leaves the group (setsid) is out
// of reach. Since the leader is reaped only after the last signal to the
// group, the group's ID cannot have passed to unrelated processes
// meanwhile.
const watchdogScript = `trap '' TERM INT HUP QUIT; read -r line; kill -9 0`

// watchdog is a command's process group and the shell in it.
type watchdog struct {
	// stdout and stderr are the read ends of the shell's pipes.
	stdout, stderr *os.File

	lifeline *os.File  // the leader's stdin, which kills the group when closed
	leader   *exec.Cmd // the group's leader, running watchdogScript
	shell    *exec.Cmd
	done     chan struct{} // closed when the shell has been reaped
	waitErr  error         // the shell's, once done is closed
	killOnce sync.Once
}

// runIfWatchdog returns at once: only on Linux is a command's watchdog
// this program.
func runIfWatchdog() {}

// startWatchdog starts the leader of a new process group, then j's shell
// in the group, with pipes for its stdout and stderr.
func startWatchdog(j job) (*watchdog, error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, err
	}
	w, err := startGroup(j, stdoutW, stderrW)
	// The shell has its own copies of the write ends now; ours must go,
	// or the pipes would never reach end of file.
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		return nil, err
	}
	w.stdout, w.stderr = stdoutR, stderrR
	return w, nil
}

// startGroup starts the leader of a new process group, then j's shell
// in the group, writing to stdout and stderr.
func startGroup(j job, stdout, stderr *os.File) (*watchdog, error) {
	lifeline, leader, err := startLeader()
	if err != nil {
		return nil, fmt.Errorf("starting the process group's watchdog: %w", err)
	}
	pgid := leader.Process.Pid
	shell := shellCommand(j, stdout, stderr, &syscall.SysProcAttr{Setpgid: true, Pgid: pgid})
	if err := startCommand(shell, j.sandbox); err != nil {
		signalGroup(pgid, syscall.SIGKILL)
		_ = leader.Wait()
		lifeline.Close()
		return nil, err
	}
	w := &watchdog{lifeline: lifeline, leader: leader, shell: shell, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.waitErr = shell.Wait()
	}()
	return w, nil
}

// startLeader starts the leader of a new process group, which kills the
// group when lifeline, the write end of its stdin, is closed. The caller
// keeps lifeline open while the group must live; close-on-exec keeps it
// from every other process.
func startLeader() (lifeline *os.File, leader *exec.Cmd, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		if sh, err = exec.LookPath("bash"); err != nil {
			r.Close()
			w.Close()
			return nil, nil, err
		}
	}
	leader = &exec.Cmd{
		Path:        sh,
		Args:        []string{sh, "-c", watchdogScript},
		Env:         []string{},
		Dir:         "/",
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = leader.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, leader, nil
}

// exited is closed when the shell has ended.
func (w *watchdog) exited() <-chan struct{} { return w.done }

// terminate sends the group SIGTERM.
func (w *watchdog) terminate() { signalGroup(w.leader.Process.Pid, syscall.SIGTERM) }

// kill kills the group and returns when the shell has been reaped.
func (w *watchdog) kill() {
	w.killOnce.Do(func() {
		signalGroup(w.leader.Process.Pid, syscall.SIGKILL)
		<-w.done
		_ = w.leader.Wait()
		w.lifeline.Close()
	})
}

// status returns the shell's wait status, once it has exited.
func (w *watchdog) status() (syscall.WaitStatus, error) {
	var exitErr *exec.ExitError
	switch {
	case w.waitErr == nil:
		return 0, nil
	case errors.As(w.waitErr, &exitErr):
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		return ws, nil
	}
	return 0, w.waitErr
}

// signalGroup sends sig to every process in group pgid. A group that no
// longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}
