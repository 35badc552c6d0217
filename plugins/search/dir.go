package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// dirHandle is an open directory of a walk. Every name it takes is one
// entry of the directory, never a path: what it opens is inside the
// directory, whatever symbolic links or renames happen meanwhile.
type dirHandle interface {
	// readDir lists the directory, with the entries' types as the system
	// reports them: no stat per entry where it can be avoided.
	readDir() ([]dirEntry, error)
	// openDir opens a subdirectory; it refuses a symbolic link.
	openDir(name string) (dirHandle, error)
	// openFile opens a file for reading, refusing a symbolic link and
	// never blocking, on a FIFO or anything else.
	openFile(name string) (file, error)
	// realPath is the directory's path as the system names it now, where
	// it can tell (see placeChecker); ok is false where it cannot.
	realPath() (path string, ok bool)
	close() error
}

// dirEntry is an entry of a listed directory.
type dirEntry struct {
	name string
	typ  fs.FileMode // the type bits: fs.ModeDir, fs.ModeSymlink, 0 for a regular file
}

// file is a file open for reading.
type file interface {
	// read reads into p, like read(2).
	read(p []byte) (int, error)
	// stat reports the file's size and whether it is a regular file.
	stat() (size int64, regular bool, err error)
	// realPath is the file's path as the system names it now; see
	// dirHandle.realPath.
	realPath() (path string, ok bool)
	// rewind makes the next read start at the beginning of the file.
	rewind() error
	close() error
}

const (
	// maxFileSize is the largest file search_text reads; larger ones are
	// skipped and counted, from their size, before they are read.
	maxFileSize = 256 << 20
	// maxGeneratedSize is how much of a file that says it is empty is
	// read: the files of /proc, /sys and their kind are made up as they
	// are read, and some never end.
	maxGeneratedSize = 1 << 20
	// readBufferSize is a worker's first read buffer; it grows for larger
	// files, and is dropped after one larger than keepBufferSize.
	readBufferSize = 64 << 10
	keepBufferSize = 8 << 20
)

var (
	errNotRegular = errors.New("not a regular file")
	errNotDir     = errors.New("not a directory")
	errTooLarge   = errors.New("file too large")
	errNoEnd      = errors.New("file of unknown size too long")
)

// largeBuffer admits one buffer larger than keepBufferSize at a time in
// the whole plugin, so that the memory of the searches running together
// stays within about maxFileSize plus keepBufferSize per worker, however
// many large files they meet.
var largeBuffer = make(chan struct{}, 1)

// readWith reads f into buf and calls use with the content while f is
// still open. It returns a buffer to reuse: buf, or a new one when buf
// had to grow past keepBufferSize, which is then let go.
func readWith(f file, buf []byte, use func(content []byte)) ([]byte, error) {
	if cap(buf) > keepBufferSize {
		buf = nil
	}
	content, err := readAll(f, buf[:0])
	return used(content, err, use)
}

// used calls use with content when err is nil, and returns the buffer to
// reuse, as readWith does.
func used(content []byte, err error, use func(content []byte)) ([]byte, error) {
	if err == nil {
		use(content)
	}
	if cap(content) > keepBufferSize {
		<-largeBuffer
		return make([]byte, 0, readBufferSize), err
	}
	return content, err
}

// readAll reads f to its end into buf, growing it as needed. It reads at
// most readBufferSize bytes before it asks for the file's size, and stops
// there when the file is not a regular one or is larger than maxFileSize;
// most files fit in the first read and are read without that extra call.
func readAll(f file, buf []byte) ([]byte, error) {
	buf, eof, err := readHead(f, buf, false)
	if eof || err != nil {
		return buf, err
	}
	limit, size, err := sizeLimit(f)
	if err != nil {
		return buf[:0], err
	}
	return readRest(f, buf, limit, size)
}

// readHead reads into buf until it holds readBufferSize bytes, or all of
// buf's room when that is less, or the file ends; eof tells which. With
// shortEnds, a read that returns less than it asked for ends the file
// (see wholeReadFileSystems).
func readHead(f file, buf []byte, shortEnds bool) (_ []byte, eof bool, err error) {
	end := min(cap(buf), readBufferSize)
	for len(buf) < end {
		asked := end - len(buf)
		n, err := f.read(buf[len(buf):end])
		buf = buf[:len(buf)+max(n, 0)]
		switch {
		case err == io.EOF || (err == nil && n == 0):
			return buf, true, nil
		case err != nil:
			return buf, false, err
		case shortEnds && n < asked:
			return buf, true, nil
		}
	}
	return buf, false, nil
}

