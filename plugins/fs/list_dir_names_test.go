package main

import (
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// namesTree makes a tree of every kind of entry for the names_only
// tests.
func namesTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a.txt"), "hello")
	mustWrite(t, filepath.Join(root, ".hidden"), "h")
	mustWrite(t, filepath.Join(root, "sub", "inner.txt"), "in")
	mustWrite(t, filepath.Join(root, "sub", "deep", "x.txt"), "x")
	mustWrite(t, filepath.Join(root, "new\nline"), "n")
	mustSymlink(t, "a.txt", filepath.Join(root, "filelink"))
	mustSymlink(t, "sub", filepath.Join(root, "dirlink"))
	mustSymlink(t, "nowhere", filepath.Join(root, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestListDirNamesOnly(t *testing.T) {
	t.Parallel()
	root := namesTree(t)
	top := "a.txt\ndangling -> nowhere\ndirlink -> sub\nfifo [fifo]\nfilelink -> a.txt\n\"new\\nline\"\nsub/\n"
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"one level":      {map[string]any{}, top},
		"hidden entries": {map[string]any{"include_hidden": true}, ".hidden\n" + top},
		"depth 2, a tree that does not enter links": {map[string]any{"depth": 2},
			"a.txt\ndangling -> nowhere\ndirlink -> sub\nfifo [fifo]\nfilelink -> a.txt\n\"new\\nline\"\nsub/\n  deep/\n  inner.txt\n"},
		"depth 3":                {map[string]any{"path": "sub", "depth": 3}, "deep/\n  x.txt\ninner.txt\n"},
		"through a link":         {map[string]any{"path": "dirlink"}, "deep/\ninner.txt\n"},
		"a cap":                  {map[string]any{"max_entries": 2}, "a.txt\ndangling -> nowhere\n... and 5 more\n"},
		"a cap counts the tree":  {map[string]any{"path": "sub", "depth": 2, "max_entries": 1}, "deep/\n... and 2 more\n"},
		"a path through ..":      {map[string]any{"path": "sub/deep/.."}, "deep/\ninner.txt\n"},
		"names_only false sizes": {map[string]any{"path": "sub", "names_only": false}, "deep/\ninner.txt (2 B)\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"names_only": true}
			for k, v := range tc.args {
				args[k] = v
			}
			got, err := call(t, root, listDir, args)
			if err != nil || got != tc.want {
				t.Errorf("list_dir(%v) =\n%s\n%v\nwant:\n%s", args, got, err, tc.want)
			}
		})
	}
}

func TestListDirNamesOnlyEmpty(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "h", ".one"), "1")
	if err := os.Mkdir(filepath.Join(root, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"h": "h is empty apart from 1 hidden entry (set include_hidden to list it)",
		"e": "e is empty",
	}
	for path, want := range tests {
		got, err := call(t, root, listDir, map[string]any{"path": path, "names_only": true})
		if err != nil || got != want {
			t.Errorf("list_dir(%s, names_only) = %q, %v; want %q", path, got, err, want)
		}
	}
}

// names_only lists what the default lists, less the sizes.
func TestListDirNamesOnlyIsDefaultLessSizes(t *testing.T) {
	t.Parallel()
	root, _ := listTree(t)
	size := regexp.MustCompile(`(?m) \([0-9.]+ [KMGTPE]?i?B\)$`)
	for _, args := range []map[string]any{
		{},
		{"include_hidden": true},
		{"depth": 5},
		{"depth": 5, "include_hidden": true, "max_entries": 7},
		{"path": "dirlink", "depth": 3},
	} {
		want, err := call(t, root, listDir, args)
		if err != nil {
			t.Fatal(err)
		}
		want = size.ReplaceAllString(want, "")
		args["names_only"] = true
		got, err := call(t, root, listDir, args)
		if err != nil || got != want {
			t.Errorf("list_dir(%v) =\n%s\n%v\nwant:\n%s", args, got, err, want)
		}
	}
}

// A directory that may be read but not searched: names_only needs no
// stat, so it lists the entries with their kinds, where the default
// cannot examine them.
func TestListDirNamesOnlyUnsearchable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root searches every directory")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "nox")
	mustWrite(t, filepath.Join(dir, "b.txt"), "b")
	mustWrite(t, filepath.Join(dir, "a", "x"), "x")
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	got, err := call(t, root, listDir, map[string]any{"path": "nox", "names_only": true})
	if want := "a/\nb.txt\n"; err != nil || got != want {
		t.Errorf("list_dir(nox, names_only) = %q, %v; want %q", got, err, want)
	}
}
