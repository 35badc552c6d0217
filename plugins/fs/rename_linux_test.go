package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLinkUnlink covers the fallback for file systems without
// RENAME_NOREPLACE.
func TestLinkUnlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "a"), "a")
	mustWrite(t, filepath.Join(dir, "taken"), "taken")
	mustSymlink(t, "a", filepath.Join(dir, "link"))
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fd := int(d.Fd())

	if err := linkUnlink(fd, "a", fd, "taken"); !errors.Is(err, unix.EEXIST) {
		t.Errorf("linkUnlink onto an existing file = %v, want EEXIST", err)
	}
	checkFiles(t, dir, map[string]string{"a": "a", "taken": "taken"})
	if err := linkUnlink(fd, "a", fd, "b"); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, map[string]string{"a": "", "b": "a"})
	if err := linkUnlink(fd, "link", fd, "link2"); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link2")); err != nil || target != "a" {
		t.Errorf("link2 -> %q, %v; want the link itself moved", target, err)
	}
	if err := linkUnlink(fd, "d", fd, "d2"); err == nil {
		t.Error("linkUnlink moved a directory")
	}
}
