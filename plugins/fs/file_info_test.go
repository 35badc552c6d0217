package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// infoTree makes the tree the file_info tests describe, with outside
// beside it.
func infoTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret")
	mustWrite(t, filepath.Join(root, "a.txt"), "hello, world")
	mustWrite(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 2000))
	mustWrite(t, filepath.Join(root, "sub", "inner.txt"), "in")
	if err := os.Chmod(filepath.Join(root, "a.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "a.txt", filepath.Join(root, "link"))
	mustSymlink(t, "missing", filepath.Join(root, "dangling"))
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "outlink"))
	mustSymlink(t, outside, filepath.Join(root, "outdir"))
	mustSymlink(t, "sub", filepath.Join(root, "dirlink"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// infoTimes is the times part of a block: four lines in RFC 3339, the
// last perhaps unknown.
const infoTimes = `  modified \S+\n  accessed \S+\n  changed \S+\n  created \S+\n`

// owner is how file_info names the test's own user and group.
func owner(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("owner %s, group %s", userNames.name(uint32(os.Getuid())), groupNames.name(uint32(os.Getgid())))
}

func TestFileInfo(t *testing.T) {
	t.Parallel()
	root, outside := infoTree(t)
	own := regexp.QuoteMeta(owner(t))
	tests := map[string]struct {
		paths []string
		want  string // a regular expression for the whole answer
	}{
		"a file": {[]string{"a.txt"},
			`a\.txt: file, 12 bytes\n  permissions -rw-r----- \(0640\), ` + own + `, links 1\n` + infoTimes},
		"a larger file shows its size in KiB too": {[]string{"big.bin"},
			`big\.bin: file, 2000 bytes \(2\.0 KiB\)\n  permissions -rw-r--r-- \(0644\), ` + own + `, links 1\n` + infoTimes},
		"a directory": {[]string{"sub"},
			`sub: directory, \d+ bytes\n  permissions drwxr-x--- \(0750\), ` + own + `, links 2\n` + infoTimes},
		"the root": {[]string{"."},
			`\.: directory, \d+ bytes\n  permissions d\S+ \(0\d+\), ` + own + `, links \d+\n` + infoTimes},
		"an absolute path": {[]string{filepath.Join(root, "sub", "inner.txt")},
			`sub/inner\.txt: file, 2 bytes\n  permissions -rw-r--r-- \(0644\), ` + own + `, links 1\n` + infoTimes},
		"through a link inside the roots": {[]string{"dirlink/inner.txt"},
			`dirlink/inner\.txt: file, 2 bytes\n  permissions -rw-r--r-- \(0644\), ` + own + `, links 1\n` + infoTimes},
		"a symlink to a file, not followed": {[]string{"link"},
			`link: symlink -> a\.txt, 5 bytes\n  permissions lrwxrwxrwx \(0777\), ` + own + `, links 1\n` + infoTimes},
		"a dangling symlink": {[]string{"dangling"},
			`dangling: symlink -> missing, 7 bytes\n  permissions lrwxrwxrwx \(0777\), ` + own + `, links 1\n` + infoTimes},
		"a symlink out of the roots, described, not followed": {[]string{"outlink"},
			`outlink: symlink -> ` + regexp.QuoteMeta(filepath.Join(outside, "secret.txt")) + `, \d+ bytes\n  permissions lrwxrwxrwx \(0777\), ` + own + `, links 1\n` + infoTimes},
		"a FIFO": {[]string{"pipe"},
			`pipe: fifo, 0 bytes\n  permissions prw------- \(0600\), ` + own + `, links 1\n` + infoTimes},
		"a missing path and a file": {[]string{"nope.txt", "a.txt"},
			`error: nope\.txt: no such file or directory\na\.txt: file, 12 bytes\n.*\n` + infoTimes},
		"the same path twice": {[]string{"a.txt", "a.txt"},
			`a\.txt: file, 12 bytes\n.*\n` + infoTimes + `a\.txt: file, 12 bytes\n.*\n` + infoTimes},
		"outside the roots, through a linked directory, beside a file": {[]string{"outdir/secret.txt", "../outside/secret.txt", "pipe"},
			`error: path "outdir/secret\.txt" is outside the workspace roots\nerror: path "\.\./outside/secret\.txt" is outside the workspace roots\npipe: fifo, .*\n.*\n` + infoTimes},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, fileInfo, map[string]any{"paths": tc.paths})
			if err != nil || !regexp.MustCompile(`\A`+tc.want+`\z`).MatchString(got) {
				t.Errorf("file_info(%q) =\n%s\n%v\nwant to match:\n%s", tc.paths, got, err, tc.want)
			}
			if strings.Contains(got, "secret") && !strings.Contains(got, "-> ") && !strings.Contains(got, "outside the workspace roots") {
				t.Errorf("file_info(%q) describes a file outside the roots:\n%s", tc.paths, got)
			}
		})
	}
}

// The times are the file's own, in RFC 3339.
func TestFileInfoTimes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "f")
	mustWrite(t, path, "x")
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	atime := time.Date(2022, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, atime, mtime); err != nil {
		t.Fatal(err)
	}
	got, err := call(t, root, fileInfo, map[string]any{"paths": []string{"f"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  modified " + mtime.Local().Format(time.RFC3339) + "\n", "\n  accessed " + atime.Local().Format(time.RFC3339) + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("file_info =\n%s\nwant it to hold %q", got, want)
		}
	}
	m := regexp.MustCompile(`\n  changed (\S+)\n  created (\S+)\n\z`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("file_info =\n%s\nwant the changed and created times last", got)
	}
	for _, s := range m[1:] {
		if s == "unknown" && s == m[2] {
			continue // no birth time on this file system
		}
		if ts, err := time.Parse(time.RFC3339, s); err != nil || time.Since(ts) > time.Hour || time.Since(ts) < -time.Minute {
			t.Errorf("time %q: %v; want a time of this test", s, err)
		}
	}
}

