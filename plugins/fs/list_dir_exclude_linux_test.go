package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// unprivileged runs f as a user without root's privileges would see the
// file system: for a root caller, on a thread without the capabilities
// that let root read and search any directory (CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH), so that a directory of mode 000 cannot be
// listed. Capabilities belong to a thread: f runs in a goroutine locked
// to its own thread, which is never unlocked, so that the thread ends
// with the goroutine instead of serving others. f must not call
// t.FailNow (t.Fatal): it runs in a goroutine of its own.
func unprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	failed := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&header, &data[0]); err != nil {
			failed <- err
			return
		}
		data[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
		if err := unix.Capset(&header, &data[0]); err != nil {
			failed <- err
			return
		}
		f()
		failed <- nil
	}()
	if err := <-failed; err != nil {
		t.Fatalf("dropping root's file capabilities on a thread: %v", err)
	}
}

// An excluded directory is never opened: inotify sees list_dir open it
// without exclude, and not with it.
func TestListDirExcludedNotOpened(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	watched := filepath.Join(root, "a", "skip")
	mustWrite(t, filepath.Join(watched, "f.txt"), "f")
	mustWrite(t, filepath.Join(root, "a", "keep", "g.txt"), "g")
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, watched, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	// opened reports whether the watched directory was opened since the
	// last look. inotify queues an event as the open happens.
	opened := func() bool {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	for _, names := range []bool{false, true} {
		if _, err := call(t, root, listDir, map[string]any{"depth": 3, "names_only": names}); err != nil || !opened() {
			t.Fatalf("the control, without exclude (names_only %v): err %v, the directory not opened", names, err)
		}
		for _, pattern := range []string{"skip", "a/skip", "**/skip/"} {
			args := map[string]any{"depth": 3, "names_only": names, "exclude": []string{pattern}}
			got, err := call(t, root, listDir, args)
			if err != nil || strings.Contains(got, "skip") || !strings.Contains(got, "g.txt") {
				t.Errorf("list_dir(%v) = %q, %v", args, got, err)
			}
			if opened() {
				t.Errorf("list_dir(%v) opened the excluded directory", args)
			}
		}
	}
}
