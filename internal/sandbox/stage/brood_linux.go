package stage

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Brood is every process beneath the calling process, which is a child
// subreaper (prctl PR_SET_CHILD_SUBREAPER) or the first process of a PID
// namespace: its children, the leader first, and their descendants.
// Whatever session or process group a descendant moves to, and however
// many times it forks, it stays beneath: when its parent dies, the
// kernel hands it to the calling process, not to init. The stage and
// run_bash's watchdog use one to outlive what they start, and to kill it.
type Brood struct {
	leader   int                      // the leader's pid, and its process group's ID
	onLeader func(syscall.WaitStatus) // called once the leader has been reaped

	// mu is held while signalling and while reaping, so that a pid
	// signalled is never one just freed, and given to another process:
	// processes beneath are reaped here, or by a parent signalled before
	// them.
	mu           sync.Mutex
	leaderReaped bool

	reaped chan struct{} // gets a value when a process has been reaped
	empty  chan struct{} // closed when the calling process has no child left
}

// NewBrood returns the brood of the calling process whose leader is the
// child leader; onLeader gets the leader's wait status once it is
// reaped. Call Reap to reap it.
func NewBrood(leader int, onLeader func(syscall.WaitStatus)) *Brood {
	return &Brood{leader: leader, onLeader: onLeader, reaped: make(chan struct{}, 1), empty: make(chan struct{})}
}

// Empty is closed when the calling process has no child left.
func (b *Brood) Empty() <-chan struct{} { return b.empty }

// Reap reaps the children of the calling process as they end, reports
// the leader's end, and closes Empty when there is no child left. It
// returns then.
func (b *Brood) Reap() {
	defer close(b.empty)
	for {
		pid, err := waitExited()
		if errors.Is(err, syscall.ECHILD) {
			return
		}
		if err != nil {
			// Not expected; but the reaper must not give up.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var ws syscall.WaitStatus
		b.mu.Lock()
		wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		isLeader := err == nil && wpid == b.leader
		if isLeader {
			b.leaderReaped = true
		}
		b.mu.Unlock()
		if isLeader && b.onLeader != nil {
			b.onLeader(ws)
		}
		select {
		case b.reaped <- struct{}{}:
		default:
		}
	}
}

// Signal sends sig to the leader's process group, until the leader has
// been reaped, and to every process beneath the calling process, each
// before its children.
func (b *Brood) Signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.leaderReaped {
		_ = syscall.Kill(-b.leader, sig)
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

// KillAll kills every process beneath the calling process, again each
// time one is reaped (its orphans are the caller's children now) and
// from time to time, until none is left. Reap must be running.
func (b *Brood) KillAll() {
	pause := 10 * time.Millisecond
	for {
		b.Signal(syscall.SIGKILL)
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

// waitid's arguments (P_ALL, WEXITED, WNOWAIT).
const (
	pAll    = 0
	wExited = 4
	wNoWait = 0x1000000
)

// waitExited waits for a child of the calling process to end, and
// returns its pid without reaping it.
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
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info)), wExited|wNoWait, 0, 0)
		switch errno {
		case 0:
			return int(info.pid), nil
		case syscall.EINTR:
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
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pid, ppid, ok := readParent("/proc/" + e.Name() + "/stat")
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

// Parent returns the parent of process pid, as /proc/PID/stat says, and
// whether it could be read.
func Parent(pid int) (int, bool) {
	_, ppid, ok := readParent("/proc/" + strconv.Itoa(pid) + "/stat")
	return ppid, ok
}
