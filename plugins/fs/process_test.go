package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
)

// These tests run the tools in a real fs plugin process, as the host
// does.

// wantAnswer fails unless the plugin's answer is want exactly.
func wantAnswer(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// goTexts are pieces of Go's own error texts that must never reach the
// model.
var goTexts = []string{"openat", "statat", "renameat", "readlinkat", "mkdirat", "unlinkat", "linkat", "readdirent", "flock", "escapes from parent", "Go struct field", "invalid reflect", "json: ", "strconv."}

// noGoText fails if an answer holds one of Go's internal texts.
func noGoText(t *testing.T, what, answer string) {
	t.Helper()
	for _, g := range goTexts {
		if strings.Contains(answer, g) {
			t.Errorf("%s answers with Go's words (%q): %s", what, g, answer)
		}
	}
}

// A move that holds a nested workspace root is refused, as remove refuses
// it: moving it away would break every later call.
func TestMoveRefusesNestedRoot(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	nested := filepath.Join(ws, "a", "nested")
	mustWrite(t, filepath.Join(nested, "f.txt"), "f")
	p := startPlugin(t, []string{ws, nested})
	wantAnswer(t, "move a dir holding a root", p.call("move", map[string]any{"source": "a", "destination": "b"}),
		"Error executing move: refusing to move a: it holds the workspace root "+nested)
	wantAnswer(t, "move the nested root", p.call("move", map[string]any{"source": nested, "destination": "c"}),
		"Error executing move: refusing to move the workspace root "+nested)
	wantAnswer(t, "remove a dir holding a root", p.call("remove", map[string]any{"path": "a"}),
		"Error executing remove: refusing to remove a: it holds the workspace root "+nested)
	checkFiles(t, ws, map[string]string{"a/nested/f.txt": "f", "b": "", "c": ""})
	wantAnswer(t, "a tool after the refusals", p.call("read_file", map[string]any{"path": filepath.Join(nested, "f.txt")}), "f")
}

// Overwriting as root keeps the file's owner, group and mode; a file with
// several hard links is replaced under one name and the answer says so.
// That takes root's capabilities, which a sandboxed plugin has none of:
// there the write is refused, and nothing is written.
func TestOverwriteKeepsOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	root := t.TempDir()
	path := filepath.Join(root, "theirs.txt")
	mustWrite(t, path, "one\ntwo\n")
	if err := os.Chown(path, 12345, 23456); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	sandboxed := startPlugin(t, []string{root})
	if got := sandboxed.call("write_file", map[string]any{"path": "theirs.txt", "content": "one\n2\n"}); !strings.Contains(got, "only root outside the sandbox can give a file back to another user, so nothing was written") {
		t.Errorf("write_file in the sandbox: %s", got)
	}
	checkFiles(t, root, map[string]string{"theirs.txt": "one\ntwo\n"})

	dir := t.TempDir()
	plugintest.Install(t, dir, "agenthost-plugin-fs", "./plugins/fs")
	p := startPluginMode(t, dir, []string{root}, nil, host.SandboxOff)
	wantAnswer(t, "write_file", p.call("write_file", map[string]any{"path": "theirs.txt", "content": "one\n2\n"}), "Wrote 6 bytes to theirs.txt")
	if got := p.call("edit_file", map[string]any{"path": "theirs.txt", "old_string": "2", "new_string": "two"}); !strings.HasPrefix(got, "Edited theirs.txt: 1 replacement\n") {
		t.Errorf("edit_file: %s", got)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if st.Uid != 12345 || st.Gid != 23456 || info.Mode().Perm() != 0o640 {
		t.Errorf("after the replace: owner %d:%d mode %v, want 12345:23456 -rw-r-----", st.Uid, st.Gid, info.Mode().Perm())
	}

	if err := os.Link(path, filepath.Join(root, "other-name.txt")); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, "write_file of a file with two links", p.call("write_file", map[string]any{"path": "theirs.txt", "content": "new"}),
		"Wrote 3 bytes to theirs.txt (the file had 2 hard links: this name now has the new content, the other 1 keep the old)")
	checkFiles(t, root, map[string]string{"theirs.txt": "new", "other-name.txt": "one\ntwo\n"})
}

