package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openRoot opens dir as an os.Root for the test.
func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// A second writer waits for the lock; after a replace the lock is taken
// on the new file, not the old one.
func TestLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := openRoot(t, dir)
	path := filepath.Join(dir, "f")
	mustWriteFile(t, path, "one")

	first, err := Lock(t.Context(), root, "f")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if l, err := Lock(ctx, root, "f"); !errors.Is(err, context.DeadlineExceeded) {
		l.Unlock()
		t.Fatalf("a second Lock while the first is held = %v, want it to wait until its deadline", err)
	}

	// A writer waiting while the file is replaced locks the new file.
	got := make(chan *Locked)
	go func() {
		l, err := Lock(t.Context(), root, "f")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	mustWriteFile(t, filepath.Join(dir, "g"), "two")
	if err := os.Rename(filepath.Join(dir, "g"), path); err != nil {
		t.Fatal(err)
	}
	first.Unlock()
	second := <-got
	if second == nil {
		t.FailNow()
	}
	info, _ := second.Info()
	if got := info.Sys().(*syscall.Stat_t).Ino; got != inode(t, path) {
		t.Errorf("the lock is on inode %d, the path names %d", got, inode(t, path))
	}
	second.Unlock()

	if _, err := Lock(t.Context(), root, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lock of a missing file = %v, want ErrNotExist", err)
	}
}

// A write whose file changed after it was read fails and writes nothing,
// however the file changed: replaced, or rewritten in place with its
// size and times kept.
func TestWriteFileBaseChanged(t *testing.T) {
	t.Parallel()
	changes := map[string]func(t *testing.T, path string){
		"replaced": func(t *testing.T, path string) {
			mustWriteFile(t, path+".new", "theirs")
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		},
		"rewritten in place, same size and times": func(t *testing.T, path string) {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("THEIRS"), 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			root := openRoot(t, dir)
			path := filepath.Join(dir, "f")
			mustWriteFile(t, path, "before")
			lk, err := Lock(t.Context(), root, "f")
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Unlock()
			if _, err := lk.Read(100); err != nil {
				t.Fatal(err)
			}
			change(t, path)
			want, _ := os.ReadFile(path)
			_, err = WriteFile(t.Context(), root, "f", []byte("mine"), Options{Base: lk})
			if !errors.Is(err, ErrChanged) {
				t.Fatalf("WriteFile after the file changed = %v, want ErrChanged", err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != string(want) {
				t.Errorf("the file holds %q, want the other writer's %q", got, want)
			}
			assertNoTemp(t, dir)
		})
	}
}

// An unchanged file is written under the caller's lock.
func TestWriteFileBaseUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := openRoot(t, dir)
	mustWriteFile(t, filepath.Join(dir, "f"), "before")
	lk, err := Lock(t.Context(), root, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	if _, err := lk.Read(100); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFile(t.Context(), root, "f", []byte("after"), Options{Base: lk}); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "f"), "after", 0o644)
}

// assertNoTemp fails if a temporary file of this package is in dir.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if IsTempName(e.Name()) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
