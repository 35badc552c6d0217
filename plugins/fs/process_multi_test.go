package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// read_multiple_files and edit_file's lists and dry runs, in a real fs
// plugin process, with hostile paths among the files.

func TestReadMultipleFilesInProcess(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(root, "a.txt"), "alpha\n")
	mustWrite(t, filepath.Join(root, "b.txt"), "beta\n")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret\n")
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A huge file, sparse: 4 GiB of which the cap reads 256 KiB.
	huge := filepath.Join(root, "huge.txt")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Repeat("huge line\n", 30000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := startPlugin(t, []string{root})

	got := p.call("read_multiple_files", map[string]any{"paths": []string{"a.txt", "missing.txt", "pipe", "escape", filepath.Join(outside, "secret.txt"), "b.txt"}})
	wantAnswer(t, "read_multiple_files with hostile paths", got,
		"==> a.txt <==\nalpha\n"+
			"\n==> missing.txt <==\nerror: file not found: missing.txt\n"+
			"\n==> pipe <==\nerror: pipe is a fifo, not a regular file\n"+
			"\n==> escape <==\nerror: path \"escape\" is outside the workspace roots\n"+
			"\n==> "+filepath.Join(outside, "secret.txt")+" <==\nerror: path \""+filepath.Join(outside, "secret.txt")+"\" is outside the workspace roots\n"+
			"\n==> b.txt <==\nbeta\n")
	noGoText(t, "read_multiple_files", got)

	got = p.call("read_multiple_files", map[string]any{"paths": []string{"missing.txt", "pipe", "escape"}})
	wantAnswer(t, "read_multiple_files, every file failing", got,
		"Error executing read_multiple_files: file not found: missing.txt\npipe is a fifo, not a regular file\npath \"escape\" is outside the workspace roots")

	got = p.call("read_multiple_files", map[string]any{"paths": []string{"huge.txt", "a.txt"}})
	lines := (maxTextOutput - len("==> huge.txt <==\n")) / len("huge line\n")
	wantLong(t, "read_multiple_files of a huge file", got, "==> huge.txt <==\n"+strings.Repeat("huge line\n", lines)+
		"[Output capped at 256 KiB in all: showed lines 1-"+strconv.Itoa(lines)+" ("+strconv.Itoa(lines*10)+" bytes) of a 4294967296-byte file. To read on, call read_file with path \"huge.txt\" and offset "+strconv.Itoa(lines+1)+".]\n"+
		"\n[Output capped at 256 KiB in all: huge.txt was cut short (its note says how to read on). a.txt was left out: read it with read_file, or with another read_multiple_files call.]\n")
}

func TestEditFileListInProcess(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	const text = "one\ntwo\nthree\n"
	mustWrite(t, filepath.Join(root, "f.txt"), text)
	mustWrite(t, filepath.Join(outside, "secret.txt"), text)
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape"))
	p := startPlugin(t, []string{root})

	wantAnswer(t, "a dry run", p.call("edit_file", map[string]any{"path": "f.txt", "dry_run": true,
		"edits": []map[string]any{{"old_string": "one", "new_string": "1"}, {"old_string": "three", "new_string": "3"}}}),
		"Dry run, nothing was written: 2 edits, 2 replacements would be made in f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\n+1\n two\n-three\n+3\n")
	checkFiles(t, root, map[string]string{"f.txt": text})

	wantAnswer(t, "a failing second edit", p.call("edit_file", map[string]any{"path": "f.txt",
		"edits": []map[string]any{{"old_string": "one", "new_string": "1"}, {"old_string": "Three", "new_string": "3"}}}),
		"Error executing edit_file: edit 2 of 2 failed, so nothing was written (it applies to the text as edit 1 left it): old_string was not found in f.txt. The most similar text is at line 3 (75% alike):\n     3\tthree\n"+
			"Make old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text")
	checkFiles(t, root, map[string]string{"f.txt": text})
	checkNoTemp(t, root)

	wantAnswer(t, "edits written", p.call("edit_file", map[string]any{"path": "f.txt",
		"edits": []map[string]any{{"old_string": "one", "new_string": "1"}, {"old_string": "1\ntwo", "new_string": "1\n2"}}}),
		"Edited f.txt: 2 edits, 2 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\n-two\n+1\n+2\n three\n")
	checkFiles(t, root, map[string]string{"f.txt": "1\n2\nthree\n"})

	for _, path := range []string{"escape", filepath.Join(outside, "secret.txt")} {
		for _, dry := range []bool{true, false} {
			got := p.call("edit_file", map[string]any{"path": path, "dry_run": dry, "edits": []map[string]any{{"old_string": "one", "new_string": "1"}}})
			wantAnswer(t, "edit_file outside the roots", got, "Error executing edit_file: path \""+path+"\" is outside the workspace roots")
		}
	}
	checkFiles(t, outside, map[string]string{"secret.txt": text})
}
