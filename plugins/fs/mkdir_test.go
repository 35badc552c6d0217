package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMkdir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "file"), "x")
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "real", filepath.Join(root, "dirlink"))

	steps := []struct {
		args map[string]any
		want string // the answer, or the error
		err  bool
	}{
		{map[string]any{"path": "a/b/c"}, "Created directory a/b/c", false},
		{map[string]any{"path": "a/b/c"}, "Directory a/b/c already exists", false},
		{map[string]any{"path": filepath.Join(root, "a", "b")}, "Directory a/b already exists", false},
		{map[string]any{"path": "."}, "Directory . already exists", false},
		{map[string]any{"path": "dirlink"}, "Directory dirlink already exists", false},
		{map[string]any{"path": "dirlink/new"}, "Created directory dirlink/new", false},
		{map[string]any{"path": "file"}, "file already exists and is not a directory", true},
		{map[string]any{"path": "file/sub"}, "file/sub: not a directory", true},
		{map[string]any{"path": ""}, "path is empty", true},
	}
	for _, s := range steps {
		got, err := call(t, root, mkdir, s.args)
		if s.err {
			wantErr(t, fmt.Sprintf("mkdir(%v)", s.args), got, err, s.want)
			continue
		}
		if err != nil || got != s.want {
			t.Errorf("mkdir(%v) = %q, %v; want %q", s.args, got, err, s.want)
		}
	}
	for _, dir := range []string{"a/b/c", "real/new"} {
		if info, err := os.Stat(filepath.Join(root, dir)); err != nil || !info.IsDir() {
			t.Errorf("%s: %v, %v; want a directory", dir, info, err)
		}
	}
}
