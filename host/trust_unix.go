//go:build unix

package host

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// trustChecker checks plugin files against the rule of InsecureError,
// remembering the directories it has checked.
type trustChecker struct {
	uid uint32 // the host's effective user

	mu   sync.Mutex
	dirs map[string]error // by stickyOK flag and path
}

func newTrustChecker() *trustChecker {
	return &trustChecker{uid: uint32(os.Geteuid()), dirs: map[string]error{}}
}

// pluginsDir checks the plugins directory, and every directory above it,
// both on the way its path names and on the way symlinks resolve it.
func (c *trustChecker) pluginsDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	paths := []string{abs}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil && resolved != abs {
		paths = append(paths, resolved)
	}
	for _, p := range paths {
		if err := c.dir(p, "plugins directory", false); err != nil {
			return err
		}
		if err := c.above(p); err != nil {
			return err
		}
	}
	return nil
}

// binary checks a plugin binary in a checked plugins directory: the file,
// and when it is reached through a symlink, the directories above the
// file it resolves to.
func (c *trustChecker) binary(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := c.node(path, "plugin binary", info, false); err != nil {
		return err
	}
	if l, err := os.Lstat(path); err == nil && l.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		return c.above(resolved)
	}
	return nil
}

// lockFile checks the lock file and the directories above it: one that
// others can write would let them list their own binaries.
func (c *trustChecker) lockFile(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	info, err := os.Stat(abs)
	if err != nil {
		return err
	}
	if err := c.node(abs, "lock file", info, false); err != nil {
		return err
	}
	return c.above(abs)
}

// above checks every directory above path, up to the root. A sticky one
// may be writable by others.
func (c *trustChecker) above(path string) error {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if err := c.dir(p, "directory", true); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// dir checks one directory, once.
func (c *trustChecker) dir(path, what string, stickyOK bool) error {
	key := strconv.FormatBool(stickyOK) + path
	c.mu.Lock()
	err, done := c.dirs[key]
	c.mu.Unlock()
	if done {
		return err
	}
	info, err := os.Stat(path)
	if err == nil {
		err = c.node(path, what, info, stickyOK)
	}
	c.mu.Lock()
	c.dirs[key] = err
	c.mu.Unlock()
	return err
}

// node checks one file or directory.
func (c *trustChecker) node(path, what string, info fs.FileInfo, stickyOK bool) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return checkOwnerAndMode(path, what, st, c.uid, stickyOK)
}

// checkOwnerAndMode is the rule of InsecureError for one file or
// directory.
func checkOwnerAndMode(path, what string, st *syscall.Stat_t, uid uint32, stickyOK bool) error {
	mode := uint32(st.Mode) & 0o7777
	if st.Uid != 0 && st.Uid != uid {
		return &InsecureError{
			What: what, Path: path,
			Problem: fmt.Sprintf("is owned by %s, not by you (%s) or root", userName(st.Uid), userName(uid)),
			Fix:     "chown " + userWord(uid) + " " + shellWord(path),
		}
	}
	sticky := stickyOK && mode&syscall.S_ISVTX != 0
	if mode&0o002 != 0 && !sticky {
		return &InsecureError{
			What: what, Path: path,
			Problem: fmt.Sprintf("is writable by others (mode 0%o)", mode),
			Fix:     "chmod o-w " + shellWord(path),
		}
	}
	if mode&0o020 != 0 && !sticky && !privateGroup(st.Gid, st.Uid) {
		return &InsecureError{
			What: what, Path: path,
			Problem: fmt.Sprintf("is writable by group %s (mode 0%o)", groupName(st.Gid), mode),
			Fix:     "chmod g-w " + shellWord(path),
		}
	}
	return nil
}

// checkOpenedBinary checks the file a launch opened, as its descriptor
// says it is now.
func checkOpenedBinary(path string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return checkOwnerAndMode(path, "plugin binary", st, uint32(os.Geteuid()), false)
}

// privateGroup reports whether gid is the private group of the user uid:
// that user's primary group, which no other user has as theirs and which
// lists no other member. What cannot be told (a group that /etc/group
// does not hold) is not private.
func privateGroup(gid, uid uint32) bool {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || u.Gid != strconv.FormatUint(uint64(gid), 10) {
		return false
	}
	g := strconv.FormatUint(uint64(gid), 10)
	found := false
	ok := scanColonFile("/etc/group", func(f []string) bool {
		if len(f) < 4 || f[2] != g {
			return true
		}
		found = true
		for _, m := range strings.Split(f[3], ",") {
			if m != "" && m != u.Username {
				return false
			}
		}
		return true
	})
	if !ok || !found {
		return false
	}
	return scanColonFile("/etc/passwd", func(f []string) bool {
		return len(f) < 4 || f[3] != g || f[0] == u.Username
	})
}

// scanColonFile calls each for the fields of every line of a colon-
// separated file such as /etc/group, until it returns false; it reports
// whether the file was read to the end.
func scanColonFile(path string, each func(fields []string) bool) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !each(strings.Split(line, ":")) {
			return false
		}
	}
	return sc.Err() == nil
}

// userName is "uid N (name)", or "uid N".
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return "uid " + id + " (" + u.Username + ")"
	}
	return "uid " + id
}

// userWord names the user uid for chown.
func userWord(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && shellWord(u.Username) == u.Username {
		return u.Username
	}
	return id
}

// groupName is the group's name, or "gid N".
func groupName(gid uint32) string {
	id := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(id); err == nil {
		return g.Name
	}
	return "gid " + id
}
