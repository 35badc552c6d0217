package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// excludeTree makes a tree with the names exclude patterns are written
// for, at several depths.
func excludeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{
		"main.go", "run.log", ".env",
		"node_modules/left-pad/index.js",
		"src/app.go", "src/app.log", "src/gen/types.go",
		"src/node_modules/dep/index.js",
		"src/testdata/case.json",
		"build/out.bin",
		"src/build/notes.txt",
		"docs/build",
	} {
		mustWrite(t, filepath.Join(root, f), "x")
	}
	return root
}

func TestListDirExclude(t *testing.T) {
	t.Parallel()
	root := excludeTree(t)
	tests := map[string]struct {
		exclude []string
		want    string
	}{
		"nothing excluded": {nil,
			"build/\n  out.bin\ndocs/\n  build\nmain.go\nnode_modules/\n  left-pad/\n    index.js\nrun.log\n" +
				"src/\n  app.go\n  app.log\n  build/\n    notes.txt\n  gen/\n    types.go\n  node_modules/\n    dep/\n      index.js\n  testdata/\n    case.json\n"},
		"a name, at every level": {[]string{"node_modules"},
			"build/\n  out.bin\ndocs/\n  build\nmain.go\nrun.log\n" +
				"src/\n  app.go\n  app.log\n  build/\n    notes.txt\n  gen/\n    types.go\n  testdata/\n    case.json\n"},
		"a name glob, at every level": {[]string{"*.log"},
			"build/\n  out.bin\ndocs/\n  build\nmain.go\nnode_modules/\n  left-pad/\n    index.js\n" +
				"src/\n  app.go\n  build/\n    notes.txt\n  gen/\n    types.go\n  node_modules/\n    dep/\n      index.js\n  testdata/\n    case.json\n"},
		"a path glob matches paths only": {[]string{"src/*.go"},
			"build/\n  out.bin\ndocs/\n  build\nmain.go\nnode_modules/\n  left-pad/\n    index.js\nrun.log\n" +
				"src/\n  app.log\n  build/\n    notes.txt\n  gen/\n    types.go\n  node_modules/\n    dep/\n      index.js\n  testdata/\n    case.json\n"},
		"** across directories": {[]string{"**/index.js", "src/**/*.go"},
			"build/\n  out.bin\ndocs/\n  build\nmain.go\nnode_modules/\n  left-pad/\nrun.log\n" +
				"src/\n  app.log\n  build/\n    notes.txt\n  gen/\n  node_modules/\n    dep/\n  testdata/\n    case.json\n"},
		"a leading slash anchors to the listed directory": {[]string{"/build", "/src/gen"},
			"docs/\n  build\nmain.go\nnode_modules/\n  left-pad/\n    index.js\nrun.log\n" +
				"src/\n  app.go\n  app.log\n  build/\n    notes.txt\n  node_modules/\n    dep/\n      index.js\n  testdata/\n    case.json\n"},
		"a trailing slash matches directories only": {[]string{"build/", "testdata/", "left-pad/"},
			"docs/\n  build\nmain.go\nnode_modules/\nrun.log\n" +
				"src/\n  app.go\n  app.log\n  gen/\n    types.go\n  node_modules/\n    dep/\n      index.js\n"},
		"alternatives and classes": {[]string{"{gen,testdata}", "[a-m]*.go"},
			"build/\n  out.bin\ndocs/\n  build\nnode_modules/\n  left-pad/\n    index.js\nrun.log\n" +
				"src/\n  app.log\n  build/\n    notes.txt\n  node_modules/\n    dep/\n      index.js\n"},
		"./ is the listed directory": {[]string{"./src", "./docs/"},
			"build/\n  out.bin\nmain.go\nnode_modules/\n  left-pad/\n    index.js\nrun.log\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"depth": 5, "names_only": true, "exclude": tc.exclude}
			got, err := call(t, root, listDir, args)
			if err != nil || got != tc.want {
				t.Errorf("list_dir(%v) =\n%s\n%v\nwant:\n%s", args, got, err, tc.want)
			}
		})
	}
}

