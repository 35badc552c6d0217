//go:build unix

package audit

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFile opens path for appending, creating it with mode 0600; create:
// it must not exist. It does not follow a symbolic link at path, and does
// not wait for a reader of a FIFO there.
func openFile(path string, create bool) (*os.File, error) {
	flag := os.O_WRONLY | os.O_APPEND | os.O_CREATE | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if create {
		flag |= os.O_EXCL
	}
	return os.OpenFile(path, flag, 0o600)
}

// openRead opens path for reading, not following a symbolic link.
func openRead(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// ownedByUserAlone checks that the user owns fi, and that no one else
// may read or write it.
func ownedByUserAlone(fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("has mode %#o: others may read or change the record; check what it holds, then chmod 600 it, or give another path", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(st.Uid) != uid {
			return fmt.Errorf("is owned by uid %d, not by this user (uid %d); give a path of the user's own", st.Uid, uid)
		}
	}
	return nil
}
