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
	"path/filepath"
	"sync"
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
	turn *turn       // this process's turn on the file
	st   unix.Stat_t // when locked, or when read
	data []byte      // what Read returned
	read bool
}

// maxLockTries bounds how often Lock starts again because the file it
// locked was replaced meanwhile, each time by a writer that went first.
const maxLockTries = 1000

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
	// Writers in this process queue here, before they open the file, so
	// that each opens the file its predecessor left; the first in line
	// then takes the flock, which other processes hold in turn.
	t, err := takeTurn(ctx, filepath.Join(root.Name(), name))
	if err != nil {
		return nil, err
	}
	for range maxLockTries {
		l, err := lockOnce(ctx, root, name)
		if err != nil {
			t.done()
			return nil, err
		}
		if l != nil {
			l.turn = t
			return l, nil
		}
		// Replaced since it was opened, by a writer of another process
		// that went first: again, on the file the path names now.
	}
	t.done()
	return nil, fmt.Errorf("%w: it kept being replaced while it was locked", ErrChanged)
}

// lockOnce opens name and takes its flock. It returns nil, nil when name
// no longer names the file locked.
func lockOnce(ctx context.Context, root *os.Root, name string) (*Locked, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	l := &Locked{f: f}
	if err := unix.Fstat(int(f.Fd()), &l.st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if err := flock(ctx, f); err != nil {
		f.Close()
		return nil, err
	}
	info, err := root.Lstat(name)
	switch {
	case err == nil && sameInode(info, &l.st):
		return l, nil
	case err == nil && info.Mode()&fs.ModeSymlink != 0:
		f.Close()
		return nil, fmt.Errorf("%w: it became a symbolic link", ErrChanged)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		f.Close()
		return nil, err
	}
	f.Close()
	return nil, nil
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
	l.turn.done()
	return err
}

// turn is the queue of this process's writers of one file: a token that
// one holds at a time.
type turn struct {
	key   string
	token chan struct{}
	users int // guarded by turnsMu
}

var (
	turnsMu sync.Mutex
	turns   = map[string]*turn{}
)

// takeTurn waits until no other writer of this process holds the path
// key, or ctx ends. The queue is per path, not per file: a writer that
// waited while the file was replaced then locks the new one.
func takeTurn(ctx context.Context, key string) (*turn, error) {
	turnsMu.Lock()
	t := turns[key]
	if t == nil {
		t = &turn{key: key, token: make(chan struct{}, 1)}
		turns[key] = t
	}
	t.users++
	turnsMu.Unlock()
	select {
	case t.token <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		t.leave()
		return nil, ctx.Err()
	}
}

// done ends the holder's turn.
func (t *turn) done() {
	if t == nil {
		return
	}
	<-t.token
	t.leave()
}

// leave forgets a writer; the last one removes the queue.
func (t *turn) leave() {
	turnsMu.Lock()
	defer turnsMu.Unlock()
	if t.users--; t.users == 0 {
		delete(turns, t.key)
	}
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
	if err := l.keepOwnerMode(tmp); err != nil {
		return err
	}
	return copyXattrs(l.f, tmp)
}

// keepOwnerMode gives tmp the owner, group and mode of the locked file.
func (l *Locked) keepOwnerMode(tmp *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(tmp.Fd()), &st); err != nil {
		return err
	}
	if st.Uid != l.st.Uid || st.Gid != l.st.Gid {
		if err := unix.Fchown(int(tmp.Fd()), int(l.st.Uid), int(l.st.Gid)); err != nil {
			return fmt.Errorf("%w (uid %d, gid %d): %w", ErrOwner, l.st.Uid, l.st.Gid, err)
		}
	}
	return unix.Fchmod(int(tmp.Fd()), uint32(l.st.Mode)&07777)
}

// keepStat gives tmp the owner, group and mode that info describes: for a
// file that could not be opened, whose extended attributes cannot be
// read either.
func keepStat(tmp *os.File, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return tmp.Chmod(info.Mode())
	}
	var ls unix.Stat_t
	ls.Uid, ls.Gid, ls.Mode = st.Uid, st.Gid, st.Mode
	return (&Locked{st: ls}).keepOwnerMode(tmp)
}

// sameInode reports whether info is the file st describes.
func sameInode(info fs.FileInfo, st *unix.Stat_t) bool {
	sys, ok := info.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == uint64(st.Dev) && uint64(sys.Ino) == uint64(st.Ino)
}
