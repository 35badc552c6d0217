//go:build !unix

package audit

import (
	"errors"
	"io/fs"
	"os"
)

// openFile opens path for appending, creating it with mode 0600; create:
// it must not exist. It refuses a symbolic link at path (checked just
// before: this system has no O_NOFOLLOW).
func openFile(path string, create bool) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("a symbolic link")}
	}
	flag := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if create {
		flag |= os.O_EXCL
	}
	return os.OpenFile(path, flag, 0o600)
}

// openRead opens path for reading.
func openRead(path string) (*os.File, error) { return os.Open(path) }

// ownedByUserAlone: this system's file modes do not say who may read a
// file.
func ownedByUserAlone(fs.FileInfo) error { return nil }
