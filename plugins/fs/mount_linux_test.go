package main

import (
	"syscall"
	"testing"
)

// mountTmpfs mounts a small tmpfs for the test, or skips it where mounting
// is not permitted.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): this test needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// raceDir is a directory for the race tests: a tmpfs where one can be
// mounted, whose fsync costs nothing, so that the edits, which take
// turns, each pay no disk flush. The lock and the checks are the same.
func raceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		return dir
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
