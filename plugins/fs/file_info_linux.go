package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open the directory of a path to stat: O_PATH needs only
// search permission on it, as a stat by path does.
const dirOpenFlags = unix.O_PATH | unix.O_DIRECTORY

// statAt stats name in the directory fd without following a link, with
// statx for the birth time where the file system keeps it; where statx
// is missing or refused, with fstatat.
func statAt(fd int, name string) (fileStat, error) {
	var s unix.Statx_t
	err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &s)
	if err == unix.ENOSYS || err == unix.EPERM {
		return fstatatStat(fd, name)
	}
	if err != nil {
		return fileStat{}, err
	}
	st := fileStat{
		mode:      uint32(s.Mode),
		size:      int64(s.Size),
		nlink:     uint64(s.Nlink),
		uid:       s.Uid,
		gid:       s.Gid,
		rdevMajor: s.Rdev_major,
		rdevMinor: s.Rdev_minor,
		modified:  statxTime(s.Mtime),
		accessed:  statxTime(s.Atime),
		chgd:      statxTime(s.Ctime),
	}
	if s.Mask&unix.STATX_BTIME != 0 {
		st.born = statxTime(s.Btime)
	}
	return st, nil
}

func statxTime(t unix.StatxTimestamp) time.Time {
	return time.Unix(t.Sec, int64(t.Nsec))
}
