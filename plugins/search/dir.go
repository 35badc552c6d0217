package main

import (
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
	readDir() ([]fs.DirEntry, error)
	// openDir opens a subdirectory; it refuses a symbolic link.
	openDir(name string) (dirHandle, error)
	// readFile reads a file into buf (from buf[:0], growing it), refusing
	// a symbolic link and never blocking on a FIFO.
	readFile(name string, buf []byte) ([]byte, error)
	close() error
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
	return h.readFile(path[len(path)-1], nil)
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

func (d rootDir) readDir() ([]fs.DirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
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

func (d rootDir) readFile(name string, buf []byte) ([]byte, error) {
	if fi, err := d.root.Lstat(name); err != nil {
		return buf[:0], err
	} else if !fi.Mode().IsRegular() {
		return buf[:0], errNotRegular
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	return readAll(f, buf[:0])
}

func (d rootDir) close() error { return d.root.Close() }

// nonBlock opens files without waiting on a FIFO that a symbolic link or
// a swap put where a file was; it changes nothing for regular files.
const nonBlock = syscall.O_NONBLOCK

var (
	errNotRegular = errors.New("not a regular file")
	errNotDir     = errors.New("not a directory")
	errTooLarge   = errors.New("file too large")
)

// readAll reads f to its end into buf, growing it as needed.
func readAll(f *os.File, buf []byte) ([]byte, error) {
	sized := false
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxFileSize {
				return buf, errTooLarge
			}
			size := 0
			if !sized {
				// The first read filled the buffer: make room for the
				// whole file at once.
				sized = true
				if fi, err := f.Stat(); err == nil {
					size = int(min(fi.Size(), maxFileSize))
				}
			}
			buf = grow(buf, size)
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// grow returns buf with room for at least size bytes and one more (the
// read that finds the end), and at least twice its capacity.
func grow(buf []byte, size int) []byte {
	c := max(2*cap(buf), size+1, readBufferSize)
	b := make([]byte, len(buf), c)
	copy(b, buf)
	return b
}
