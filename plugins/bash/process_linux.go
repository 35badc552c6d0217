package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// reapGrace bounds the wait, once the plugin has asked for it, for the
// watchdog to have killed and reaped every process the command started.
// It is a matter of milliseconds, unless a process cannot be killed (it
// changed user, or is stuck in the kernel): then the call returns, and
// the watchdog goes on killing until none is left.
const reapGrace = time.Second

// errWatchdogFailed is wrapped by the errors of a watchdog that broke
// off: it died, or answered out of protocol.
var errWatchdogFailed = errors.New("the command's watchdog failed")

// watchdog is the plugin's end of a command's watchdog process.
type watchdog struct {
	lifeline *os.File // the write end of the watchdog's requests pipe
	replies  *os.File // the read end of its replies pipe
	// stdout and stderr are the read ends of the shell's pipes.
	stdout, stderr *os.File

	done   chan struct{}      // closed when the shell has ended, or cannot be heard of
	ws     syscall.WaitStatus // the shell's, when err is nil, once done is closed
	err    error
	empty  chan struct{} // closed when the watchdog has nothing left, or cannot be heard of
	gone   chan struct{} // closed when the watchdog process has been reaped
	reaped error         // its Wait error, once gone is closed

	killOnce sync.Once
}

// spare is a watchdog started ahead of need, waiting for its job. The
// start of a watchdog, a Go program, is most of what a command costs
// beyond the shell; a spare takes it off the next call's path. A call
// takes the spare, and has another started once its command is over,
// so that the start does not slow the command down; filling says one is
// on its way.
var spare struct {
	sync.Mutex
	w       *watchdog
	filling bool
}

// startWatchdog starts j's shell under a watchdog of its own, the spare
// if there is one, and returns once the shell has started, or failed
// to. An error from the shell's start comes back as the watchdog's
// words.
func startWatchdog(j job) (*watchdog, error) {
	spare.Lock()
	w := spare.w
	spare.w = nil
	spare.Unlock()
	if w != nil {
		err := w.start(j)
		if err == nil {
			return w, nil
		}
		if !errors.Is(err, errWatchdogFailed) {
			return nil, err
		}
		// The spare died while it waited: start another.
	}
	w, err := launchWatchdog()
	if err != nil {
		return nil, err
	}
	if err := w.start(j); err != nil {
		return nil, err
	}
	return w, nil
}

// refillSpare launches a spare watchdog, when none is there or on its
// way.
func refillSpare() {
	spare.Lock()
	if spare.w != nil || spare.filling {
		spare.Unlock()
		return
	}
	spare.filling = true
	spare.Unlock()
	w, err := launchWatchdog()
	spare.Lock()
	spare.filling = false
	if err == nil && spare.w == nil {
		spare.w, w = w, nil
	}
	spare.Unlock()
	if w != nil {
		w.discard()
	}
}

// launchWatchdog starts a watchdog process: this program again, in
// watchdog mode (see watchdogArg), waiting for its job. It is the leader
// of a process group of its own, so that signals to the plugin's group
// (the host's, when it stops the plugin) leave it alive to clean up. It
// gets four descriptors:
//
//	3: requests, from the plugin: the job, then requestTerminate bytes;
//	   end of file, when the plugin is done or dead, means kill all.
//	4: replies, to the plugin: replyStarted, or replyFailed and a
//	   message; then replyExited and the shell's wait status; then
//	   replyEmpty.
//	5, 6: the write ends of the shell's stdout and stderr.
func launchWatchdog() (*watchdog, error) {
	// The plugin's ends of the pipes, and the watchdog's: requests,
	// replies, stdout, stderr.
	var ours, theirs []*os.File
	closeAll := func(files []*os.File) {
		for _, f := range files {
			f.Close()
		}
	}
	for i := range 4 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ours)
			closeAll(theirs)
			return nil, err
		}
		if i == 0 { // the watchdog reads its requests
			ours, theirs = append(ours, w), append(theirs, r)
		} else {
			ours, theirs = append(ours, r), append(theirs, w)
		}
	}
	proc := &exec.Cmd{
		// The very program running, even if its file has been replaced.
		Path: "/proc/self/exe",
		Args: []string{os.Args[0], watchdogArg},
		Env:  []string{watchdogEnv + "=" + watchdogEnvValue},
		Dir:  "/",
		// Stdin, Stdout and Stderr nil are /dev/null.
		ExtraFiles:  theirs,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err := proc.Start()
	closeAll(theirs)
	if err != nil {
		closeAll(ours)
		return nil, fmt.Errorf("starting the command's watchdog: %w", err)
	}
	w := &watchdog{
		lifeline: ours[0], replies: ours[1], stdout: ours[2], stderr: ours[3],
		done: make(chan struct{}), empty: make(chan struct{}), gone: make(chan struct{}),
	}
	go func() {
		defer close(w.gone)
		w.reaped = proc.Wait()
	}()
	return w, nil
}