// A trailing slash names a directory: write_file refuses it.
func TestWriteFileTrailingSlash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := startPlugin(t, []string{root})
	wantAnswer(t, "write_file dir/new/", p.call("write_file", map[string]any{"path": "dir/new/", "content": "x"}),
		"Error executing write_file: dir/new/ ends with a slash, which names a directory: give the file's name (mkdir creates directories)")
	checkFiles(t, root, map[string]string{"dir": ""})
}

// Any valid name can be written, edited and moved: 255 bytes is the
// limit of the file system, not of the tools.
func TestLongNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := startPlugin(t, []string{root})
	long := strings.Repeat("n", 251) + ".txt"
	long2 := strings.Repeat("m", 255)
	wantAnswer(t, "write_file", p.call("write_file", map[string]any{"path": long, "content": "a\n"}), "Wrote 2 bytes to "+long)
	if got := p.call("edit_file", map[string]any{"path": long, "old_string": "a", "new_string": "b"}); !strings.HasPrefix(got, "Edited "+long) {
		t.Errorf("edit_file: %s", got)
	}
	wantAnswer(t, "move", p.call("move", map[string]any{"source": long, "destination": "d/" + long2}), "Moved "+long+" to d/"+long2)
	checkFiles(t, root, map[string]string{"d/" + long2: "b\n", long: ""})
	tooLong := strings.Repeat("x", 256)
	got := p.call("write_file", map[string]any{"path": tooLong, "content": "x"})
	wantAnswer(t, "a 256-byte name", got, "Error executing write_file: "+tooLong+": file name too long (a name has at most 255 bytes)")
	checkNoTemp(t, root)

	other := mountTmpfs(t, "size=1m")
	q := startPlugin(t, []string{root, other})
	wantAnswer(t, "move across file systems", q.call("move", map[string]any{"source": "d/" + long2, "destination": filepath.Join(other, long2)}),
		"Moved d/"+long2+" to "+long2)
	checkFiles(t, other, map[string]string{long2: "b\n"})
	checkNoTemp(t, other)
}

// Text that is not UTF-8 is refused, not written changed; bytes travel
// as base64.
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := startPlugin(t, []string{root})
	raw := func(tool, args string) string { return p.reg.Execute(t.Context(), tool, []byte(args)) }
	for _, tc := range []struct{ tool, args string }{
		{"write_file", "{\"path\":\"bad\xff.txt\",\"content\":\"x\"}"},
		{"write_file", `{"path":"bad\udc80.txt","content":"x"}`},
		{"write_file", "{\"path\":\"ok.txt\",\"content\":\"\xfe\xff\"}"},
		{"write_file", `{"path":"ok.txt","content":"half a pair \ud83d"}`},
		{"edit_file", "{\"path\":\"ok.txt\",\"old_string\":\"a\",\"new_string\":\"\xff\"}"},
		{"mkdir", "{\"path\":\"d\xc3\"}"},
		{"move", "{\"source\":\"a\",\"destination\":\"b\xff\"}"},
	} {
		got := raw(tc.tool, tc.args)
		// The host may refuse it before the plugin does, in its words.
		if !strings.HasPrefix(got, "Error executing "+tc.tool+": invalid arguments: ") || !strings.Contains(got, "UTF-8") && !strings.Contains(got, "surrogate") {
			t.Errorf("%s(%q) = %s, want an invalid UTF-8 error", tc.tool, tc.args, got)
		}
		noGoText(t, tc.tool, got)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Errorf("files were created: %v", entries)
	}
	// A pair of surrogates is one character, and fine.
	wantAnswer(t, "a surrogate pair", raw("write_file", `{"path":"smile.txt","content":"\ud83d\ude00"}`), "Wrote 4 bytes to smile.txt")
	wantAnswer(t, "base64 content", p.call("write_file", map[string]any{"path": "bytes.bin", "content": "AP/+gA==", "encoding": "base64"}), "Wrote 4 bytes to bytes.bin")
	checkFiles(t, root, map[string]string{"bytes.bin": "\x00\xff\xfe\x80", "smile.txt": "😀"})
	wantAnswer(t, "bad base64", p.call("write_file", map[string]any{"path": "b.bin", "content": "!!", "encoding": "base64"}),
		"Error executing write_file: content is not valid base64: illegal base64 data at input byte 0")
}

