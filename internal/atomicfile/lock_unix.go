//go:build unix

package atomicfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	errIsDir           error = syscall.EISDIR
	errSyncUnsupported error = syscall.EINVAL
)

// Locked is a file held under its advisory lock: the file a writer is
// about to replace. Unlock it when done.
type Locked struct {
	f    *os.File
	st   unix.Stat_t // when locked, or when read
	data []byte      // what Read returned
	read bool
}

// maxLockTries bounds how often Lock starts again because the file it
// locked was replaced meanwhile.
const maxLockTries = 100

// Lock opens the file name in root and takes its exclusive advisory lock
// (flock), waiting for the writer that holds it until ctx ends. A
// replace gives a path a new file, so after the lock is taken Lock checks
// that name still is the file locked, and starts again if not: the lock
// it returns is on the file name holds. File systems without flock are
// not locked; the check before the rename (Options.Base) still applies.
//
// The file is opened read-only and without blocking, so a FIFO cannot
// hang the call; callers check its type with Info.
func Lock(ctx context.Context, root *os.Root, name string) (*Locked, error) {
	for range maxLockTries {
		f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		if err := flock(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
		l := &Locked{f: f}
		if err := unix.Fstat(int(f.Fd()), &l.st); err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		info, err := root.Lstat(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.Close()
			return nil, err
		}
		if err == nil && sameInode(info, &l.st) {
			return l, nil
		}
		f.Close() // replaced or removed since it was opened: again
	}
	return nil, fmt.Errorf("%w: it kept being replaced while it was locked", ErrChanged)
}

// flock takes f's exclusive lock, polling so that ctx can end the wait.
func flock(ctx context.Context, f *os.File) error {
	wait := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
			return nil // no locks here: the check before the rename guards
		case !errors.Is(err, unix.EWOULDBLOCK):
			return &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 32*time.Millisecond)
	}
}

// File is the locked file, open for reading.
func (l *Locked) File() *os.File { return l.f }

// Info describes the locked file as it was when locked (or read).
func (l *Locked) Info() (fs.FileInfo, error) { return l.f.Stat() }

// Read reads the whole locked file, at most limit bytes plus one (so a
// caller sees that it is longer), and remembers what it read: a write
// with this lock as Options.Base fails unless the file still holds it.
func (l *Locked) Read(limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(l.f, 0, limit+1))
	if err != nil {
		return nil, err
	}
	if err := unix.Fstat(int(l.f.Fd()), &l.st); err != nil {
		return nil, err
	}
	l.data, l.read = data, true
	return data, nil
}

// Unlock releases the lock and closes the file.
func (l *Locked) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

func (l *Locked) isDir() bool   { return l.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (l *Locked) links() uint64 { return uint64(l.st.Nlink) }

// unchanged fails with ErrChanged unless name in root still is the locked
// file, with the same size, times and content as when it was read.
func (l *Locked) unchanged(root *os.Root, name string) error {
	info, err := root.Lstat(name)
	if err != nil || !sameInode(info, &l.st) {
		return ErrChanged
	}
	var now unix.Stat_t
	if err := unix.Fstat(int(l.f.Fd()), &now); err != nil {
		return err
	}
	if now.Size != l.st.Size || now.Mtim != l.st.Mtim || now.Ctim != l.st.Ctim {
		return ErrChanged
	}
	if l.read {
		// Timestamps are coarse: compare the content too.
		data, err := io.ReadAll(io.NewSectionReader(l.f, 0, int64(len(l.data))+1))
		if err != nil {
			return err
		}
		if !bytes.Equal(data, l.data) {
			return ErrChanged
		}
	}
	return nil
}

// keepAttrs gives tmp, the replacement, the owner, group, mode and
// extended attributes of the locked file. The owner comes first: chown
// clears the setuid and setgid bits and file capabilities.
func (l *Locked) keepAttrs(tmp *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(tmp.Fd()), &st); err != nil {
		return err
	}
	if st.Uid != l.st.Uid || st.Gid != l.st.Gid {
		if err := unix.Fchown(int(tmp.Fd()), int(l.st.Uid), int(l.st.Gid)); err != nil {
			return fmt.Errorf("%w (uid %d, gid %d): %w", ErrOwner, l.st.Uid, l.st.Gid, err)
		}
	}
	if err := unix.Fchmod(int(tmp.Fd()), uint32(l.st.Mode)&07777); err != nil {
		return err
	}
	return copyXattrs(l.f, tmp)
}

// sameInode reports whether info is the file st describes.
func sameInode(info fs.FileInfo, st *unix.Stat_t) bool {
	sys, ok := info.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == uint64(st.Dev) && uint64(sys.Ino) == uint64(st.Ino)
}
