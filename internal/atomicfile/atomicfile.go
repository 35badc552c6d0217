// Package atomicfile writes files so that a reader sees the old content or
// the new, never a part: the data goes to a temporary file beside the
// target, which is synced and renamed over it, and the directory is
// synced after the rename, so a replace that reported success survives a
// power cut.
//
// A replace keeps what it can of the file it replaces: the permission
// bits (setuid, setgid and sticky included), the owner and group, and the
// extended attributes (ACLs among them). It cannot keep the inode: other
// hard links of the file keep the old content, and processes that hold it
// open keep reading the old file.
//
// Writers of one file through this package take turns: each holds an
// advisory lock (flock) on the file it replaces, across processes. A
// writer that read the file first (see Lock) also checks, just before the
// rename, that the file is still the one it read, so a writer that does
// not lock (an editor) is caught too: the write fails with ErrChanged
// rather than undo the other's change.
//
// Temporary files are named .agenthost-BOOT-PID-START-RANDOM.tmp (or
// .move for a copy under way), naming the process that writes them. One
// left behind by a process that is gone (killed, or a crash) is removed
// by the next write into its directory; see Sweep.
package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrChanged is the error of a write whose file changed after the caller
// read it (Options.Base): nothing was written.
var ErrChanged = errors.New("the file changed while it was being edited")

// ErrXattr is wrapped by the error of a write that could not give the new
// file an extended attribute of the file it replaces: nothing was
// written.
var ErrXattr = errors.New("cannot keep an extended attribute of the file")

// ErrNoTime is the error of a write, or of a caller's commit (see
// Commit), whose context ends within CommitMargin: nothing was changed.
var ErrNoTime = errors.New("too little time is left before the call's deadline to finish safely")

// CommitMargin is the least time before its context's deadline that a
// write starts its rename: the rest of the call (syncing the directory,
// answering) must end before the caller gives up on it, or the caller
// would report a failure for a write that happened.
const CommitMargin = 500 * time.Millisecond

// Commit reports whether an irreversible step may start under ctx: nil,
// or ctx's error, or ErrNoTime when its deadline is within CommitMargin.
func Commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < CommitMargin {
		return ErrNoTime
	}
	return nil
}

// ErrNotDurable is wrapped by the error of a write that replaced the file
// but could not sync its directory: the new content is in place, but may
// not survive a power cut.
var ErrNotDurable = errors.New("the file was written, but its directory could not be synced to disk")

// ErrOwner is wrapped by the error of a write that could not give the new
// file the owner and group of the file it replaces: nothing was written.
var ErrOwner = errors.New("cannot keep the file's owner")

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
func WriteIn(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	_, err := WriteFile(context.Background(), root, name, data, Options{Perm: perm})
	return err
}

// Options say how WriteFile writes.
type Options struct {
	// Perm is the permission of a new file. An existing regular file
	// keeps its own mode, owner, group and extended attributes.
	Perm fs.FileMode

	// Base, when not nil, is the file as the caller locked and read it
	// (Lock, then Locked.Read). WriteFile then uses that lock instead of
	// taking its own, and fails with ErrChanged unless name still is that
	// file, with the content read, just before the rename.
	Base *Locked
}

// Result says what WriteFile did besides writing.
type Result struct {
	// Created is true when name did not exist.
	Created bool
	// Links is the number of hard links of the file replaced. When it is
	// more than 1, the other names keep the old content.
	Links uint64
}

// WriteFile replaces the file name in root with data, creating its
// missing parent directories, and returns what it did.
//
// It does nothing that outlives a failure: the temporary file and the
// directories it created are removed when it fails, ctx included. ctx is
// checked while the data is written and last just before the rename;
// once the file is renamed into place the write has happened and
// WriteFile reports success. It does not start the rename with less than
// CommitMargin left before ctx's deadline (ErrNoTime).
//
// An existing regular file is locked while it is replaced (see Lock) and
// keeps its mode, owner, group and extended attributes; when its owner
// cannot be kept (a writer that is not root replacing another user's
// file) nothing is written and the error wraps ErrOwner.
func WriteFile(ctx context.Context, root *os.Root, name string, data []byte, opts Options) (res Result, err error) {
	dir := filepath.Dir(name)
	undo, err := MkdirAll(root, dir, 0o755)
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	lk := opts.Base
	var unreadable fs.FileInfo // an existing file this process may not read
	if lk == nil {
		info, err := root.Lstat(name)
		switch {
		case err == nil && info.IsDir():
			return res, &fs.PathError{Op: "write", Path: name, Err: errIsDir}
		case err == nil && info.Mode().IsRegular():
			lk, err = Lock(ctx, root, name)
			switch {
			case errors.Is(err, fs.ErrPermission):
				// A file we may replace but not read (mode 0200): it
				// cannot be locked; keep what its stat says.
				unreadable = info
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				return res, err
			}
			if lk != nil {
				defer lk.Unlock()
			}
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return res, err
		}
	}
	if lk != nil && lk.isDir() {
		return res, &fs.PathError{Op: "write", Path: name, Err: errIsDir}
	}
	res.Created = lk == nil && unreadable == nil
	if lk != nil {
		res.Links = lk.links()
	}
	Sweep(root, dir)
	tmp, tmpName, err := createTemp(root, dir, "tmp")
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			root.Remove(tmpName)
		}
	}()
	if err = writeAll(ctx, tmp, data); err != nil {
		return res, err
	}
	switch {
	case lk != nil:
		err = lk.keepAttrs(tmp)
	case unreadable != nil:
		err = keepStat(tmp, unreadable)
	default:
		err = tmp.Chmod(opts.Perm)
	}
	if err != nil {
		return res, err
	}
	if err = tmp.Sync(); err != nil {
		return res, err
	}
	if err = tmp.Close(); err != nil {
		return res, err
	}
	if err = Commit(ctx); err != nil {
		return res, err
	}
	if opts.Base != nil {
		if err = opts.Base.unchanged(root, name); err != nil {
			return res, err
		}
	}
	if err = root.Rename(tmpName, name); err != nil {
		return res, err
	}
	// The file is in place: from here on the write has happened.
	if serr := SyncDir(root, dir); serr != nil {
		return res, fmt.Errorf("%w: %w", ErrNotDurable, serr)
	}
	return res, nil
}

// writeAll writes data to f in pieces, stopping when ctx ends.
func writeAll(ctx context.Context, f *os.File, data []byte) error {
	const piece = 4 << 20
	for len(data) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(data), piece)
		if _, err := f.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// SyncDir flushes the directory dir of root to disk, so that a rename or
// a new entry in it survives a power cut.
func SyncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errSyncUnsupported) {
		return err
	}
	return nil
}