// Numbers no integer holds, and negative counts, get a clear error.
func TestNumericBounds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "f.txt"), "1\n2\n")
	p := startPlugin(t, []string{root})
	raw := func(tool, args string) string { return p.reg.Execute(t.Context(), tool, []byte(args)) }
	tests := map[string]struct{ tool, args, want string }{
		"limit beyond int64": {"read_file", `{"path":"f.txt","limit":1e30}`,
			"Error executing read_file: invalid arguments: limit: must be an integer from -9223372036854775808 to 9223372036854775807, not 1e30"},
		"offset 2^63": {"read_file", `{"path":"f.txt","offset":9223372036854775808}`,
			"Error executing read_file: invalid arguments: offset: must be an integer from -9223372036854775808 to 9223372036854775807, not 9223372036854775808"},
		"offset 2^63-1": {"read_file", `{"path":"f.txt","offset":9223372036854775807}`,
			"Error executing read_file: offset 9223372036854775807 is past the end of the file (2 lines)"},
		"limit 2^63-1":         {"read_file", `{"path":"f.txt","limit":9223372036854775807}`, "1\n2\n"},
		"negative offset":      {"read_file", `{"path":"f.txt","offset":-1}`, "Error executing read_file: offset and limit must not be negative"},
		"negative limit":       {"read_file", `{"path":"f.txt","limit":-9223372036854775808}`, "Error executing read_file: offset and limit must not be negative"},
		"depth huge":           {"list_dir", `{"depth":1e300}`, "Error executing list_dir: invalid arguments: depth: must be an integer from -9223372036854775808 to 9223372036854775807, not 1e300"},
		"depth 2^63-1":         {"list_dir", `{"depth":9223372036854775807}`, "Error executing list_dir: depth 9223372036854775807 is out of range: use 1 to 5"},
		"depth negative":       {"list_dir", `{"depth":-1}`, "Error executing list_dir: depth -1 is out of range: use 1 to 5"},
		"max_entries huge":     {"list_dir", `{"max_entries":9223372036854775807}`, "f.txt (4 B)\n"},
		"max_entries negative": {"list_dir", `{"max_entries":-3}`, "Error executing list_dir: max_entries -3 is out of range: it must be positive"},
	}
	for name, tc := range tests {
		got := raw(tc.tool, tc.args)
		wantAnswer(t, name, got, tc.want)
		noGoText(t, name, got)
	}
}

// Names with control characters are printed quoted, so they cannot forge
// lines of an answer.
func TestNamesEscaped(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	forged := "x\nfake.txt (1 B)"
	ansi := "\x1b[31mred"
	mustWrite(t, filepath.Join(root, forged), "a\n")
	mustWrite(t, filepath.Join(root, ansi), "b\n")
	mustSymlink(t, "tar\nget", filepath.Join(root, "link"))
	p := startPlugin(t, []string{root})
	wantAnswer(t, "list_dir", p.call("list_dir", nil),
		`"\x1b[31mred" (2 B)`+"\n"+`link -> "tar\nget"`+"\n"+`"x\nfake.txt (1 B)" (2 B)`+"\n")
	wantAnswer(t, "write_file", p.call("write_file", map[string]any{"path": "n\r.txt", "content": ""}), `Wrote 0 bytes to "n\r.txt"`)
	if got := p.call("edit_file", map[string]any{"path": forged, "old_string": "a", "new_string": "b"}); !strings.HasPrefix(got, `Edited "x\nfake.txt (1 B)": 1 replacement`+"\n") {
		t.Errorf("edit_file: %s", got)
	}
	wantAnswer(t, "move", p.call("move", map[string]any{"source": ansi, "destination": "plain"}), `Moved "\x1b[31mred" to plain`)
	wantAnswer(t, "remove", p.call("remove", map[string]any{"path": forged}), `Removed file "x\nfake.txt (1 B)"`)
	wantAnswer(t, "a missing file", p.call("read_file", map[string]any{"path": "no\nsuch"}), `Error executing read_file: file not found: "no\nsuch"`)
}

