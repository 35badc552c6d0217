package main

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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

	b := &brood{shell: shell, replies: replies, reaped: make(chan struct{}, 1), empty: make(chan struct{})}
	go b.reap()
	lifeline := make(chan struct{})
	go func() {
		defer close(lifeline)
		var req [1]byte
		for {
			if _, err := requests.Read(req[:]); err != nil {
				return
			}
			if req[0] == requestTerminate {
				b.signal(syscall.SIGTERM)
			}
		}
	}()
	select {
	case <-b.empty:
	case <-lifeline:
		b.killAll()
	}
	_, _ = replies.Write([]byte{replyEmpty})
	return 0
}

// brood is every process beneath the watchdog: its children, the shell
// first, and their descendants.
type brood struct {
	shell   int      // the shell's pid, and its process group's ID
	replies *os.File // where the shell's wait status goes

	// mu is held while signalling and while reaping, so that a pid
	// signalled is never one just freed, and given to another process:
	// processes beneath the watchdog are reaped by it, or by a parent
	// signalled before them.
	mu          sync.Mutex
	shellReaped bool

	reaped chan struct{} // gets a value when a process has been reaped
	empty  chan struct{} // closed when the watchdog has no child left
}

// reap reaps the children of the watchdog as they end, reports the
// shell's end, and closes b.empty when there is no child left.
func (b *brood) reap() {
	defer close(b.empty)
	for {
		pid, err := waitExited()
		if errors.Is(err, syscall.ECHILD) {
			return
		}
		if err != nil {
			// Not expected; but the watchdog must not give up.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var ws syscall.WaitStatus
		b.mu.Lock()
		wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		isShell := err == nil && wpid == b.shell
		if isShell {
			b.shellReaped = true
		}
		b.mu.Unlock()
		if isShell {
			msg := []byte{replyExited, 0, 0, 0, 0}
			binary.LittleEndian.PutUint32(msg[1:], uint32(ws))
			_, _ = b.replies.Write(msg)
		}
		select {
		case b.reaped <- struct{}{}:
		default:
		}
	}
}

// signal sends sig to the shell's process group, until the shell has
// been reaped, and to every process beneath the watchdog, each before
// its children.
func (b *brood) signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.shellReaped {
		_ = syscall.Kill(-b.shell, sig)
	}
	children := childLister()
	seen := map[int]bool{}
	queue := children(os.Getpid())
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		_ = syscall.Kill(pid, sig)
		queue = append(queue, children(pid)...)
	}
}

// killAll kills every process beneath the watchdog, again each time one
// is reaped (its orphans are the watchdog's children now) and from time
// to time, until none is left.
func (b *brood) killAll() {
	pause := 10 * time.Millisecond
	for {
		b.signal(syscall.SIGKILL)
		timer := time.NewTimer(pause)
		select {
		case <-b.empty:
			timer.Stop()
			return
		case <-b.reaped:
		case <-timer.C:
			// A process that resists SIGKILL has changed user or is
			// stuck in the kernel: keep trying, less often.
			pause = min(2*pause, time.Second)
		}
		timer.Stop()
	}
}

// waitExited waits for a child of the watchdog to end, and returns its
// pid without reaping it.
func waitExited() (int, error) {
	// The start of the kernel's siginfo_t, as waitid fills it in for a
	// child: three ints, then a pointer-aligned union beginning with the
	// child's pid. The padding covers the rest of its 128 bytes.
	var info struct {
		signo, errno, code int32
		_                  [0]uintptr
		pid                int32
		_                  [128]byte
	}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return int(info.pid), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}

// childLister returns a function that lists the children of a process
// as they are now: from /proc/PID/task/TID/children where the kernel
// has them, or else from one scan of every /proc/PID/stat.
func childLister() func(pid int) []int {
	if hasChildrenFiles() {
		return childrenOf
	}
	byParent := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range dirs {
		pid, ppid, ok := readParent(stat)
		if ok {
			byParent[ppid] = append(byParent[ppid], pid)
		}
	}
	return func(pid int) []int { return byParent[pid] }
}

// hasChildrenFiles reports whether the kernel has
// /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN).
var hasChildrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/thread-self/children")
	return err == nil
})

// childrenOf lists the children of pid, those of each of its threads.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, _ := os.ReadDir(dir)
	var pids []int
	for _, task := range tasks {
		data, _ := os.ReadFile(dir + "/" + task.Name() + "/children")
		for f := range strings.FieldsSeq(string(data)) {
			if child, err := strconv.Atoi(f); err == nil {
				pids = append(pids, child)
			}
		}
	}
	return pids
}

// readParent reads a process's pid and its parent's from its stat file.
func readParent(stat string) (pid, ppid int, ok bool) {
	data, err := os.ReadFile(stat)
	if err != nil {
		return 0, 0, false
	}
	// "PID (COMM) STATE PPID ...", where COMM may hold anything.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	first, _, _ := strings.Cut(s, " ")
	pid, err1 := strconv.Atoi(first)
	ppid, err2 := strconv.Atoi(fields[1])
	return pid, ppid, err1 == nil && err2 == nil
}
