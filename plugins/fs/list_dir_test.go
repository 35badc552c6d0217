package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

// listTree makes the tree the list_dir tests list, with outside beside it.
func listTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret")
	mustWrite(t, filepath.Join(root, "a.txt"), "hello, world")
	mustWrite(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 2000))
	mustWrite(t, filepath.Join(root, ".hidden"), "h")
	mustWrite(t, filepath.Join(root, ".git", "HEAD"), "ref")
	mustWrite(t, filepath.Join(root, "sub", "inner.txt"), "in")
	mustWrite(t, filepath.Join(root, "sub", "deep", "deeper", "x.txt"), "x")
	mustWrite(t, filepath.Join(root, "sub", "deep", "deeper", "deepest", "d5", "d6", "bottom.txt"), "b")
	if err := os.Mkdir(filepath.Join(root, "zdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "a.txt", filepath.Join(root, "link"))
	mustSymlink(t, "sub", filepath.Join(root, "dirlink"))
	mustSymlink(t, outside, filepath.Join(root, "outlink"))
	return root, outside
}

func TestListDir(t *testing.T) {
	t.Parallel()
	root, outside := listTree(t)
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"the root by default":            {nil, "a.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\nlink -> a.txt\noutlink -> " + outside + "\nsub/\nzdir/\n"},
		"the root as .":                  {map[string]any{"path": "."}, "a.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\nlink -> a.txt\noutlink -> " + outside + "\nsub/\nzdir/\n"},
		"hidden entries":                 {map[string]any{"include_hidden": true}, ".git/\n.hidden (1 B)\na.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\nlink -> a.txt\noutlink -> " + outside + "\nsub/\nzdir/\n"},
		"a subdirectory":                 {map[string]any{"path": "sub"}, "deep/\ninner.txt (2 B)\n"},
		"an absolute path":               {map[string]any{"path": filepath.Join(root, "sub")}, "deep/\ninner.txt (2 B)\n"},
		"through a link inside the root": {map[string]any{"path": "dirlink"}, "deep/\ninner.txt (2 B)\n"},
		"depth 2, a tree that does not enter links": {map[string]any{"depth": 2},
			"a.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\nlink -> a.txt\noutlink -> " + outside + "\nsub/\n  deep/\n  inner.txt (2 B)\nzdir/\n"},
		"depth 5": {map[string]any{"path": "sub", "depth": 5},
			"deep/\n  deeper/\n    deepest/\n      d5/\n        d6/\n    x.txt (1 B)\ninner.txt (2 B)\n"},
		"a cap":                    {map[string]any{"max_entries": 3}, "a.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\n... and 4 more\n"},
		"a cap counts the tree":    {map[string]any{"path": "sub", "depth": 5, "max_entries": 2}, "deep/\n  deeper/\n... and 5 more\n"},
		"an empty directory":       {map[string]any{"path": "zdir"}, "zdir is empty"},
		"only hidden entries":      {map[string]any{"path": ".git/.."}, "a.txt (12 B)\nbig.bin (2.0 KiB)\ndirlink -> sub\nlink -> a.txt\noutlink -> " + outside + "\nsub/\nzdir/\n"},
		"hidden, shown when asked": {map[string]any{"path": ".git", "include_hidden": true}, "HEAD (3 B)\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, listDir, tc.args)
			if err != nil || got != tc.want {
				t.Errorf("list_dir(%v) =\n%s\n%v\nwant:\n%s", tc.args, got, err, tc.want)
			}
		})
	}
}

func TestListDirHiddenOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "h", ".one"), "1")
	got, err := call(t, root, listDir, map[string]any{"path": "h"})
	if want := "h is empty apart from 1 hidden entry (set include_hidden to list it)"; err != nil || got != want {
		t.Errorf("list_dir = %q, %v; want %q", got, err, want)
	}
	mustWrite(t, filepath.Join(root, "h", ".two"), "2")
	got, err = call(t, root, listDir, map[string]any{"path": "h"})
	if want := "h is empty apart from 2 hidden entries (set include_hidden to list them)"; err != nil || got != want {
		t.Errorf("list_dir = %q, %v; want %q", got, err, want)
	}
}

func TestListDirDefaultCap(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 600 {
		mustWrite(t, filepath.Join(root, fmt.Sprintf("f%03d", i)), "")
	}
	got, err := call(t, root, listDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 501 || lines[0] != "f000 (0 B)" || lines[499] != "f499 (0 B)" || lines[500] != "... and 100 more" {
		t.Errorf("list_dir of 600 files: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// A directory that may be read but not searched lists its names, each
// with the reason it cannot be examined.
func TestListDirUnsearchable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root searches every directory")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "nox")
	mustWrite(t, filepath.Join(dir, "b.txt"), "b")
	mustWrite(t, filepath.Join(dir, "a.txt"), "a")
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	for _, depth := range []int{1, 2} {
		got, err := call(t, root, listDir, map[string]any{"path": "nox", "depth": depth})
		if want := "a.txt [permission denied]\nb.txt [permission denied]\n"; err != nil || got != want {
			t.Errorf("list_dir(nox, depth %d) = %q, %v; want %q", depth, got, err, want)
		}
	}
	got, err := call(t, root, listDir, map[string]any{"depth": 2})
	if want := "nox/\n  a.txt [permission denied]\n  b.txt [permission denied]\n"; err != nil || got != want {
		t.Errorf("list_dir(depth 2) = %q, %v; want %q", got, err, want)
	}
}

func TestListDirErrors(t *testing.T) {
	t.Parallel()
	root, _ := listTree(t)
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"depth over 5":         {map[string]any{"depth": 6}, "depth 6 is out of range: use 1 to 5"},
		"negative depth":       {map[string]any{"depth": -1}, "depth -1 is out of range: use 1 to 5"},
		"negative max_entries": {map[string]any{"max_entries": -1}, "max_entries -1 is out of range: it must be positive"},
		"a file":               {map[string]any{"path": "a.txt"}, "a.txt is not a directory"},
		"a link to a file":     {map[string]any{"path": "link"}, "link is not a directory"},
		"missing":              {map[string]any{"path": "nope"}, "nope: no such file or directory"},
		"unknown argument":     {map[string]any{"recursive": true}, "invalid arguments: unexpected additional properties [\"recursive\"]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, listDir, tc.args)
			wantErr(t, fmt.Sprintf("list_dir(%v)", tc.args), got, err, tc.want)
		})
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	tests := map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1229: "1.2 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"}
	for n, want := range tests {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkListDir200 lists a directory of 200 files, with sizes (a
// stat of each entry) and names_only (none).
func BenchmarkListDir200(b *testing.B) {
	root := b.TempDir()
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("file%03d.txt", i)), []byte("content"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct{ name, args string }{
		{"sizes", `{}`},
		{"names_only", `{"names_only":true}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := sdk.WithRoots(b.Context(), []string{root})
			for b.Loop() {
				if _, err := listDir.Execute(ctx, json.RawMessage(bc.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
