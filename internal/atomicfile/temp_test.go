package atomicfile

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTempName(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"tmp", "move"} {
		name := TempName(kind)
		if !IsTempName(name) || !strings.HasSuffix(name, "."+kind) || len(name) > 80 {
			t.Errorf("TempName(%q) = %q", kind, name)
		}
		if gone(name) {
			t.Errorf("this process's own temporary name %q counts as gone", name)
		}
	}
	if a, b := TempName("tmp"), TempName("tmp"); a == b {
		t.Errorf("two temporary names are the same: %s", a)
	}
	for _, name := range []string{
		".x.tmp-foo", ".f.txt.tmp-1a2b", ".agenthost-tmp", ".agenthost-0011aabb-12-34-abcdefgh.tmp~",
		"agenthost-0011aabb-12-34-abcdefgh.tmp", ".agenthost-0011aabb-012-34-abcdefgh.tmp",
		".agenthost-0011AABB-12-34-abcdefgh.tmp", ".agenthost-0011aabb-12-34-abcdefg.tmp",
		".agenthost-0011aabb-12-34-abcdefgh.bak", ".agenthost-0011aabb-12-34-abcdefgh.tmp/x",
	} {
		if IsTempName(name) {
			t.Errorf("IsTempName(%q) = true", name)
		}
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	return cmd.Process.Pid
}

// Sweep removes what processes now gone left, when it is old enough, and
// nothing else.
func TestSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := openRoot(t, dir)
	me := self()
	dead := deadPID(t)
	old := time.Now().Add(-2 * StaleAge)
	name := func(boot string, pid int, start uint64, kind string) string {
		return ".agenthost-" + boot + "-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10) + "-abcdefgh." + kind
	}
	otherBoot := "ffffffff"
	if me.boot == otherBoot {
		otherBoot = "eeeeeeee"
	}
	files := map[string]bool{ // name → swept
		name(me.boot, dead, 12345, "tmp"):           true,
		name(otherBoot, me.pid, me.start, "tmp"):    true,
		name(me.boot, me.pid, me.start, "tmp"):      false, // this process, under way
		name(me.boot, 1, startTime(1), "tmp"):       false, // pid 1 runs
		name(me.boot, me.pid, me.start+1, "tmp"):    true,  // an earlier process of this pid
		".x.tmp-foo":                                false, // a user's file
		".f.txt.tmp-123":                            false,
		".agenthost-notes.tmp":                      false,
		name(me.boot, dead, 12345, "tmp") + ".keep": false,
	}
	for f := range files {
		mustWriteFile(t, filepath.Join(dir, f), "x")
		if err := os.Chtimes(filepath.Join(dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	// A copy under way is a directory; a recent leftover is kept.
	tree := name(me.boot, dead, 1, "move")
	if err := os.MkdirAll(filepath.Join(dir, tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, tree), old, old); err != nil {
		t.Fatal(err)
	}
	files[tree] = true
	recent := name(me.boot, dead, 2, "tmp")
	mustWriteFile(t, filepath.Join(dir, recent), "x")
	files[recent] = false

	Sweep(root, ".")
	for f, swept := range files {
		_, err := os.Lstat(filepath.Join(dir, f))
		if gone := errors.Is(err, os.ErrNotExist); gone != swept {
			t.Errorf("%s: removed %v, want %v", f, gone, swept)
		}
	}
	// Once per directory per process.
	again := name(me.boot, dead, 3, "tmp")
	mustWriteFile(t, filepath.Join(dir, again), "x")
	os.Chtimes(filepath.Join(dir, again), old, old)
	Sweep(root, ".")
	if _, err := os.Lstat(filepath.Join(dir, again)); err != nil {
		t.Errorf("a second Sweep of one directory removed %s", again)
	}
}

// MkdirAll's undo removes what it created and nothing else.
func TestMkdirAllUndo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := openRoot(t, dir)
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	undo, err := MkdirAll(root, "a/b/c", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, "a/b/c")); err != nil || !info.IsDir() {
		t.Fatalf("a/b/c: %v", err)
	}
	undo()
	if _, err := os.Stat(filepath.Join(dir, "a/b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a/b is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Errorf("a, which was there before, is gone: %v", err)
	}
	mustWriteFile(t, filepath.Join(dir, "file"), "x")
	if _, err := MkdirAll(root, "file/x", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll through a file = %v, want ENOTDIR", err)
	}
}

// A write that fails leaves nothing: no temporary file, no directory it
// created, the old file as it was.
func TestWriteFileFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := openRoot(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := WriteFile(ctx, root, "new/dirs/f", []byte("x"), Options{Perm: 0o644}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled write = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cancelled write left its directories: %v", err)
	}
	mustWriteFile(t, filepath.Join(dir, "f"), "old")
	if _, err := WriteFile(ctx, root, "f", []byte("new"), Options{Perm: 0o644}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled write = %v, want context.Canceled", err)
	}
	assertFile(t, filepath.Join(dir, "f"), "old", 0o644)
	assertNoTemp(t, dir)
}

// Any valid name can be written: the temporary name does not grow with
// it.
func TestWriteLongName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("n", 255))
	if err := Write(path, []byte("x"), 0o644); err != nil {
		t.Fatalf("writing a 255-byte name: %v", err)
	}
	if err := Write(path, []byte("y"), 0o644); err != nil {
		t.Fatalf("replacing a 255-byte name: %v", err)
	}
	assertFile(t, path, "y", 0o644)
}

