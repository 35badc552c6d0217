package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/workspace"
)

// deepPath returns a relative path of names of 199 bytes (the last one
// shorter) such that root joined with it is total bytes long.
func deepPath(t *testing.T, root string, total int) string {
	t.Helper()
	left := total - len(root) - 1 // the separator after root
	var names []string
	for left > 0 {
		n := min(left, 199)
		if left-n == 1 {
			n-- // a name of one byte, not a bare separator, ends it
		}
		names = append(names, strings.Repeat(string(rune('a'+len(names)%26)), n))
		left -= n + 1
	}
	rel := strings.Join(names, "/")
	if got := len(filepath.Join(root, rel)); got != total {
		t.Fatalf("deepPath: %d bytes, want %d", got, total)
	}
	return rel
}

// realTempDir is a new temporary directory by its real path, so that the
// length of a path in it is the length the kernel sees.
func realTempDir(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPathMax(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	mustWrite(t, filepath.Join(root, "f.txt"), "x")
	// 25 names of 199 bytes: 5,000 bytes, then the file's name.
	rel := strings.Repeat(strings.Repeat("d", 199)+"/", 25) + "f.txt"
	abs := filepath.Join(root, rel)
	want := fmt.Sprintf("path is %d bytes long as an absolute path, more than the 4095 bytes the system allows (PATH_MAX 4096, less one for the terminating NUL)", len(abs))
	calls := map[string]struct {
		tool string
		args map[string]any
	}{
		"write_file":                {"write_file", map[string]any{"path": rel, "content": "x"}},
		"write_file, absolute":      {"write_file", map[string]any{"path": abs, "content": "x"}},
		"mkdir":                     {"mkdir", map[string]any{"path": rel}},
		"read_file":                 {"read_file", map[string]any{"path": rel}},
		"read_file tail":            {"read_file", map[string]any{"path": rel, "tail": 1}},
		"edit_file":                 {"edit_file", map[string]any{"path": rel, "old_string": "x", "new_string": "y"}},
		"list_dir":                  {"list_dir", map[string]any{"path": rel}},
		"remove":                    {"remove", map[string]any{"path": rel}},
		"move to a long path":       {"move", map[string]any{"source": "f.txt", "destination": rel}},
		"move from a long path":     {"move", map[string]any{"source": rel, "destination": "g.txt"}},
		"short, cleaned to long":    {"mkdir", map[string]any{"path": rel + "/x/.."}},
		"long only before cleaning": {"mkdir", nil},
	}
	for name, c := range calls {
		t.Run(name, func(t *testing.T) {
			if c.args == nil {
				// A long argument whose clean form is short is fine.
				long := strings.Repeat("./", 2500) + "short"
				if got, err := call(t, root, mkdir, map[string]any{"path": long}); err != nil {
					t.Errorf("mkdir(%d bytes cleaned to short) = %q, %v", len(long), got, err)
				}
				return
			}
			for _, tool := range fuzzTools {
				if tool.Name() != c.tool {
					continue
				}
				got, err := call(t, root, tool, c.args)
				wantErr(t, fmt.Sprintf("%s(%.40v...)", c.tool, c.args), got, err, want)
			}
		})
	}
	// Nothing was created, moved or removed.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "f.txt short" {
		t.Errorf("the root holds %q, want %q", got, "f.txt short")
	}
	if got := readString(t, filepath.Join(root, "f.txt")); got != "x" {
		t.Errorf("f.txt holds %q, want %q", got, "x")
	}
}

func TestPathMaxBoundary(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	// The longest path allowed: the kernel opens it by its whole path.
	longest := deepPath(t, root, workspace.MaxPath)
	if got, err := call(t, root, writeFile, map[string]any{"path": longest, "content": "deep"}); err != nil {
		t.Fatalf("write_file(%d-byte path) = %q, %v", workspace.MaxPath, got, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, longest)); err != nil || string(data) != "deep" {
		t.Errorf("os.ReadFile of the %d-byte path = %q, %v", workspace.MaxPath, data, err)
	}
	if got, err := call(t, root, readFile, map[string]any{"path": longest}); err != nil || got != "deep" {
		t.Errorf("read_file(%d-byte path) = %q, %v", workspace.MaxPath, got, err)
	}
	// One byte more is refused, though its directory exists.
	tooLong := longest + "x"
	want := "path is 4096 bytes long as an absolute path, more than the 4095 bytes the system allows (PATH_MAX 4096, less one for the terminating NUL)"
	for _, tool := range []struct {
		name string
		run  func() (string, error)
	}{
		{"write_file", func() (string, error) {
			return call(t, root, writeFile, map[string]any{"path": tooLong, "content": "x"})
		}},
		{"mkdir", func() (string, error) { return call(t, root, mkdir, map[string]any{"path": tooLong}) }},
		{"read_file", func() (string, error) { return call(t, root, readFile, map[string]any{"path": tooLong}) }},
	} {
		got, err := tool.run()
		wantErr(t, tool.name+" of a 4096-byte path", got, err, want)
	}
	if _, err := os.Lstat(filepath.Join(root, filepath.Dir(longest), filepath.Base(tooLong))); err == nil {
		t.Errorf("%s was created", filepath.Base(tooLong))
	}
}

func TestPathMaxThroughALink(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	// A path under the limit whose link leads past it: the link's
	// target is 3,000 bytes, the rest of the path 1,206.
	target := strings.Repeat(strings.Repeat("t", 199)+"/", 15)
	mustSymlink(t, target, filepath.Join(root, "link"))
	rest := strings.Repeat(strings.Repeat("d", 199)+"/", 6) + "f.txt"
	got, err := call(t, root, writeFile, map[string]any{"path": "link/" + rest, "content": "x"})
	want := fmt.Sprintf("link/%s: path is %d bytes long as an absolute path, more than the 4095 bytes the system allows (PATH_MAX 4096, less one for the terminating NUL)", rest, len(filepath.Join(root, target, rest)))
	wantErr(t, "write_file through a link", got, err, want)
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Errorf("the root holds %d entries, want only the link", len(entries))
	}
}