// Errors say what was wrong in the tool's words, with the path as given,
// never Go's operation names.
func TestErrorWords(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustSymlink(t, "loopb", filepath.Join(root, "loopa"))
	mustSymlink(t, "loopa", filepath.Join(root, "loopb"))
	mustWrite(t, filepath.Join(root, "file"), "x")
	ro := mountTmpfs(t, "size=1m,ro")
	full := mountTmpfs(t, "size=64k")
	p := startPlugin(t, []string{root, ro, full})
	big := strings.Repeat("x", 256<<10)
	tests := map[string]struct {
		tool string
		args map[string]any
		want string
	}{
		"loop read":           {"read_file", map[string]any{"path": "loopa"}, "loopa: too many levels of symbolic links"},
		"loop write":          {"write_file", map[string]any{"path": "loopa/x", "content": "x"}, "loopa/x: too many levels of symbolic links"},
		"loop list":           {"list_dir", map[string]any{"path": "loopa"}, "loopa: too many levels of symbolic links"},
		"loop edit":           {"edit_file", map[string]any{"path": "loopa", "old_string": "a", "new_string": "b"}, "loopa: too many levels of symbolic links"},
		"loop mkdir":          {"mkdir", map[string]any{"path": "loopa/d"}, "loopa/d: too many levels of symbolic links"},
		"not a directory":     {"write_file", map[string]any{"path": "file/x", "content": "x"}, "file/x: not a directory"},
		"not a dir, read":     {"read_file", map[string]any{"path": "file/x"}, "file/x: not a directory"},
		"name too long":       {"mkdir", map[string]any{"path": strings.Repeat("d", 300)}, strings.Repeat("d", 300) + ": file name too long (a name has at most 255 bytes)"},
		"read-only":           {"write_file", map[string]any{"path": filepath.Join(ro, "f"), "content": "x"}, filepath.Join(ro, "f") + ": read-only file system"},
		"read-only mkdir":     {"mkdir", map[string]any{"path": filepath.Join(ro, "d")}, filepath.Join(ro, "d") + ": read-only file system"},
		"no space":            {"write_file", map[string]any{"path": filepath.Join(full, "a/b/f"), "content": big}, filepath.Join(full, "a/b/f") + ": no space left on the device"},
		"is a directory":      {"write_file", map[string]any{"path": ".", "content": "x"}, ". names a directory: give the file's name"},
		"root is a directory": {"write_file", map[string]any{"path": root, "content": "x"}, root + ": is a directory"},
		"move to ro":          {"move", map[string]any{"source": "file", "destination": filepath.Join(ro, "f")}, filepath.Join(ro, "f") + ": read-only file system"},
		"move no space":       {"write_file", map[string]any{"path": "big", "content": big}, ""},
	}
	for name, tc := range tests {
		got := p.call(tc.tool, tc.args)
		if tc.want != "" {
			wantAnswer(t, name, got, "Error executing "+tc.tool+": "+tc.want)
		}
		noGoText(t, name, got)
	}
	got := p.call("move", map[string]any{"source": "big", "destination": filepath.Join(full, "big")})
	wantAnswer(t, "move across file systems onto a full one", got, "Error executing move: "+filepath.Join(full, "big")+": no space left on the device")
	checkFiles(t, root, map[string]string{"big": big})
	// A failed write leaves none of the directories it created.
	checkFiles(t, full, map[string]string{"a": "", "big": ""})
	checkNoTemp(t, full)
}

// pluginPID finds the process of the fs plugin binary that startPlugin
// installed for this test: a child of this process.
func pluginPID(t *testing.T, p *fsPlugin) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == p.binary {
			return pid
		}
	}
	t.Fatalf("no process runs %s", p.binary)
	return 0
}

