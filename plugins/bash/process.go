package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const (
	// killGrace is how long a timed-out command's process group has
	// between SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
	// pipeGrace is how long output may still arrive after the shell has
	// exited, from background processes that hold its stdout or stderr.
	// Then the group is killed.
	pipeGrace = 200 * time.Millisecond
	// drainGrace bounds the wait for the pipes to close after the group
	// has been killed: a process that left the group (setsid) may hold
	// them open for ever, and the call does not wait for it.
	drainGrace = 100 * time.Millisecond
)

// watchdogScript is run by the guard of each command's process group. It
// ignores the signals a timeout or the command itself sends the group,
// and kills the group when its stdin, the plugin's end of a pipe, closes:
// when the plugin exits or dies, however it dies.
const watchdogScript = `trap '' TERM INT HUP QUIT; read -r line; kill -9 0`

// stopReason says why a command did not end on its own.
type stopReason int

const (
	notStopped stopReason = iota
	stoppedByTimeout
	stoppedByDeadline // the call's context passed its deadline
	stoppedByCancel   // the call's context was cancelled
)

// job is a shell command to run.
type job struct {
	shell   string // path of the shell, run as SHELL -c COMMAND
	command string
	dir     string
	env     []string
	timeout time.Duration
}

// outcome is how a job ended.
type outcome struct {
	stdout, stderr *capture
	// status is the shell's wait status; meaningful when stopped is
	// notStopped.
	status  syscall.WaitStatus
	stopped stopReason
	// stoppedAfter is when the timeout or the context stopped the
	// command, from its start.
	stoppedAfter time.Duration
	duration     time.Duration
}

// run runs j with stdin from /dev/null and stdout and stderr through
// pipes of its own, and returns when the shell has ended and every
// process it left behind has been killed.
//
// The command runs in a process group of its own, led by a watchdog
// started first: the group outlives neither the call nor the plugin, and
// since the watchdog is reaped only after the last signal to the group,
// the group's ID cannot have passed to unrelated processes meanwhile.
//
// The shell ends one of two ways:
//   - It exits. Output still arrives for pipeGrace from background
//     processes holding the pipes; then the whole group is killed.
//   - j.timeout passes or ctx is done. The group gets SIGTERM, and
//     SIGKILL when it has not finished (the shell exited and the pipes
//     closed) within killGrace.
func run(ctx context.Context, j job) (*outcome, error) {
	lifeline, watchdog, err := startWatchdog()
	if err != nil {
		return nil, fmt.Errorf("starting the process group's watchdog: %w", err)
	}
	pgid := watchdog.Process.Pid
	defer func() {
		signalGroup(pgid, syscall.SIGKILL)
		_ = watchdog.Wait()
		lifeline.Close()
	}()

	out := &outcome{stdout: newCapture(streamLimit/2, streamLimit/2), stderr: newCapture(streamLimit/2, streamLimit/2)}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdoutR.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return nil, err
	}
	defer stderrR.Close()

	cmd := &exec.Cmd{
		Path: j.shell,
		Args: []string{j.shell, "-c", j.command},
		Dir:  j.dir,
		Env:  j.env,
		// Stdin nil is /dev/null.
		Stdout:      stdoutW,
		Stderr:      stderrW,
		SysProcAttr: sysProcAttr(pgid),
	}
	start := time.Now()
	err = cmd.Start()
	// The shell has its own copies of the write ends now; ours must go,
	// or the pipes would never reach end of file.
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return nil, err
	}

	outputDone := make(chan struct{})
	go func() {
		defer close(outputDone)
		copied := make(chan struct{})
		go func() { defer close(copied); copyOutput(out.stderr, stderrR) }()
		copyOutput(out.stdout, stdoutR)
		<-copied
	}()

	exited := make(chan struct{})
	var waitErr error
	go func() {
		defer close(exited)
		waitErr = cmd.Wait()
	}()

	timer := time.NewTimer(j.timeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		out.stopped = stoppedByTimeout
	case <-ctx.Done():
		out.stopped = stoppedByCancel
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			out.stopped = stoppedByDeadline
		}
	}
	if out.stopped != notStopped {
		out.stoppedAfter = time.Since(start)
	}

	if out.stopped == notStopped {
		waitFor(pipeGrace, outputDone)
	} else {
		signalGroup(pgid, syscall.SIGTERM)
		waitFor(killGrace, exited, outputDone)
	}
	signalGroup(pgid, syscall.SIGKILL)
	<-exited
	if !waitFor(drainGrace, outputDone) {
		// Something outside the group holds the pipes: stop reading.
		stopReading(stdoutR)
		stopReading(stderrR)
		<-outputDone
	}
	out.duration = time.Since(start)

	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		out.status, _ = exitErr.Sys().(syscall.WaitStatus)
	default:
		return nil, waitErr
	}
	return out, nil
}

// startWatchdog starts the leader of a new process group, which kills
// the group when lifeline, the write end of its stdin, is closed. The
// caller keeps lifeline open while the group must live; close-on-exec
// keeps it from every other process.
func startWatchdog() (lifeline *os.File, watchdog *exec.Cmd, err error) {
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
	watchdog = &exec.Cmd{
		Path:        sh,
		Args:        []string{sh, "-c", watchdogScript},
		Env:         []string{},
		Dir:         "/",
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = watchdog.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, watchdog, nil
}

// copyOutput reads a pipe into c until end of file, or until reading
// is stopped.
func copyOutput(c *capture, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		c.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// stopReading makes a blocked read of r return.
func stopReading(r *os.File) {
	if r.SetReadDeadline(time.Now()) != nil {
		r.Close()
	}
}

// waitFor waits until every channel is closed, at most d, and reports
// whether they all were.
func waitFor(d time.Duration, chans ...<-chan struct{}) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, ch := range chans {
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
	return true
}

// signalGroup sends sig to every process in group pgid. A group that no
// longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}
