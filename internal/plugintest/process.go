package plugintest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// Processes lists the live processes whose environment holds kv, a
// "NAME=VALUE" entry: the processes of a plugin or server a test marked
// with a variable of its own, among those of the tests running beside
// it. It reads /proc, so it works on Linux only.
func Processes(t testing.TB, kv string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(kv + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !Alive(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Alive reports whether pid is a live process: neither gone nor a
// zombie.
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// HostPID reads a process id as a test plugin answers it, "PID
// pid:[INODE]" (its number in the PID namespace with that inode, which
// a sandboxed plugin has of its own), and returns the process's id in
// the test's own namespace, found in /proc: the number of the process in
// that namespace with that PID there. An answer of a number alone is
// that number.
func HostPID(answer string) (int, error) {
	num, ns, _ := strings.Cut(strings.TrimSpace(answer), " ")
	pid, err := strconv.Atoi(num)
	if err != nil {
		return 0, fmt.Errorf("not a process id: %q", answer)
	}
	if own, _ := os.Readlink("/proc/self/ns/pid"); ns == "" || ns == own {
		return pid, nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if link, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns/pid")); link != ns {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if ids, ok := strings.CutPrefix(line, "NSpid:"); ok {
				f := strings.Fields(ids)
				if len(f) > 0 && f[len(f)-1] == num {
					return strconv.Atoi(e.Name())
				}
			}
		}
	}
	return 0, fmt.Errorf("no process %d in %s", pid, ns)
}

// StartedBy reports whether the process host started pid: pid is its
// child, or the child of the first process of a sandbox it started
// (which runs a plugin under it).
func StartedBy(pid, host int) bool {
	ppid, ok := sandbox.Parent(pid)
	if ok && ppid != host {
		ppid, ok = sandbox.Parent(ppid)
	}
	return ok && ppid == host
}