// start gives w its job, and returns once the shell has started, or
// failed to. On failure, w is discarded.
func (w *watchdog) start(j job) error {
	err := writeJob(w.lifeline, j)
	var reply [1]byte
	if err == nil {
		_, err = io.ReadFull(w.replies, reply[:])
	}
	if err == nil && reply[0] == replyStarted {
		go w.readReplies()
		return nil
	}
	var msg []byte
	if err == nil && reply[0] == replyFailed {
		msg, _ = io.ReadAll(io.LimitReader(w.replies, 4<<10))
	}
	w.discard()
	switch {
	case err != nil:
		return w.failure(err)
	case reply[0] != replyFailed:
		return w.failure(fmt.Errorf("unexpected reply %q", reply[0]))
	}
	return errors.New(string(msg))
}

// discard ends a watchdog that runs no shell, and closes its pipes.
func (w *watchdog) discard() {
	close(w.done)
	close(w.empty)
	w.lifeline.Close()
	waitFor(reapGrace, w.gone)
	w.replies.Close()
	w.stdout.Close()
	w.stderr.Close()
}

// failure describes a watchdog that broke off, for the operator: err
// and, when the process has ended, how.
func (w *watchdog) failure(err error) error {
	if waitFor(reapGrace, w.gone) && w.reaped != nil {
		return fmt.Errorf("%w (%v): %w", errWatchdogFailed, w.reaped, err)
	}
	return fmt.Errorf("%w: %w", errWatchdogFailed, err)
}

// readReplies reads the shell's wait status and closes done, then
// waits for replyEmpty and closes empty.
func (w *watchdog) readReplies() {
	defer w.replies.Close()
	defer close(w.empty)
	var msg [5]byte
	_, err := io.ReadFull(w.replies, msg[:])
	switch {
	case err != nil:
		w.err = w.failure(fmt.Errorf("no exit status for the shell: %w", err))
	case msg[0] != replyExited:
		w.err = w.failure(fmt.Errorf("unexpected reply %q", msg[0]))
	default:
		w.ws = syscall.WaitStatus(binary.LittleEndian.Uint32(msg[1:]))
	}
	close(w.done)
	// End of file, from a watchdog that died, ends the wait as well:
	// there is nothing more to wait for.
	_, _ = w.replies.Read(msg[:1])
}

// exited is closed when the shell has ended.
func (w *watchdog) exited() <-chan struct{} { return w.done }

// terminate has the watchdog send SIGTERM to every process of the
// command.
func (w *watchdog) terminate() {
	_, _ = w.lifeline.Write([]byte{requestTerminate})
}

// kill has the watchdog kill every process of the command, and returns
// when it has, or after reapGrace. The command being over, it has a
// spare watchdog started for the next.
func (w *watchdog) kill() {
	w.killOnce.Do(func() {
		w.lifeline.Close()
		go refillSpare()
	})
	timer := time.NewTimer(reapGrace)
	defer timer.Stop()
	select {
	case <-w.empty:
	case <-w.gone:
	case <-timer.C:
	}
}

// status returns the shell's wait status, once it has exited.
func (w *watchdog) status() (syscall.WaitStatus, error) {
	return w.ws, w.err
}
