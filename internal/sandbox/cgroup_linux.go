package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A process limit set with RLIMIT_NPROC counts the processes of the
// sandbox's user in its user namespace; but the kernel counts none of
// root's. A host running as root may use cgroup v1's pids controller
// instead, whose hierarchy root may write: each sandbox gets a group of
// its own, whose pids.max bounds every process and thread in it,
// whatever user it runs as. (An unprivileged user's cgroups are not
// delegated on cgroup v1.)

// pidsHierarchy is the mount point of cgroup v1's pids controller when
// this process may make groups in it, or "".
var pidsHierarchy = sync.OnceValue(func() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" || fields[3] != "/" {
			continue
		}
		for _, opt := range strings.Split(tail[2], ",") {
			if opt == "pids" && unix.Access(fields[4], unix.W_OK) == nil {
				return fields[4]
			}
		}
	}
	return ""
})

// groups numbers the pids groups this process makes.
var groups atomic.Uint64

// newPidsGroup makes a pids group bounded to max processes, and returns
// its directory; "" when there is no hierarchy to make it in.
func newPidsGroup(max uint64) (string, error) {
	root := pidsHierarchy()
	if root == "" || max == 0 {
		return "", nil
	}
	mine := filepath.Join(root, "agenthost-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(mine, 0o755); err == nil {
		sweepPidsGroups(root)
	}
	dir := filepath.Join(mine, strconv.FormatUint(groups.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("making a pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(max, 10)), 0); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("bounding a pids cgroup: %w", err)
	}
	return dir, nil
}

// sweepPidsGroups removes the groups that hosts no longer running left
// behind: killed, they could not.
func sweepPidsGroups(root string) {
	hosts, _ := filepath.Glob(filepath.Join(root, "agenthost-*"))
	for _, h := range hosts {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(h), "agenthost-"))
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) == nil {
			continue
		}
		left, _ := filepath.Glob(filepath.Join(h, "[0-9]*"))
		for _, g := range left {
			_ = unix.Rmdir(g)
		}
		_ = unix.Rmdir(h)
	}
}

// joinGroup moves the calling process into the group dir.
func joinGroup(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
		return fmt.Errorf("joining the pids cgroup: %w", err)
	}
	return nil
}

// PidsGroupsAvailable reports whether a sandbox's processes can be
// bounded by a cgroup (see newPidsGroup).
func PidsGroupsAvailable() bool { return pidsHierarchy() != "" }