// sizeLimit asks for f's size, for a file that did not end within its
// first read: it returns how much of it may be read (maxFileSize, or
// maxGeneratedSize for a file that says it is empty) and its size, or
// errNotRegular or errTooLarge.
func sizeLimit(f file) (limit, size int, err error) {
	n, regular, err := f.stat()
	switch {
	case err != nil:
		return 0, 0, err
	case !regular:
		return 0, 0, errNotRegular
	case n > maxFileSize:
		return 0, 0, errTooLarge
	case n == 0:
		return maxGeneratedSize, 0, nil
	}
	return maxFileSize, int(n), nil
}

// readRest reads the rest of f after readHead, into buf grown as needed
// up to limit bytes, and to size at once when size is not 0.
func readRest(f file, buf []byte, limit, size int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) || len(buf) > limit {
			switch {
			case len(buf) < limit:
				buf = grow(buf, size, limit)
				size = 0
			case limit == maxGeneratedSize:
				return buf, errNoEnd
			default:
				return buf, errTooLarge
			}
		}
		n, err := f.read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+max(n, 0)]
		switch {
		case err == io.EOF || (err == nil && n == 0):
			return buf, nil
		case err != nil:
			return buf, err
		}
	}
}

// errBinary is a file that readCandidate found a NUL byte in.
var errBinary = errors.New("binary file")

// readCandidate is readWith for a search: a file larger than its first
// read is not read whole at once, but a window of whole lines at a time
// into buf, whatever its size, and candidate is asked about each window's
// lines. Only a file with a window that candidate is true for is then
// read whole, from its start again, for use; the others (most large
// files, for most searches) never take more memory than buf, which a
// new process would have to fault in page by page. A file with a NUL
// byte in a window is read no further: errBinary. candidate must be true
// for lines whenever use could find a match in them, in the file whole.
// shortEnds is as for readHead.
func readCandidate(f file, buf []byte, shortEnds bool, candidate func(lines []byte) bool, use func(content []byte)) ([]byte, error) {
	if cap(buf) < readBufferSize || cap(buf) > keepBufferSize {
		return readWith(f, buf, use)
	}
	buf, eof, err := readHead(f, buf[:0], shortEnds)
	if err != nil {
		return buf, err
	}
	if eof {
		use(buf)
		return buf, nil
	}
	limit, _, err := sizeLimit(f)
	switch {
	case err != nil:
		return buf, err
	case limit == maxGeneratedSize:
		// Made up as it is read: read once, whole.
		content, err := readRest(f, buf, limit, 0)
		return used(content, err, use)
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return buf, errBinary
	}
	window, total := buf, len(buf)
	for {
		cut := bytes.LastIndexByte(window, '\n') + 1
		switch {
		case cut > 0 && candidate(window[:cut]):
			return readAgain(f, buf, use)
		case cut == 0 && len(window) == cap(buf):
			// A line longer than the buffer.
			return readAgain(f, buf, use)
		}
		kept := copy(buf[:cap(buf)], window[cut:])
		n, err := f.read(buf[kept:cap(buf)])
		n = max(n, 0)
		window = buf[:kept+n]
		switch {
		case err == io.EOF || (err == nil && n == 0):
			// The last line, without a line break.
			if kept > 0 && candidate(window) {
				return readAgain(f, buf, use)
			}
			return buf, nil
		case err != nil:
			return buf, err
		case bytes.IndexByte(window[kept:], 0) >= 0:
			return buf, errBinary
		}
		if total += n; total > limit {
			return buf, errTooLarge
		}
	}
}

// readAgain reads f whole from its start, for readCandidate.
func readAgain(f file, buf []byte, use func(content []byte)) ([]byte, error) {
	if err := f.rewind(); err != nil {
		return buf, err
	}
	return readWith(f, buf, use)
}

// grow returns buf with room for at least size bytes and one more (the
// read that finds the end), and at least twice its capacity, but no more
// than limit and one. A buffer that grows past keepBufferSize waits for
// largeBuffer; readWith gives it back.
func grow(buf []byte, size, limit int) []byte {
	c := min(max(2*cap(buf), size+1, readBufferSize), limit+1)
	if c > keepBufferSize && cap(buf) <= keepBufferSize {
		largeBuffer <- struct{}{}
	}
	b := make([]byte, len(buf), c)
	copy(b, buf)
	return b
}

