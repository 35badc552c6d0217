package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRemove(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		path string
		want string
		gone []string // paths under the root that must be gone
		kept []string // paths under the root that must remain
	}{
		"a file":                     {"a.txt", "Removed file a.txt", []string{"a.txt"}, []string{"dir/f.txt"}},
		"a directory, recursively":   {"dir", "Removed directory dir", []string{"dir"}, []string{"a.txt"}},
		"an absolute path":           {"ROOT/a.txt", "Removed file a.txt", []string{"a.txt"}, nil},
		"an empty directory":         {"empty", "Removed directory empty", []string{"empty"}, nil},
		"a link, not its target":     {"link", "Removed symbolic link link", []string{"link"}, []string{"a.txt"}},
		"a link to a directory":      {"dirlink", "Removed symbolic link dirlink", []string{"dirlink"}, []string{"dir/f.txt", "dir/sub/g.txt"}},
		"a dangling link":            {"dangling", "Removed symbolic link dangling", []string{"dangling"}, nil},
		"through a linked directory": {"dirlink/f.txt", "Removed file dirlink/f.txt", []string{"dir/f.txt"}, []string{"dirlink", "dir/sub/g.txt"}},
		"missing":                    {"nope", "Nothing to remove: nope does not exist", nil, []string{"a.txt"}},
		"missing parent":             {"nope/deeper", "Nothing to remove: nope/deeper does not exist", nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			mustWrite(t, filepath.Join(root, "a.txt"), "a")
			mustWrite(t, filepath.Join(root, "dir", "f.txt"), "f")
			mustWrite(t, filepath.Join(root, "dir", "sub", "g.txt"), "g")
			if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, "a.txt", filepath.Join(root, "link"))
			mustSymlink(t, "dir", filepath.Join(root, "dirlink"))
			mustSymlink(t, "nowhere", filepath.Join(root, "dangling"))
			path := tc.path
			if rest, ok := strings.CutPrefix(path, "ROOT/"); ok {
				path = filepath.Join(root, rest)
			}
			got, err := call(t, root, remove, map[string]any{"path": path})
			if err != nil || got != tc.want {
				t.Errorf("remove(%s) = %q, %v; want %q", path, got, err, tc.want)
			}
			for _, p := range tc.gone {
				if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s is still there (%v)", p, err)
				}
			}
			for _, p := range tc.kept {
				if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s is gone: %v", p, err)
				}
			}
		})
	}
}

func TestRemoveRefusesRoots(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, inner := filepath.Join(base, "ws"), filepath.Join(base, "ws", "sub", "inner")
	mustWrite(t, filepath.Join(inner, "keep.txt"), "k")
	roots := []string{root, inner}
	tests := map[string]struct {
		path string
		want string
	}{
		"the root":                   {root, "refusing to remove the workspace root " + root},
		"the root as .":              {".", "refusing to remove the workspace root ."},
		"the root by a detour":       {"sub/..", "refusing to remove the workspace root sub/.."},
		"the second root":            {inner, "refusing to remove the workspace root " + inner},
		"a directory holding a root": {"sub", "refusing to remove sub: it holds the workspace root " + inner},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := run(t, roots, remove, map[string]any{"path": tc.path})
			wantErr(t, fmt.Sprintf("remove(%s)", tc.path), got, err, tc.want)
		})
	}
	if got := readString(t, filepath.Join(inner, "keep.txt")); got != "k" {
		t.Errorf("keep.txt = %q", got)
	}
}
