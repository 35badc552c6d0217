package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a small tmpfs for the test, or skips it where mounting
// is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): this test needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// A write that runs out of space fails with ENOSPC and leaves the old
// file, no temporary file and none of the directories it created.
func TestWriteFileNoSpace(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "256k")
	path := filepath.Join(dir, "f")
	mustWriteFile(t, path, "old")
	root := openRoot(t, dir)
	big := []byte(strings.Repeat("x", 1<<20))
	if _, err := WriteFile(t.Context(), root, "f", big, Options{Perm: 0o644}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 1 MiB to a 256 KiB tmpfs = %v, want ENOSPC", err)
	}
	if _, err := WriteFile(t.Context(), root, "a/b/g", big, Options{Perm: 0o644}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 1 MiB to a 256 KiB tmpfs = %v, want ENOSPC", err)
	}
	assertFile(t, path, "old", 0o644)
	assertNoTemp(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed write left its directories: %v", err)
	}
}
