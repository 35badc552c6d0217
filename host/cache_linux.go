package host

import (
	"io/fs"
	"syscall"
)

// statIdentity returns a file's change time, inode and device.
func statIdentity(info fs.FileInfo) (ctime int64, inode, device uint64) {
	sys, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return sys.Ctim.Sec*1e9 + sys.Ctim.Nsec, sys.Ino, sys.Dev
}
