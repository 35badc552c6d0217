package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MkdirAll creates the directory dir of root and its missing parents,
// like os.Root.MkdirAll, and returns undo, which removes the directories
// it created, deepest first, as long as they are still empty: a caller
// that fails after MkdirAll leaves the tree as it found it.
func MkdirAll(root *os.Root, dir string, perm fs.FileMode) (undo func(), err error) {
	var created []string
	undo = func() {
		for i := len(created) - 1; i >= 0; i-- {
			root.Remove(created[i])
		}
	}
	dir = filepath.Clean(dir)
	if dir == "." {
		return undo, nil
	}
	parts := strings.Split(dir, string(filepath.Separator))
	cur := ""
	for _, part := range parts {
		cur = filepath.Join(cur, part)
		err := root.Mkdir(cur, perm)
		if err == nil {
			created = append(created, cur)
			continue
		}
		if errors.Is(err, fs.ErrExist) {
			info, serr := root.Stat(cur)
			if serr == nil && info.IsDir() {
				continue
			}
			if serr == nil {
				err = &fs.PathError{Op: "mkdir", Path: cur, Err: syscall.ENOTDIR}
			}
		}
		undo()
		return func() {}, err
	}
	return undo, nil
}

// sweepKey identifies the directory dir of root for Sweep's once per
// directory rule, by file and path (an inode is reused once its directory
// is removed), "" when it cannot be read.
func sweepKey(root *os.Root, dir string) string {
	info, err := root.Stat(dir)
	if err != nil {
		return ""
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d:%s", st.Dev, st.Ino, filepath.Join(root.Name(), dir))
	}
	return ""
}
