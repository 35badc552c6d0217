package main

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/workspace"
)

// renameAt renames src to dst, resolved paths whose directories hold no
// symbolic link; they may be in different roots. Each parent directory is
// opened through its root, and the rename names the last components
// relative to those descriptors: rename(2) never follows a last
// component, so a link is moved or replaced itself.
//
// Without overwrite an existing dst is never replaced, and there is no
// window between a check and the rename: renameat2(RENAME_NOREPLACE) does
// both in the kernel. File systems without RENAME_NOREPLACE get
// link+unlink for files (link(2) fails if dst exists). It returns
// syscall.EXDEV when src and dst are on different file systems.
func renameAt(src, dst workspace.Path, overwrite bool) error {
	sdir, err := src.Root.Open(filepath.Dir(src.Rel))
	if err != nil {
		return &renameError{err: err}
	}
	defer sdir.Close()
	ddir, err := dst.Root.Open(filepath.Dir(dst.Rel))
	if err != nil {
		return &renameError{dst: true, err: err}
	}
	defer ddir.Close()
	sfd, dfd := int(sdir.Fd()), int(ddir.Fd())
	sname, dname := filepath.Base(src.Rel), filepath.Base(dst.Rel)
	var flags uint
	if !overwrite {
		flags = unix.RENAME_NOREPLACE
	}
	err = unix.Renameat2(sfd, sname, dfd, dname, flags)
	if overwrite || !(errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)) {
		return err
	}
	return linkUnlink(sfd, sname, dfd, dname)
}

// linkUnlink moves a file that is not a directory without replacing an
// existing destination, where renameat2 cannot: link(2) fails if the
// destination exists, and linkat without AT_SYMLINK_FOLLOW links a
// symbolic link itself. The names are relative to the directory
// descriptors.
func linkUnlink(sfd int, sname string, dfd int, dname string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, sname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return errors.New("this file system cannot move a directory without the risk of replacing the destination")
	}
	if err := unix.Linkat(sfd, sname, dfd, dname, 0); err != nil {
		return err
	}
	return unix.Unlinkat(sfd, sname, 0)
}