// A plugin killed mid-write leaves its temporary file; the next write in
// that directory, once the file is old, removes it, and never a user's
// file that only looks alike.
func TestSweepAfterKill(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("needs /proc to find the plugin process")
	}
	root := t.TempDir()
	p := startPlugin(t, []string{root})
	old := time.Now().Add(-2 * atomicfile.StaleAge)
	users := []string{".x.tmp-foo", ".big.bin.tmp-1a2b3c", ".agenthost-notes.tmp", ".agenthost-0000000-1-1-abcdefgh.tmp"}
	for _, name := range users {
		mustWrite(t, filepath.Join(root, name), "mine")
		os.Chtimes(filepath.Join(root, name), old, old)
	}
	content := strings.Repeat("0123456789abcdef", 1<<19) // 8 MiB
	var left string
	attempt := 0
	for ; attempt < 10 && left == ""; attempt++ {
		pid := pluginPID(t, p)
		done := make(chan string, 1)
		go func() { done <- p.call("write_file", map[string]any{"path": "big.bin", "content": content}) }()
	poll:
		for {
			select {
			case <-done:
				break poll // the write won the race: again
			default:
			}
			entries, _ := os.ReadDir(root)
			for _, e := range entries {
				if atomicfile.IsTempName(e.Name()) {
					syscall.Kill(pid, syscall.SIGKILL)
					left = e.Name()
					<-done
					break poll
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		os.Remove(filepath.Join(root, "big.bin"))
	}
	if left == "" {
		t.Skip("the plugin finished every write before it could be killed")
	}
	t.Logf("killed the plugin mid-write at attempt %d", attempt)
	if _, err := os.Lstat(filepath.Join(root, left)); err != nil {
		t.Fatalf("the killed write's temporary file %s: %v", left, err)
	}
	if got := p.call("write_file", map[string]any{"path": "small.txt", "content": "x"}); got != "Wrote 1 bytes to small.txt" {
		t.Fatalf("write_file after the kill: %s", got)
	}
	if _, err := os.Lstat(filepath.Join(root, left)); err != nil {
		t.Fatalf("a recent leftover was swept: %v", err)
	}
	// Later: the leftover is old. A new plugin process sweeps it.
	if err := os.Chtimes(filepath.Join(root, left), old, old); err != nil {
		t.Fatal(err)
	}
	q := startPlugin(t, []string{root})
	if got := q.call("write_file", map[string]any{"path": "small.txt", "content": "y"}); got != "Wrote 1 bytes to small.txt" {
		t.Fatalf("write_file: %s", got)
	}
	if _, err := os.Lstat(filepath.Join(root, left)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leftover %s of the killed plugin is still there (%v)", left, err)
	}
	for _, name := range users {
		if got := readString(t, filepath.Join(root, name)); got != "mine" {
			t.Errorf("the user's %s holds %q", name, got)
		}
	}
}

// A move across file systems that runs out of time reports failure and
// changed nothing; one that reports success moved everything. A move or
// a write never commits within atomicfile.CommitMargin of its deadline,
// so its answer reaches the host in time.
func TestMoveTimeout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	other := mountTmpfs(t, "size=64m")
	big := strings.Repeat("0123456789abcdef", 1<<20) // 16 MiB
	p := startPlugin(t, []string{root, other})
	tooLittle := "too little time is left before the call's deadline to finish safely"
	for i, timeout := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond, 300 * time.Millisecond, time.Minute} {
		name := "big" + strconv.Itoa(i)
		mustWrite(t, filepath.Join(root, name, "data.bin"), big)
		mustWrite(t, filepath.Join(root, name, "small.txt"), "s")
		if err := p.reg.SetTimeout("move", timeout); err != nil {
			t.Fatal(err)
		}
		got := p.call("move", map[string]any{"source": name, "destination": filepath.Join(other, name)})
		t.Logf("deadline %v: %s", timeout, got)
		if timeout == time.Minute {
			wantAnswer(t, "move with a minute to go", got, "Moved "+name+" to "+name)
			checkFiles(t, other, map[string]string{name + "/data.bin": big, name + "/small.txt": "s"})
			checkFiles(t, root, map[string]string{name: ""})
			continue
		}
		if got != "Error executing move: timed out after "+timeout.String() && got != "Error executing move: cannot move "+name+" to "+filepath.Join(other, name)+": "+tooLittle+", so nothing was moved; give the call more time" {
			t.Errorf("move with a %v deadline: %s", timeout, got)
		}
		// The plugin stops at its next check and removes its copy.
		poll.Eventually(t, 10*time.Second, "the partial copy is gone from "+other, func() error {
			entries, _ := os.ReadDir(other)
			for _, e := range entries {
				if atomicfile.IsTempName(e.Name()) {
					return fmt.Errorf("%s is still there", e.Name())
				}
			}
			return nil
		})
		checkFiles(t, root, map[string]string{name + "/data.bin": big, name + "/small.txt": "s"})
		checkFiles(t, other, map[string]string{name: ""})
	}
	if err := p.reg.SetTimeout("write_file", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, "write_file close to its deadline", p.call("write_file", map[string]any{"path": "w.txt", "content": "w"}),
		"Error executing write_file: w.txt: "+tooLittle+", so nothing was written; give the call more time")
	checkFiles(t, root, map[string]string{"w.txt": ""})
	checkNoTemp(t, root)
}

