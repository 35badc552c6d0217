//go:build !linux

package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open the directory of a path to stat.
const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | syscall.O_NONBLOCK

// statAt stats name in the directory fd without following a link; the
// birth time is left unknown.
func statAt(fd int, name string) (fileStat, error) {
	return fstatatStat(fd, name)
}
