//go:build !linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/agenthost/agenthost/internal/workspace"
)

// renameAt renames src to dst through their roots. Without overwrite an
// existing dst is refused; outside Linux this is a check before the
// rename, so a destination created in between can be replaced. Paths in
// different roots get syscall.EXDEV, and the caller copies.
func renameAt(src, dst workspace.Path, overwrite bool) error {
	if src.Root != dst.Root {
		return &os.LinkError{Op: "rename", Old: src.Rel, New: dst.Rel, Err: syscall.EXDEV}
	}
	if !overwrite {
		if _, err := dst.Root.Lstat(dst.Rel); err == nil {
			return &renameError{dst: true, err: fs.ErrExist}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return &renameError{dst: true, err: err}
		}
	}
	return src.Root.Rename(src.Rel, dst.Rel)
}
