package main

import (
	"io/fs"
	"os"
	"syscall"
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

func (d fdDir) readDir() ([]fs.DirEntry, error) {
	fd, err := fcntlDup(d.fd)
	if err != nil {
		return nil, err
	}
	// A file made from a descriptor lists entries with the types the
	// kernel reports, and stats (with fstatat, relative to it) only those
	// of unknown type.
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.ReadDir(-1)
}

func fcntlDup(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

func (d fdDir) openDir(name string) (dirHandle, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return fdDir{fd}, nil
}

func (d fdDir) readFile(name string, buf []byte) ([]byte, error) {
	fd, err := openat(d.fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC)
	if err != nil {
		return buf[:0], err
	}
	defer syscall.Close(fd)
	return readFd(fd, buf[:0])
}

func (d fdDir) close() error { return syscall.Close(d.fd) }

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// readFd reads fd to its end into buf, growing it as needed.
func readFd(fd int, buf []byte) ([]byte, error) {
	sized := false
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxFileSize {
				return buf, errTooLarge
			}
			size := 0
			if !sized {
				sized = true
				var st syscall.Stat_t
				if syscall.Fstat(fd, &st) == nil {
					size = int(min(st.Size, maxFileSize))
				}
			}
			buf = grow(buf, size)
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
