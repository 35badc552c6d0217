package main

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// A command's watchdog is this program again, started by launchWatchdog
// with watchdogArg as its only argument and watchdogEnv set: a pair no
// one passes by accident. It is a child subreaper, so every process the
// command starts stays its descendant, whatever session or process group
// it moves to and however many times it forks: when a process's parent
// dies, the kernel hands it to the watchdog, not to init. It runs the
// shell, and when it is done kills every process it still has under it.
//
// Its life:
//  1. It reads the job from the plugin, which may come long after its
//     start (see spare), starts the shell with startCommand and replies
//     replyStarted (or replyFailed and why, and exits).
//  2. It reaps whatever ends beneath it. When the shell ends it sends
//     the plugin replyExited and the shell's wait status.
//  3. On requestTerminate it sends SIGTERM to every process beneath it.
//  4. When the plugin closes its end of the requests pipe, because the
//     command is over or because the plugin died, it kills every
//     process beneath it, again and again, until it has none.
//  5. When it has no child left, whichever step it is at, it replies
//     replyEmpty and exits: its descendants are gone, and none can
//     appear again.
//
// It shrugs off the signals a terminal or the command may send it
// (SIGTERM, SIGINT, SIGHUP, SIGQUIT): only SIGKILL ends it early, and
// then the shell dies of its parent-death signal.
const (
	watchdogArg      = "--agenthost-bash-watchdog"
	watchdogEnv      = "AGENTHOST_BASH_WATCHDOG"
	watchdogEnvValue = "1"

	// requestTerminate asks the watchdog to send SIGTERM to every
	// process of the command.
	requestTerminate = 't'

	// replyStarted says the shell runs.
	replyStarted = 'r'
	// replyFailed says no shell runs, and is followed by why, to the
	// end of the pipe.
	replyFailed = 'e'
	// replyExited says the shell has ended, and is followed by its wait
	// status, four bytes little-endian.
	replyExited = 'x'
	// replyEmpty says no process the command started is left; the
	// watchdog exits.
	replyEmpty = 'z'

	// maxJobSize bounds the encoded job the watchdog accepts.
	maxJobSize = 64 << 20
)

// wireJob is a job as it goes to the watchdog. gob carries strings byte
// for byte, as the environment may not be UTF-8.
type wireJob struct {
	Shell, Command, Dir string
	Env                 []string
	Sandbox             *commandSandbox
}

// writeJob sends j to the watchdog: its length, four bytes
// little-endian, then its gob encoding.
func writeJob(w io.Writer, j job) error {
	var b bytes.Buffer
	b.Write(make([]byte, 4))
	if err := gob.NewEncoder(&b).Encode(wireJob{Shell: j.shell, Command: j.command, Dir: j.dir, Env: j.env, Sandbox: j.sandbox}); err != nil {
		return err
	}
	if b.Len()-4 > maxJobSize {
		return fmt.Errorf("the command and its environment take %d bytes, more than %d", b.Len()-4, maxJobSize)
	}
	binary.LittleEndian.PutUint32(b.Bytes(), uint32(b.Len()-4))
	_, err := w.Write(b.Bytes())
	return err
}

// readJob reads what writeJob sent, and nothing more.
func readJob(r io.Reader) (job, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return job{}, err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxJobSize {
		return job{}, fmt.Errorf("a job of %d bytes", size)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return job{}, err
	}
	var wj wireJob
	if err := gob.NewDecoder(bytes.NewReader(buf)).Decode(&wj); err != nil {
		return job{}, err
	}
	return job{shell: wj.Shell, command: wj.Command, dir: wj.Dir, env: wj.Env, sandbox: wj.Sandbox}, nil
}

// runIfWatchdog runs this process as a command's watchdog, and exits,
// when launchWatchdog started it as one; otherwise it returns at once.
// main and TestMain call it first.
func runIfWatchdog() {
	if len(os.Args) != 2 || os.Args[1] != watchdogArg || os.Getenv(watchdogEnv) != watchdogEnvValue {
		return
	}
	os.Exit(watchdogMain())
}

// watchdogMain is the watchdog's life, as the comment on watchdogArg
// tells it, and returns its exit status.
func watchdogMain() int {
	// Handled, not ignored: an ignored signal would stay ignored in the
	// shell. The channel is never read, and signals beyond the first
	// are dropped.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// No descriptor of the watchdog's own may reach the shell: with the
	// replies pipe, a command could forge its exit status.
	for fd := 3; fd <= 6; fd++ {
		syscall.CloseOnExec(fd)
	}
	requests := os.NewFile(3, "requests")
	replies := os.NewFile(4, "replies")
	stdout, stderr := os.NewFile(5, "stdout"), os.NewFile(6, "stderr")

	err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	if err != nil {
		err = fmt.Errorf("making the command's watchdog a child subreaper: %w", err)
	}
	var j job
	if err == nil {
		j, err = readJob(requests)
	}
	if j.env == nil {
		// Not the watchdog's own environment.
		j.env = []string{}
	}
	var shell int
	if err == nil {
		cmd := shellCommand(j, stdout, stderr, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL})
		if err = startCommand(cmd, j.sandbox); err == nil {
			shell = cmd.Process.Pid
		}
	}
	stdout.Close()
	stderr.Close()
	if err != nil {
		_, _ = replies.Write(append([]byte{replyFailed}, err.Error()...))
		return 1
	}
	// A plugin that is gone cannot read this: it closed the requests
	// pipe too, and the command is killed below.
	_, _ = replies.Write([]byte{replyStarted})

	b := sandbox.NewBrood(shell, func(ws syscall.WaitStatus) {
		msg := []byte{replyExited, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(msg[1:], uint32(ws))
		_, _ = replies.Write(msg)
	})
	go b.Reap()
	lifeline := make(chan struct{})
	go func() {
		defer close(lifeline)
		var req [1]byte
		for {
			if _, err := requests.Read(req[:]); err != nil {
				return
			}
			if req[0] == requestTerminate {
				b.Signal(syscall.SIGTERM)
			}
		}
	}()
	select {
	case <-b.Empty():
	case <-lifeline:
		b.KillAll()
	}
	_, _ = replies.Write([]byte{replyEmpty})
	return 0
}