// Hidden entries are left out before exclude sees them; with
// include_hidden, exclude can leave them out too.
func TestListDirExcludeHidden(t *testing.T) {
	t.Parallel()
	root := excludeTree(t)
	got, err := call(t, root, listDir, map[string]any{"include_hidden": true, "exclude": []string{".*", "src"}})
	if want := "build/\ndocs/\nmain.go (1 B)\nnode_modules/\nrun.log (1 B)\n"; err != nil || got != want {
		t.Errorf("list_dir(include_hidden, exclude .*) = %q, %v; want %q", got, err, want)
	}
}

// A listing that exclude empties says so, and what else it left out.
func TestListDirExcludedOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, f := range []string{"one/a.log", "two/a.log", "two/b.txt", "both/a.log", "both/.h"} {
		mustWrite(t, filepath.Join(root, f), "x")
	}
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"one":                 {map[string]any{"path": "one", "exclude": []string{"*.log"}}, "one is empty apart from 1 excluded entry"},
		"several":             {map[string]any{"path": "two", "exclude": []string{"*.log", "b*"}}, "two is empty apart from 2 excluded entries"},
		"hidden and excluded": {map[string]any{"path": "both", "exclude": []string{"*.log"}}, "both is empty apart from 1 hidden entry (set include_hidden to list it) and 1 excluded entry"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, listDir, tc.args)
			if err != nil || got != tc.want {
				t.Errorf("list_dir(%v) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
}

// An excluded directory is not entered: one that cannot be read lists
// without error once excluded, at any depth, while without exclude the
// listing says it cannot list it.
func TestListDirExcludedNotEntered(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a", "b", "locked", "secret.txt"), "s")
	mustWrite(t, filepath.Join(root, "a", "b", "c.txt"), "c")
	locked := filepath.Join(root, "a", "b", "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	unprivileged(t, func() {
		got, err := call(t, root, listDir, map[string]any{"depth": 4})
		if want := "a/\n  b/\n    c.txt (1 B)\n    locked/\n      [cannot list: a/b/locked: permission denied]\n"; err != nil || got != want {
			t.Errorf("the control, without exclude: list_dir = %q, %v; want %q", got, err, want)
			return
		}
		for _, pattern := range []string{"locked", "a/b/locked", "**/locked/", "lock*"} {
			for _, names := range []bool{false, true} {
				args := map[string]any{"depth": 4, "names_only": names, "exclude": []string{pattern}}
				got, err := call(t, root, listDir, args)
				want := "a/\n  b/\n    c.txt (1 B)\n"
				if names {
					want = "a/\n  b/\n    c.txt\n"
				}
				if err != nil || got != want {
					t.Errorf("list_dir(%v) = %q, %v; want %q", args, got, err, want)
				}
			}
		}
		// Listed itself, it is not excluded: exclude matches below.
		got, err = call(t, root, listDir, map[string]any{"path": "a/b/locked", "exclude": []string{"locked"}})
		wantErr(t, "list_dir(a/b/locked, exclude locked)", got, err, "a/b/locked: permission denied")
	})
}

func TestListDirExcludeErrors(t *testing.T) {
	t.Parallel()
	root := excludeTree(t)
	long := strings.Repeat("[", 100)
	tests := map[string]struct {
		exclude any
		want    string
	}{
		"an unclosed class":       {[]string{"ok", "src/[a-"}, `exclude pattern "src/[a-" is not a valid glob: check that each [ and { is closed and that it does not end in \`},
		"an unclosed alternative": {[]string{"{a,b"}, `exclude pattern "{a,b" is not a valid glob: check that each [ and { is closed and that it does not end in \`},
		"a trailing backslash":    {[]string{`a\`}, `exclude pattern "a\\" is not a valid glob: check that each [ and { is closed and that it does not end in \`},
		"a long pattern, cut":     {[]string{long}, fmt.Sprintf(`exclude pattern "%s…" (100 bytes) is not a valid glob: check that each [ and { is closed and that it does not end in \`, long[:64])},
		"empty":                   {[]string{""}, `exclude pattern "" matches nothing: give a glob such as node_modules, *.log or src/gen`},
		"a slash alone":           {[]string{"/"}, `exclude pattern "/" matches nothing: give a glob such as node_modules, *.log or src/gen`},
		"not a list":              {"node_modules", `invalid arguments: exclude: type: node_modules has type "string", want "array"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"exclude": tc.exclude}
			got, err := call(t, root, listDir, args)
			wantErr(t, fmt.Sprintf("list_dir(%v)", args), got, err, tc.want)
		})
	}
}