// readBelow reads the file at path (its components, the last a file name)
// below h, one directory at a time: like every name a dirHandle takes,
// none of them may be a symbolic link.
func readBelow(h dirHandle, path []string) ([]byte, error) {
	for _, name := range path[:len(path)-1] {
		sub, err := h.openDir(name)
		if err != nil {
			return nil, err
		}
		defer sub.close()
		h = sub
	}
	f, err := h.openFile(path[len(path)-1])
	if err != nil {
		return nil, err
	}
	defer f.close()
	return readSmall(f)
}

// readSmall reads a whole file that is used after it is closed, such as an
// ignore file, into a buffer of its own.
func readSmall(f file) ([]byte, error) {
	var data []byte
	_, err := readWith(f, nil, func(content []byte) {
		data = append([]byte(nil), content...)
	})
	return data, err
}

// openStartDir opens the directory at rel (a path in ws's form) for a walk,
// through ws: the directory is inside the workspace root.
func openStartDir(ws *os.Root, rel string, portable bool) (dirHandle, error) {
	if portable {
		return openRootDir(ws, rel)
	}
	return openFastDir(ws, rel)
}

// rootDir is a dirHandle made of an os.Root: portable, and slower than the
// Linux descriptor-based one (os.Root checks every entry it lists and
// every file it opens for symbolic links on its own).
type rootDir struct{ root *os.Root }

func openRootDir(ws *os.Root, rel string) (dirHandle, error) {
	r, err := ws.OpenRoot(rel)
	if err != nil {
		return nil, err
	}
	return rootDir{r}, nil
}

func (d rootDir) readDir() ([]dirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	ents := make([]dirEntry, len(des))
	for i, de := range des {
		ents[i] = dirEntry{name: de.Name(), typ: de.Type()}
	}
	return ents, err
}

func (d rootDir) openDir(name string) (dirHandle, error) {
	if fi, err := d.root.Lstat(name); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, errNotDir
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return rootDir{r}, nil
}

func (d rootDir) openFile(name string) (file, error) {
	if fi, err := d.root.Lstat(name); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	return openInRoot(d.root, name)
}

func (d rootDir) realPath() (string, bool) {
	f, err := d.root.Open(".")
	if err != nil {
		return "", false
	}
	defer f.Close()
	return osFile{f}.realPath()
}

func (d rootDir) close() error { return d.root.Close() }

// nonBlock opens files without waiting on a FIFO that a symbolic link or
// a swap put where a file was; it changes nothing for regular files.
const nonBlock = syscall.O_NONBLOCK

// openInRoot opens the regular file at name (a path in root's form,
// followed through symbolic links only while they stay inside root). It
// opens nothing that a stat does not call a regular file (opening some
// devices does something), opens without blocking, and checks the type
// again on what it opened: a read from a FIFO or a device swapped in
// meanwhile could still wait forever.
func openInRoot(root *os.Root, name string) (file, error) {
	if fi, err := root.Stat(name); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := root.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, errNotRegular
	}
	return osFile{f}, nil
}

// readInRoot reads the regular file at name inside root; see openInRoot.
func readInRoot(root *os.Root, name string) ([]byte, error) {
	f, err := openInRoot(root, name)
	if err != nil {
		return nil, err
	}
	defer f.close()
	return readSmall(f)
}

// osFile is a file made of an *os.File that is known to be a regular
// file.
type osFile struct{ f *os.File }

func (f osFile) read(p []byte) (int, error) { return f.f.Read(p) }

func (f osFile) stat() (int64, bool, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), fi.Mode().IsRegular(), nil
}

func (f osFile) realPath() (string, bool) {
	conn, err := f.f.SyscallConn()
	if err != nil {
		return "", false
	}
	var path string
	var ok bool
	if conn.Control(func(fd uintptr) { path, ok = fdPath(int(fd)) }) != nil {
		return "", false
	}
	return path, ok
}

func (f osFile) rewind() error {
	_, err := f.f.Seek(0, io.SeekStart)
	return err
}

func (f osFile) close() error { return f.f.Close() }