// A write does not start its rename close to its deadline.
func TestCommit(t *testing.T) {
	t.Parallel()
	if err := Commit(t.Context()); err != nil && !errors.Is(err, ErrNoTime) {
		t.Errorf("Commit(the test's context) = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), CommitMargin/2)
	defer cancel()
	if err := Commit(ctx); !errors.Is(err, ErrNoTime) {
		t.Errorf("Commit with half the margin left = %v, want ErrNoTime", err)
	}
	dir := t.TempDir()
	if _, err := WriteFile(ctx, openRoot(t, dir), "f", []byte("x"), Options{Perm: 0o644}); !errors.Is(err, ErrNoTime) {
		t.Errorf("WriteFile with half the margin left = %v, want ErrNoTime", err)
	}
	assertNoTemp(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write happened: %v", err)
	}
	later, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	if err := Commit(later); err != nil {
		t.Errorf("Commit with an hour left = %v", err)
	}
}

// tempShape is the documented shape of a temporary name, the reference
// parseTempName is checked against.
var tempShape = regexp.MustCompile(`^\.agenthost-([0-9a-f]{8})-([1-9][0-9]{0,9})-([0-9]{1,20})-[0-9a-z]{8}\.(tmp|move)$`)

// FuzzTempName checks the hand-written parser against the regexp of the
// shape: the same names accepted, the same fields taken.
func FuzzTempName(f *testing.F) {
	for _, s := range []string{
		TempName("tmp"), TempName("move"), ".agenthost-0011aabb-12-34-abcdefgh.tmp",
		".agenthost-0011aabb-1234567890-12345678901234567890-abcdefgh.move",
		".agenthost-0011aabb-12345678901-34-abcdefgh.tmp", ".agenthost-0011aabb-12-34-abcdefgh.tmpx",
		".agenthost-0011aabb-12--abcdefgh.tmp", ".agenthost-0011aabb-0-1-abcdefgh.tmp", ".agenthost-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, ok := parseTempName(name)
		m := tempShape.FindStringSubmatch(name)
		if ok != (m != nil) {
			t.Fatalf("parseTempName(%q) ok = %v, regexp match = %v", name, ok, m != nil)
		}
		if ok && (got.boot != m[1] || got.pid != m[2] || got.start != m[3]) {
			t.Fatalf("parseTempName(%q) = %+v, regexp fields %q", name, got, m[1:4])
		}
	})
}