// straced starts the fs plugin under strace, logging the calls that make
// a write durable, and returns the plugin and the log's path. It skips
// where strace cannot run.
func straced(t *testing.T, roots []string) (*fsPlugin, string) {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	if err := exec.Command(strace, "-o", "/dev/null", "true").Run(); err != nil {
		t.Skipf("strace cannot trace here: %v", err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "trace.log")
	real := plugintest.Binary(t, "./plugins/fs")
	script := "#!/bin/sh\nexec " + strace + " -f -qq -y -o " + log + " -e trace=fsync,fdatasync,rename,renameat,renameat2,unlinkat,linkat " + real + "\n"
	pdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(pdir, "agenthost-plugin-fs"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The wrapper runs strace, which runs the plugin binary where it was
	// built: outside the sandbox, which forbids ptrace.
	return startPluginMode(t, pdir, roots, nil, host.SandboxOff), log
}

// Durability: a write syncs the new file before the rename and the
// directory after it; a move across file systems syncs the copy, renames
// it into place and syncs that directory before it removes the source.
func TestDurabilityOrder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	other := mountTmpfs(t, "size=1m")
	mustWrite(t, filepath.Join(root, "src.txt"), "s")
	p, log := straced(t, []string{root, other})
	wantAnswer(t, "write_file", p.call("write_file", map[string]any{"path": "w.txt", "content": "w"}), "Wrote 1 bytes to w.txt")
	wantAnswer(t, "move", p.call("move", map[string]any{"source": "src.txt", "destination": filepath.Join(other, "m.txt")}), "Moved src.txt to m.txt")
	p.reg.Close()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	trace := string(data)
	// order finds each pattern after the previous one.
	order := func(what string, patterns ...string) {
		t.Helper()
		at := 0
		for _, pat := range patterns {
			re := regexp.MustCompile(pat)
			loc := re.FindStringIndex(trace[at:])
			if loc == nil {
				t.Errorf("%s: no %q after offset %d in the trace:\n%s", what, pat, at, trace)
				return
			}
			at += loc[1]
		}
	}
	tmp := `\.agenthost-[0-9a-f]{8}-\d+-\d+-[0-9a-z]{8}`
	order("write_file",
		`fsync\(\d+<`+regexp.QuoteMeta(root)+`/`+tmp+`\.tmp>\) = 0`,
		`rename\w*\(.*`+tmp+`\.tmp", .*"w\.txt"`,
		`fsync\(\d+<`+regexp.QuoteMeta(root)+`>\) = 0`)
	order("move",
		`fsync\(\d+<`+regexp.QuoteMeta(other)+`/`+tmp+`\.move>\) = 0`,
		`fsync\(\d+<`+regexp.QuoteMeta(other)+`>\) = 0`,
		`rename\w*\(.*`+tmp+`\.move", .*"m\.txt"`,
		`fsync\(\d+<`+regexp.QuoteMeta(other)+`>\) = 0`,
		`unlinkat\(\d+<`+regexp.QuoteMeta(root)+`>, "src\.txt"`)
}

// A root given through a symbolic link holds its real path too.
func TestSymlinkedRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	mustWrite(t, filepath.Join(real, "f.txt"), "f")
	mustSymlink(t, real, link)
	p := startPlugin(t, []string{link})
	wantAnswer(t, "read through the link path", p.call("read_file", map[string]any{"path": filepath.Join(link, "f.txt")}), "f")
	wantAnswer(t, "read through the real path", p.call("read_file", map[string]any{"path": filepath.Join(real, "f.txt")}), "f")
	wantAnswer(t, "write through the real path", p.call("write_file", map[string]any{"path": filepath.Join(real, "g.txt"), "content": "g"}), "Wrote 1 bytes to g.txt")
	wantAnswer(t, "a sibling of the real path", p.call("read_file", map[string]any{"path": real + "x/f.txt"}),
		`Error executing read_file: path "`+real+`x/f.txt" is outside the workspace roots`)
	wantAnswer(t, "remove the real path", p.call("remove", map[string]any{"path": real}), "Error executing remove: refusing to remove the workspace root "+real)
}
