package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

func TestMultipleRoots(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	r1, r2 := filepath.Join(base, "one"), filepath.Join(base, "two")
	mustWrite(t, filepath.Join(r1, "a.txt"), "in one")
	mustWrite(t, filepath.Join(r2, "b.txt"), "in two")
	mustWrite(t, filepath.Join(r2, "sub", "c.txt"), "c")
	mustWrite(t, filepath.Join(r2, "listed", "l.txt"), "l")
	mustSymlink(t, filepath.Join(r2, "b.txt"), filepath.Join(r1, "to-two"))
	mustSymlink(t, "../two/sub", filepath.Join(r1, "rel-to-two"))
	roots := []string{r1, r2}

	tests := map[string]struct {
		tool sdk.Tool
		args map[string]any
		want string
	}{
		"a relative path is in the first root": {readFile, map[string]any{"path": "a.txt"}, "in one"},
		"an absolute path in the second root":  {readFile, map[string]any{"path": filepath.Join(r2, "b.txt")}, "in two"},
		"a relative path into the second root": {readFile, map[string]any{"path": "../two/b.txt"}, "in two"},
		"a link from one root into the other":  {readFile, map[string]any{"path": "to-two"}, "in two"},
		"a relative link into the other root":  {listDir, map[string]any{"path": "rel-to-two"}, "c.txt (1 B)\n"},
		"writes name the path in its own root": {writeFile, map[string]any{"path": filepath.Join(r2, "new", "d.txt"), "content": "d"}, "Wrote 1 bytes to new/d.txt"},
		"writes in the first root":             {writeFile, map[string]any{"path": "e.txt", "content": "e"}, "Wrote 1 bytes to e.txt"},
		"list_dir of the second root":          {listDir, map[string]any{"path": filepath.Join(r2, "listed")}, "l.txt (1 B)\n"},
		"mkdir in the second root":             {mkdir, map[string]any{"path": filepath.Join(r2, "made")}, "Created directory made"},
		"edit_file in the second root":         {editFile, map[string]any{"path": filepath.Join(r2, "sub", "c.txt"), "old_string": "c", "new_string": "C"}, "Edited sub/c.txt: 1 replacement\n--- a/sub/c.txt\n+++ b/sub/c.txt\n@@ -1 +1 @@\n-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"},
		"remove in the second root":            {remove, map[string]any{"path": filepath.Join(r2, "gone.txt")}, "Nothing to remove: gone.txt does not exist"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := run(t, roots, tc.tool, tc.args)
			if err != nil || got != tc.want {
				t.Errorf("%s(%v) = %q, %v; want %q", tc.tool.Name(), tc.args, got, err, tc.want)
			}
		})
	}
	checkFiles(t, r2, map[string]string{"new/d.txt": "d", "sub/c.txt": "C"})
	checkFiles(t, r1, map[string]string{"e.txt": "e"})

	t.Run("writes through a link into the other root", func(t *testing.T) {
		if _, err := run(t, roots, writeFile, map[string]any{"path": "to-two", "content": "via one"}); err != nil {
			t.Fatal(err)
		}
		checkFiles(t, r2, map[string]string{"b.txt": "via one"})
	})

	t.Run("outside both roots", func(t *testing.T) {
		got, err := run(t, roots, readFile, map[string]any{"path": "../three/x"})
		wantErr(t, "read_file outside both roots", got, err, `path "../three/x" is outside the workspace roots`)
	})
}

func TestNestedRoots(t *testing.T) {
	t.Parallel()
	outer := t.TempDir()
	inner := filepath.Join(outer, "pkg", "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	roots := []string{outer, inner}
	got, err := run(t, roots, writeFile, map[string]any{"path": "pkg/inner/x.txt", "content": "x"})
	if want := "Wrote 1 bytes to x.txt"; err != nil || got != want {
		t.Errorf("write_file in the inner root = %q, %v; want %q", got, err, want)
	}
	// Listing the outer root lists the inner one too.
	got, err = run(t, roots, listDir, map[string]any{"depth": 3})
	if want := "pkg/\n  inner/\n    x.txt (1 B)\n"; err != nil || got != want {
		t.Errorf("list_dir = %q, %v; want %q", got, err, want)
	}
}

// TestRootSlash: a root of / opts out of confinement knowingly.
func TestRootSlash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	roots := []string{"/"}
	got, err := run(t, roots, writeFile, map[string]any{"path": path, "content": "free"})
	if want := "Wrote 4 bytes to " + strings.TrimPrefix(path, "/"); err != nil || got != want {
		t.Errorf("write_file = %q, %v; want %q", got, err, want)
	}
	got, err = run(t, roots, readFile, map[string]any{"path": path})
	if err != nil || got != "free" {
		t.Errorf("read_file = %q, %v", got, err)
	}
	// Anything reachable is in reach, links to anywhere included.
	mustSymlink(t, "/etc", filepath.Join(dir, "etc"))
	if _, err := run(t, roots, listDir, map[string]any{"path": filepath.Join(dir, "etc")}); err != nil {
		t.Errorf("list_dir through a link to /etc: %v", err)
	}
	// The root itself still cannot be removed.
	got, err = run(t, roots, remove, map[string]any{"path": "/"})
	wantErr(t, "remove(/)", got, err, "refusing to remove the workspace root /")
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}
