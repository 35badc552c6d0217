package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeepInside: of many paths, split between goroutines, keepInside
// keeps those that name something inside the root, in their order, and
// drops those removed, those reached through a symbolic link and those
// that never were.
func TestKeepInside(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = "x"
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "f000.txt"), []byte("x"), 0o644)
	files["link"] = "-> " + outside
	root := writeTree(t, files)
	var paths, want []string
	for i := range 1000 {
		p := fmt.Sprintf("d%d/f%03d.txt", i%7, i)
		paths = append(paths, p)
		switch {
		case i%13 == 0:
			os.Remove(filepath.Join(root, p))
		case i%17 == 0:
			paths = append(paths, "link/f000.txt", fmt.Sprintf("d%d/none%d.txt", i%7, i))
			want = append(want, p)
		default:
			want = append(want, p)
		}
	}
	ws, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	got := keepInside(ws, paths, func(p string) string { return filepath.FromSlash(p) })
	if !slices.Equal(got, want) {
		t.Errorf("keepInside kept %d paths, want %d:\n%q", len(got), len(want), got)
	}
}

// TestDisplayPath: a path is reported relative to its root unless the
// absolute path is no longer, as the join of the two says.
func TestDisplayPath(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"/", "/w", "/a/b/", "/a//b", ""} {
		for _, rel := range []string{"", ".", "a", "a/b.go", "a/../b", "./a", "a//b", "..", "../x", "/abs", "a/", "ab/c/./d"} {
			want := filepath.FromSlash(rel)
			if abs := filepath.Join(root, want); len(abs) <= len(want) {
				want = abs
			}
			if got := displayPath(root, rel); got != want {
				t.Errorf("displayPath(%q, %q) = %q, want %q", root, rel, got, want)
			}
		}
	}
}
