package main

import (
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdDir is a dirHandle made of a directory descriptor. It opens what is
// in its directory with openat(2) and O_NOFOLLOW, by one name, never "."
// or "..", so it reaches nothing outside the directory: the confinement
// os.Root gives, without os.Root's per-call path parsing and per-file
// bookkeeping, which are most of the cost of a walk over many small
// files. The walk's first directory is opened through the workspace's
// os.Root.
type fdDir struct{ fd int }

func openFastDir(ws *os.Root, rel string) (dirHandle, error) {
	f, err := ws.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd, err := dupFd(f)
	if err != nil {
		return nil, err
	}
	return fdDir{fd}, nil
}

// dupFd returns a close-on-exec duplicate of f's descriptor.
func dupFd(f *os.File) (int, error) {
	conn, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	err = conn.Control(func(raw uintptr) { fd, dupErr = fcntlDup(int(raw)) })
	if err != nil {
		return -1, err
	}
	return fd, dupErr
}

func fcntlDup(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// direntBuffers are getdents(2) buffers.
var direntBuffers = sync.Pool{New: func() any { return new([8192]byte) }}

// readDir lists the directory with getdents(2) on the descriptor itself,
// which is read once: the entries' types come with their names, and only
// an entry of unknown type costs an fstatat(2).
func (d fdDir) readDir() ([]dirEntry, error) {
	buf := direntBuffers.Get().(*[8192]byte)
	defer direntBuffers.Put(buf)
	var ents []dirEntry
	for {
		n, err := syscall.Getdents(d.fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return ents, err
		}
		if n <= 0 {
			return ents, nil
		}
		if ents == nil {
			// Room for the entries of a buffer of names of average length.
			ents = make([]dirEntry, 0, n/32+1)
		}
		ents = d.parseDirents(buf[:n], ents)
	}
}

// parseDirents appends the entries of a getdents64 buffer: records of an
// inode (8 bytes), an offset (8), the record's length (2), a type (1) and
// a NUL-terminated name.
func (d fdDir) parseDirents(b []byte, ents []dirEntry) []dirEntry {
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		rec := b[:reclen]
		b = b[reclen:]
		if binary.NativeEndian.Uint64(rec[0:8]) == 0 {
			continue // a deleted entry
		}
		name := rec[nameOff:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		e := dirEntry{name: string(name)}
		switch rec[18] {
		case syscall.DT_REG:
		case syscall.DT_DIR:
			e.typ = fs.ModeDir
		case syscall.DT_LNK:
			e.typ = fs.ModeSymlink
		case syscall.DT_FIFO:
			e.typ = fs.ModeNamedPipe
		case syscall.DT_SOCK:
			e.typ = fs.ModeSocket
		case syscall.DT_CHR:
			e.typ = fs.ModeDevice | fs.ModeCharDevice
		case syscall.DT_BLK:
			e.typ = fs.ModeDevice
		default:
			typ, ok := d.statType(e.name)
			if !ok {
				continue // gone since the listing
			}
			e.typ = typ
		}
		ents = append(ents, e)
	}
	return ents
}

// statType is the type of an entry that the listing did not tell.
func (d fdDir) statType(name string) (fs.FileMode, bool) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false
		}
		break
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0, true
	case unix.S_IFDIR:
		return fs.ModeDir, true
	case unix.S_IFLNK:
		return fs.ModeSymlink, true
	}
	return fs.ModeIrregular, true
}

func (d fdDir) openDir(name string) (dirHandle, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return fdDir{fd}, nil
}

func (d fdDir) openFile(name string) (file, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return fdFile(fd), nil
}

func (d fdDir) realPath() (string, bool) { return fdPath(d.fd) }

func (d fdDir) close() error { return syscall.Close(d.fd) }

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// fdFile is a file made of a descriptor opened with O_NONBLOCK: a read
// never waits, whatever the descriptor turns out to be.
type fdFile int

func (f fdFile) read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func (f fdFile) stat() (int64, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f), &st); err != nil {
		return 0, false, err
	}
	return st.Size, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}

func (f fdFile) realPath() (string, bool) { return fdPath(int(f)) }

func (f fdFile) rewind() error {
	_, err := syscall.Seek(int(f), 0, io.SeekStart)
	return err
}

func (f fdFile) close() error { return syscall.Close(int(f)) }

// procFds is /proc/self/fd, open for the life of the plugin, or -1 when
// it cannot be opened.
var procFds = sync.OnceValue(func() int {
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// fdPath is the path of what descriptor fd is open on, as the kernel
// names it now: the link /proc/self/fd/N, which follows renames. ok is
// false for a file or directory that has been removed: the kernel names
// it by the path it would have now, had it not been removed, and " (deleted)"
// after it, which is not where it was when it was removed.
func fdPath(fd int) (path string, ok bool) {
	path, ok = readFdLink(fd)
	if !ok {
		return "", false
	}
	if strings.HasSuffix(path, " (deleted)") && !isAt(fd, path) {
		// Removed, unless a name that really ends so leads to it.
		return "", false
	}
	return path, true
}

// isAt reports whether path names what fd is open on.
func isAt(fd int, path string) bool {
	var st, at unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Lstat(path, &at) != nil {
		return false
	}
	return st.Dev == at.Dev && st.Ino == at.Ino
}

// readFdLink reads the link /proc/self/fd/N of fd.
func readFdLink(fd int) (string, bool) {
	dir := procFds()
	if dir < 0 {
		return "", false
	}
	name := strconv.Itoa(fd)
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dir, name, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return "", false
		case n < len(buf):
			return string(buf[:n]), true
		case len(buf) >= 1<<16:
			return "", false
		}
		buf = make([]byte, 2*len(buf))
	}
}

// beneath finds names inside a workspace root with openat2(2), one call
// per name, where the kernel has it, and through the os.Root elsewhere.
type beneath struct {
	ws *os.Root
	fd int // the root's descriptor; -1 to use ws
}

func openBeneath(ws *os.Root) beneath {
	b := beneath{ws: ws, fd: -1}
	if f, err := ws.Open("."); err == nil {
		if fd, err := dupFd(f); err == nil {
			b.fd = fd
		}
		f.Close()
	}
	return b
}

// exists reports whether rel (a path in the system's form) names an
// entry inside the root, reached without a symbolic link or "..".
func (b *beneath) exists(rel string) bool {
	if b.fd >= 0 {
		how := unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for range 3 {
			fd, err := unix.Openat2(b.fd, rel, &how)
			switch err {
			case nil:
				unix.Close(fd)
				return true
			case unix.EINTR, unix.EAGAIN:
				continue // a rename somewhere during the lookup
			case unix.ENOSYS, unix.EPERM:
				// No openat2 here (or a filter refusing it).
				unix.Close(b.fd)
				b.fd = -1
			default:
				return false
			}
			break
		}
	}
	_, err := b.ws.Lstat(rel)
	return err == nil
}

func (b *beneath) close() {
	if b.fd >= 0 {
		unix.Close(b.fd)
	}
}
