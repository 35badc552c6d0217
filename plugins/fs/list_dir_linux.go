package main

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readTypes reads the entries of dir, a directory opened in a root, in
// name order, as readEntries does but with each entry's type as the
// directory records it (d_type, from getdents) rather than from a stat
// of each entry. Only an entry whose type the file system does not
// record (DT_UNKNOWN) is stat'ed, with fstatat relative to dir's own
// descriptor, as in readEntries. An entry for which keep says no is
// returned with its name alone.
//
// os.File.ReadDir cannot serve: on a directory opened in an os.Root it
// stats every entry.
func readTypes(dir *os.File, keep func(name string) bool) ([]entry, error) {
	conn, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	var entries []entry
	var rerr error
	cerr := conn.Control(func(fd uintptr) {
		entries, rerr = getdentsTypes(int(fd), keep)
	})
	if cerr != nil {
		return nil, cerr
	}
	if rerr != nil {
		return nil, rerr
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return entries, nil
}

// The layout of a linux_dirent64, the record getdents64 writes.
const (
	direntReclen = int(unsafe.Offsetof(unix.Dirent{}.Reclen))
	direntType   = int(unsafe.Offsetof(unix.Dirent{}.Type))
	direntName   = int(unsafe.Offsetof(unix.Dirent{}.Name))
)

// direntBufs are the buffers getdents64 reads into, kept from one
// listing to the next rather than allocated for each directory.
var direntBufs = sync.Pool{New: func() any { return new([16 << 10]byte) }}

// getdentsTypes reads the directory fd to its end; see readTypes.
func getdentsTypes(fd int, keep func(name string) bool) ([]entry, error) {
	buf := direntBufs.Get().(*[16 << 10]byte)
	defer direntBufs.Put(buf)
	var entries []entry
	var st unix.Stat_t
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.SyscallError{Syscall: "getdents64", Err: err}
		}
		if n <= 0 {
			return entries, nil
		}
		entries = slices.Grow(entries, countDirents(buf[:n]))
		for b := buf[:n]; len(b) > direntName; {
			reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
			if reclen <= direntName || reclen > len(b) {
				return nil, errors.New("getdents64: malformed record")
			}
			rec := b[:reclen]
			b = b[reclen:]
			name := rec[direntName:]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := entry{name: string(name)}
			if !keep(e.name) {
				entries = append(entries, e)
				continue
			}
			if typ, ok := dtypeBits(rec[direntType]); ok {
				e.mode = typ
			} else {
				err := lstatat(fd, e.name, &st)
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since it was listed
				}
				e.err = err
				if err == nil {
					e.mode = typeBits(uint32(st.Mode))
				}
			}
			entries = append(entries, e)
		}
	}
}

// countDirents counts the records in buf, as getdents64 filled it, so
// that their entries are allocated at once.
func countDirents(buf []byte) int {
	n := 0
	for b := buf; len(b) > direntName; n++ {
		reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
		if reclen <= direntName || reclen > len(b) {
			break // malformed: getdentsTypes says so
		}
		b = b[reclen:]
	}
	return n
}

// dtypeBits are the fs.FileMode type bits of a d_type, and false for
// DT_UNKNOWN (or a type this does not know).
func dtypeBits(t uint8) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}