func TestFileInfoErrors(t *testing.T) {
	t.Parallel()
	root, _ := infoTree(t)
	many := make([]string, 101)
	for i := range many {
		many[i] = "a.txt"
	}
	tests := map[string]struct {
		paths []string
		want  string
	}{
		"a missing path":                  {[]string{"nope.txt"}, "nope.txt: no such file or directory"},
		"outside the roots":               {[]string{"../outside/secret.txt"}, `path "../outside/secret.txt" is outside the workspace roots`},
		"through a link out of the roots": {[]string{"outdir/secret.txt"}, `path "outdir/secret.txt" is outside the workspace roots`},
		"under a file":                    {[]string{"a.txt/x"}, "a.txt/x: not a directory"},
		"an empty path":                   {[]string{""}, "path is empty"},
		"every path failing":              {[]string{"nope.txt", "../x", ""}, "nope.txt: no such file or directory\npath \"../x\" is outside the workspace roots\npath is empty"},
		"no paths":                        {[]string{}, "paths is empty: give 1 to 100 paths"},
		"too many paths":                  {many, "101 paths is too many: give at most 100 per call"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, fileInfo, map[string]any{"paths": tc.paths})
			wantErr(t, fmt.Sprintf("file_info(%q)", tc.paths), got, err, tc.want)
		})
	}
	got, err := call(t, root, fileInfo, map[string]any{"paths": many[:100]})
	if err != nil || strings.Count(got, "a.txt: file") != 100 {
		t.Errorf("file_info of 100 paths: %v\n%s", err, got)
	}
}

func TestModeString(t *testing.T) {
	t.Parallel()
	tests := map[uint32]string{
		syscall.S_IFREG | 0o644:  "-rw-r--r--",
		syscall.S_IFDIR | 0o755:  "drwxr-xr-x",
		syscall.S_IFDIR | 0o1777: "drwxrwxrwt",
		syscall.S_IFDIR | 0o1770: "drwxrwx--T",
		syscall.S_IFREG | 0o4755: "-rwsr-xr-x",
		syscall.S_IFREG | 0o2644: "-rw-r-Sr--",
		syscall.S_IFLNK | 0o777:  "lrwxrwxrwx",
		syscall.S_IFIFO | 0o600:  "prw-------",
		syscall.S_IFSOCK | 0o755: "srwxr-xr-x",
		syscall.S_IFCHR | 0o666:  "crw-rw-rw-",
		syscall.S_IFBLK | 0o660:  "brw-rw----",
	}
	for mode, want := range tests {
		if got := modeString(mode); got != want {
			t.Errorf("modeString(%o) = %q, want %q", mode, got, want)
		}
	}
}

// A character device shows its numbers.
func TestFileInfoDevice(t *testing.T) {
	t.Parallel()
	got, err := call(t, "/dev", fileInfo, map[string]any{"paths": []string{"/dev/null"}})
	if err != nil {
		t.Skip("no /dev/null here:", err)
	}
	if !strings.HasPrefix(got, "null: character device 1:3, 0 bytes\n  permissions crw-rw-rw- (0666), ") {
		t.Errorf("file_info(/dev/null) =\n%s", got)
	}
}

// In the plugin process, as the host runs it: the answer, an error in
// place, and the call's error when every path fails.
func TestFileInfoInPlugin(t *testing.T) {
	t.Parallel()
	root, _ := infoTree(t)
	p := startPlugin(t, []string{root})
	got := p.call("file_info", map[string]any{"paths": []string{"link", "../outside/secret.txt"}})
	if !regexp.MustCompile(`\Alink: symlink -> a\.txt, 5 bytes\n  permissions lrwxrwxrwx \(0777\), owner \S+.*, links 1\n` + infoTimes +
		`error: path "\.\./outside/secret\.txt" is outside the workspace roots\n\z`).MatchString(got) {
		t.Errorf("file_info in the plugin =\n%s", got)
	}
	noGoText(t, "file_info", got)
	wantAnswer(t, "file_info, every path failing", p.call("file_info", map[string]any{"paths": []string{"nope", "outdir/x"}}),
		"Error executing file_info: nope: no such file or directory\npath \"outdir/x\" is outside the workspace roots")
}

// TestIDNames checks that a name looked up is kept for nameTTL and then
// looked up again, that an id without a name is shown alone, and that
// the names kept are bounded.
func TestIDNames(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	n := &idNames{lookup: func(id string) string {
		calls[id]++
		if id == "7" {
			return ""
		}
		return "user" + id
	}}
	for range 3 {
		if got := n.name(5); got != "user5 (5)" {
			t.Errorf("name(5) = %q, want %q", got, "user5 (5)")
		}
		if got := n.name(7); got != "7" {
			t.Errorf("name(7) = %q, want the id alone", got)
		}
	}
	if calls["5"] != 1 || calls["7"] != 1 {
		t.Errorf("looked up %v within the TTL, want each id once", calls)
	}

	n.mu.Lock()
	stale := n.names[5]
	stale.at = stale.at.Add(-nameTTL)
	n.names[5] = stale
	n.mu.Unlock()
	n.name(5)
	if calls["5"] != 2 {
		t.Errorf("a name kept for its TTL was looked up %d times in all, want 2", calls["5"])
	}

	for id := range uint32(maxNames + 10) {
		n.name(id + 100)
	}
	n.mu.Lock()
	kept := len(n.names)
	n.mu.Unlock()
	if kept > maxNames {
		t.Errorf("%d names kept, more than %d", kept, maxNames)
	}
}
