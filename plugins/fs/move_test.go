package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/workspace"
)

// moveTree makes the tree the move tests start from.
func moveTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a.txt"), "a")
	mustWrite(t, filepath.Join(root, "b.txt"), "b")
	mustWrite(t, filepath.Join(root, "dir", "f.txt"), "f")
	mustWrite(t, filepath.Join(root, "dir", "sub", "g.txt"), "g")
	mustWrite(t, filepath.Join(root, "full", "x.txt"), "x")
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "a.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "a.txt", filepath.Join(root, "link"))
	mustSymlink(t, "dir", filepath.Join(root, "dirlink"))
	return root
}

func TestMove(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args  map[string]any
		want  string
		files map[string]string // content of paths under the root afterwards; "" for gone
	}{
		"rename a file": {map[string]any{"source": "a.txt", "destination": "c.txt"}, "Moved a.txt to c.txt",
			map[string]string{"a.txt": "", "c.txt": "a"}},
		"into new parent directories": {map[string]any{"source": "a.txt", "destination": "new/deeper/a.txt"}, "Moved a.txt to new/deeper/a.txt",
			map[string]string{"a.txt": "", "new/deeper/a.txt": "a"}},
		"overwrite": {map[string]any{"source": "a.txt", "destination": "b.txt", "overwrite": true}, "Moved a.txt to b.txt",
			map[string]string{"a.txt": "", "b.txt": "a"}},
		"a directory": {map[string]any{"source": "dir", "destination": "moved"}, "Moved dir to moved",
			map[string]string{"dir/f.txt": "", "moved/f.txt": "f", "moved/sub/g.txt": "g"}},
		"a directory over an empty one": {map[string]any{"source": "dir", "destination": "empty", "overwrite": true}, "Moved dir to empty",
			map[string]string{"empty/f.txt": "f"}},
		"absolute paths": {map[string]any{"source": "ROOT/a.txt", "destination": "ROOT/c.txt"}, "Moved a.txt to c.txt",
			map[string]string{"c.txt": "a"}},
		"through a linked directory": {map[string]any{"source": "dirlink/f.txt", "destination": "dirlink/f2.txt"}, "Moved dirlink/f.txt to dirlink/f2.txt",
			map[string]string{"dir/f.txt": "", "dir/f2.txt": "f"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := moveTree(t)
			args := map[string]any{}
			for k, v := range tc.args {
				if s, ok := v.(string); ok {
					if rest, ok := cutRoot(s); ok {
						v = filepath.Join(root, rest)
					}
				}
				args[k] = v
			}
			got, err := call(t, root, move, args)
			if err != nil || got != tc.want {
				t.Errorf("move(%v) = %q, %v; want %q", args, got, err, tc.want)
			}
			checkFiles(t, root, tc.files)
		})
	}

	t.Run("a file keeps its mode", func(t *testing.T) {
		t.Parallel()
		root := moveTree(t)
		if _, err := call(t, root, move, map[string]any{"source": "a.txt", "destination": "c.txt"}); err != nil {
			t.Fatal(err)
		}
		assertFile(t, filepath.Join(root, "c.txt"), "a", 0o640)
	})

	t.Run("a link moves as a link", func(t *testing.T) {
		t.Parallel()
		root := moveTree(t)
		if _, err := call(t, root, move, map[string]any{"source": "link", "destination": "link2"}); err != nil {
			t.Fatal(err)
		}
		if target, err := os.Readlink(filepath.Join(root, "link2")); err != nil || target != "a.txt" {
			t.Errorf("link2 -> %q, %v; want a link to a.txt", target, err)
		}
		checkFiles(t, root, map[string]string{"a.txt": "a"})
	})
}

func TestMoveErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"an existing destination": {map[string]any{"source": "a.txt", "destination": "b.txt"},
			"destination b.txt already exists: set overwrite to true to replace it"},
		"an existing directory": {map[string]any{"source": "a.txt", "destination": "dir"},
			"destination dir already exists: set overwrite to true to replace it"},
		"an existing link": {map[string]any{"source": "b.txt", "destination": "link"},
			"destination link already exists: set overwrite to true to replace it"},
		"a missing source": {map[string]any{"source": "nope", "destination": "c.txt"},
			"nope: no such file or directory"},
		"the same path": {map[string]any{"source": "a.txt", "destination": "./a.txt"},
			"source and destination are the same path: a.txt"},
		"a directory into itself": {map[string]any{"source": "dir", "destination": "dir/sub/dir"},
			"cannot move dir into itself (dir/sub/dir)"},
		"a directory into itself through a link": {map[string]any{"source": "dir", "destination": "dirlink/x"},
			"cannot move dir into itself (dirlink/x)"},
		"a non-empty directory": {map[string]any{"source": "dir", "destination": "full", "overwrite": true},
			"cannot replace full: it is a directory that is not empty"},
		"a file over a directory": {map[string]any{"source": "a.txt", "destination": "empty", "overwrite": true},
			"cannot replace the directory empty with a file"},
		"a directory over a file": {map[string]any{"source": "dir", "destination": "a.txt", "overwrite": true},
			"cannot replace a.txt with a directory: it is not a directory"},
		"the root": {map[string]any{"source": ".", "destination": "x"},
			"refusing to move the workspace root ."},
		"onto the root": {map[string]any{"source": "a.txt", "destination": "ROOT", "overwrite": true},
			"refusing to replace the workspace root ROOT"},
		"a parent that is a file": {map[string]any{"source": "a.txt", "destination": "b.txt/c.txt"},
			"b.txt/c.txt: not a directory"},
		"no destination": {map[string]any{"source": "a.txt"},
			`invalid arguments: required: missing properties: ["destination"]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := moveTree(t)
			args := map[string]any{}
			want := tc.want
			for k, v := range tc.args {
				if v == "ROOT" {
					v = root
					want = "refusing to replace the workspace root " + root
				}
				args[k] = v
			}
			got, err := call(t, root, move, args)
			wantErr(t, fmt.Sprintf("move(%v)", args), got, err, want)
			// Nothing moved.
			checkFiles(t, root, map[string]string{"a.txt": "a", "b.txt": "b", "dir/f.txt": "f", "full/x.txt": "x"})
		})
	}
}

func TestMoveAcrossRoots(t *testing.T) {
	t.Parallel()
	r1, r2 := moveTree(t), t.TempDir()
	roots := []string{r1, r2}
	got, err := run(t, roots, move, map[string]any{"source": "dir", "destination": filepath.Join(r2, "dir")})
	if want := "Moved dir to dir"; err != nil || got != want {
		t.Errorf("move to the second root = %q, %v; want %q", got, err, want)
	}
	checkFiles(t, r2, map[string]string{"dir/f.txt": "f", "dir/sub/g.txt": "g"})
	checkFiles(t, r1, map[string]string{"dir/f.txt": ""})

	mustWrite(t, filepath.Join(r2, "b.txt"), "r2")
	got, err = run(t, roots, move, map[string]any{"source": "b.txt", "destination": filepath.Join(r2, "b.txt")})
	wantErr(t, "move onto a file of the second root", got, err, "destination "+filepath.Join(r2, "b.txt")+" already exists: set overwrite to true to replace it")
	checkFiles(t, r2, map[string]string{"b.txt": "r2"})
	checkFiles(t, r1, map[string]string{"b.txt": "b"})
}

// TestMoveByCopy covers the copy that moves across file systems, by
// calling it directly between two roots.
func TestMoveByCopy(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (src, dst string, w *workspace.Workspace) {
		src, dst = moveTree(t), t.TempDir()
		if err := os.Chmod(filepath.Join(src, "dir", "sub"), 0o750); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, "../f.txt", filepath.Join(src, "dir", "sub", "up"))
		mustWrite(t, filepath.Join(dst, "taken", "t.txt"), "taken")
		mustWrite(t, filepath.Join(dst, "b.txt"), "old b")
		w, err := workspace.Open([]string{src, dst})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return src, dst, w
	}
	paths := func(t *testing.T, w *workspace.Workspace, from, to string) (workspace.Path, workspace.Path) {
		s, err := w.Resolve(from)
		if err != nil {
			t.Fatal(err)
		}
		d, err := w.Resolve(to)
		if err != nil {
			t.Fatal(err)
		}
		return s, d
	}

	t.Run("a directory tree with modes and links", func(t *testing.T) {
		t.Parallel()
		src, dst, w := setup(t)
		s, d := paths(t, w, "dir", filepath.Join(dst, "copy"))
		if err := moveByCopy(t.Context(), s, d, false); err != nil {
			t.Fatal(err)
		}
		checkFiles(t, dst, map[string]string{"copy/f.txt": "f", "copy/sub/g.txt": "g", "copy/sub/up": "f"})
		checkFiles(t, src, map[string]string{"dir": ""})
		if target, err := os.Readlink(filepath.Join(dst, "copy", "sub", "up")); err != nil || target != "../f.txt" {
			t.Errorf("the link was copied as %q, %v", target, err)
		}
		if info, err := os.Stat(filepath.Join(dst, "copy", "sub")); err != nil || info.Mode().Perm() != 0o750 {
			t.Errorf("copy/sub: %v, %v; want mode 0750", info, err)
		}
		checkNoTemp(t, dst)
	})

	t.Run("a file keeps its mode", func(t *testing.T) {
		t.Parallel()
		src, dst, w := setup(t)
		s, d := paths(t, w, "a.txt", filepath.Join(dst, "a.txt"))
		if err := moveByCopy(t.Context(), s, d, false); err != nil {
			t.Fatal(err)
		}
		assertFile(t, filepath.Join(dst, "a.txt"), "a", 0o640)
		checkFiles(t, src, map[string]string{"a.txt": ""})
	})

	t.Run("refuses to replace", func(t *testing.T) {
		t.Parallel()
		src, dst, w := setup(t)
		for from, to := range map[string]string{"a.txt": "b.txt", "dir": "taken"} {
			s, d := paths(t, w, from, filepath.Join(dst, to))
			err := moveByCopy(t.Context(), s, d, false)
			if !errors.Is(err, fs.ErrExist) {
				t.Errorf("moveByCopy(%s, %s) = %v, want an error that it exists", from, to, err)
			}
		}
		checkFiles(t, dst, map[string]string{"b.txt": "old b", "taken/t.txt": "taken"})
		checkFiles(t, src, map[string]string{"a.txt": "a", "dir/f.txt": "f"})
		checkNoTemp(t, dst)
	})

	t.Run("replaces with overwrite", func(t *testing.T) {
		t.Parallel()
		src, dst, w := setup(t)
		s, d := paths(t, w, "a.txt", filepath.Join(dst, "b.txt"))
		if err := moveByCopy(t.Context(), s, d, true); err != nil {
			t.Fatal(err)
		}
		checkFiles(t, dst, map[string]string{"b.txt": "a"})
		checkFiles(t, src, map[string]string{"a.txt": ""})
	})
}

// TestMoveAcrossFileSystems moves between the temporary directory and
// /dev/shm where they are different file systems.
func TestMoveAcrossFileSystems(t *testing.T) {
	t.Parallel()
	other, err := os.MkdirTemp("/dev/shm", "fs-test-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	root := moveTree(t)
	var a, b syscall.Stat_t
	if syscall.Stat(root, &a) != nil || syscall.Stat(other, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same file system as the temporary directory")
	}
	roots := []string{root, other}
	got, err := run(t, roots, move, map[string]any{"source": "dir", "destination": filepath.Join(other, "dir")})
	if err != nil || got != "Moved dir to dir" {
		t.Errorf("move across file systems = %q, %v", got, err)
	}
	checkFiles(t, other, map[string]string{"dir/f.txt": "f", "dir/sub/g.txt": "g"})
	checkFiles(t, root, map[string]string{"dir": ""})
	mustWrite(t, filepath.Join(other, "b.txt"), "other")
	got, err = run(t, roots, move, map[string]any{"source": "b.txt", "destination": filepath.Join(other, "b.txt")})
	wantErr(t, "move onto an existing file across file systems", got, err, "destination "+filepath.Join(other, "b.txt")+" already exists: set overwrite to true to replace it")
	checkFiles(t, root, map[string]string{"b.txt": "b"})
	checkNoTemp(t, other)
}

// TestMoveRace moves two files to one destination at once, many times:
// without overwrite exactly one may win.
func TestMoveRace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 50 {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		dst := fmt.Sprintf("dst%d/file", i)
		mustWrite(t, filepath.Join(root, a), a)
		mustWrite(t, filepath.Join(root, b), b)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, src := range []string{a, b} {
			wg.Go(func() {
				_, errs[j] = call(t, root, move, map[string]any{"source": src, "destination": dst})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case err.Error() != "destination "+dst+" already exists: set overwrite to true to replace it":
				t.Errorf("round %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d moves succeeded, want exactly 1 (%v)", i, won, errs)
		}
		got := readString(t, filepath.Join(root, dst))
		if loser := map[string]string{a: b, b: a}[got]; loser == "" || readString(t, filepath.Join(root, loser)) != loser {
			t.Errorf("round %d: the destination holds %q and the other source is gone", i, got)
		}
	}
}

// checkFiles checks the content of files under root; "" means the path
// must not exist.
func checkFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, want := range files {
		path := filepath.Join(root, p)
		if want == "" {
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s is still there (%v)", p, err)
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil || string(data) != want {
			t.Errorf("%s holds %q, %v; want %q", p, short(string(data)), err, short(want))
		}
	}
}

// short cuts a long content for a test's message.
func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "..." + fmt.Sprintf(" (%d bytes)", len(s))
	}
	return s
}

// checkNoTemp fails if a write or a move left a temporary file in dir.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if atomicfile.IsTempName(e.Name()) {
			t.Errorf("temporary file left behind in %s: %s", dir, e.Name())
		}
	}
}

// cutRoot recognises the placeholder for the root in a table's paths.
func cutRoot(s string) (string, bool) {
	if s == "ROOT" {
		return ".", true
	}
	if len(s) > 5 && s[:5] == "ROOT/" {
		return s[5:], true
	}
	return "", false
}
