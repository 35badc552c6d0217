// Package atomicfile writes files so that a reader sees the old content or
// the new, never a part: the data goes to a temporary file beside the
// target, which is synced and renamed over it.
package atomicfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Write replaces the file at path with data, creating its parent
// directories. An existing file keeps its permission bits; a new one gets
// perm. A symbolic link at path is replaced, not followed.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := WriteIn(root, filepath.Base(path), data, perm); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = filepath.Join(dir, pe.Path)
		}
		return err
	}
	return nil
}

// WriteIn is Write inside an os.Root: every step resolves name through
// root, so nothing outside it is read or written. name is relative to the
// root. If name is a symbolic link it is replaced, not followed: callers
// that want to write through links resolve them first.
func WriteIn(root *os.Root, name string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if info, err := root.Lstat(name); err == nil {
		if info.IsDir() {
			return &fs.PathError{Op: "write", Path: name, Err: errors.New("is a directory")}
		}
		if info.Mode().IsRegular() {
			perm = info.Mode().Perm()
		}
	}
	var tmp *os.File
	var tmpName string
	for range 100 {
		tmpName = filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		tmp, err = root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			root.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return root.Rename(tmpName, name)
}
