package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const (
	// killGrace is how long a timed-out command has between SIGTERM and
	// SIGKILL.
	killGrace = 2 * time.Second
	// pipeGrace is how long output may still arrive after the shell has
	// exited, from background processes that hold its stdout or stderr.
	// Then everything the command started is killed.
	pipeGrace = 200 * time.Millisecond
	// drainGrace bounds the wait for the pipes to close after the
	// command's processes have been killed: a process out of reach may
	// hold them open for ever, and the call does not wait for it.
	drainGrace = 100 * time.Millisecond
)

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
	sandbox *commandSandbox // nil: unconfined
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
// The shell runs under a watchdog (see startWatchdog), which outlives
// the shell and kills what it leaves behind, also when the plugin dies.
// The handle on the watchdog holds the pipes' read ends.
//
// The shell ends one of two ways:
//   - It exits. Output still arrives for pipeGrace from background
//     processes holding the pipes; then every process the command
//     started is killed.
//   - j.timeout passes or ctx is done. The command gets SIGTERM, and
//     SIGKILL when it has not finished (the shell exited and the pipes
//     closed) within killGrace.
func run(ctx context.Context, j job) (*outcome, error) {
	w, err := startWatchdog(j)
	if err != nil {
		return nil, err
	}
	stdoutR, stderrR := w.stdout, w.stderr
	defer stdoutR.Close()
	defer stderrR.Close()
	defer w.kill()
	start := time.Now()

	out := &outcome{stdout: newCapture(streamLimit/2, streamLimit/2), stderr: newCapture(streamLimit/2, streamLimit/2)}
	outputDone := make(chan struct{})
	go func() {
		defer close(outputDone)
		copied := make(chan struct{})
		go func() { defer close(copied); copyOutput(out.stderr, stderrR) }()
		copyOutput(out.stdout, stdoutR)
		<-copied
	}()

	timer := time.NewTimer(j.timeout)
	defer timer.Stop()
	select {
	case <-w.exited():
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
		w.terminate()
		waitFor(killGrace, w.exited(), outputDone)
	}
	w.kill()
	<-w.exited()
	if !waitFor(drainGrace, outputDone) {
		// Something out of reach holds the pipes: stop reading.
		stopReading(stdoutR)
		stopReading(stderrR)
		<-outputDone
	}
	out.duration = time.Since(start)

	if out.status, err = w.status(); err != nil {
		return nil, err
	}
	return out, nil
}

// shellCommand returns the command that runs j's shell, with stdin from
// /dev/null.
func shellCommand(j job, stdout, stderr *os.File, attr *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{
		Path: j.shell,
		Args: []string{j.shell, "-c", j.command},
		Dir:  j.dir,
		Env:  j.env,
		// Stdin nil is /dev/null.
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: attr,
	}
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
