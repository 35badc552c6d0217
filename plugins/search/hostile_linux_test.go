package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// These tests run the search tools in a real plugin process, against
// trees and files that once hung a call, leaked descriptors or threads
// in a long-lived plugin, or took all its memory.

// mkfifo makes FIFOs at the given paths below root, skipping the test
// where it cannot.
func mkfifo(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, name := range names {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
}

// TestPluginFIFOIgnoreFiles: ignore files that are FIFOs, at the start of
// a search and in the directories above it, are passed by at once, and a
// long-lived plugin keeps no descriptor or thread from them.
func TestPluginFIFOIgnoreFiles(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"sub/a.txt": "needle\n", "sub/deeper/b.txt": "needle\n"})
	mkfifo(t, root, ".gitignore", ".ignore", ".git/info/exclude",
		"sub/.gitignore", "sub/.ignore", "sub/.git/info/exclude", "sub/deeper/.gitignore")
	p := startPlugin(t, root)

	calls := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_text", map[string]any{"query": "needle", "paths": []string{"sub"}}, lines("sub/a.txt:1:needle", "sub/deeper/b.txt:1:needle")},
		{"search_text", map[string]any{"query": "needle", "paths": []string{"sub/deeper"}}, "sub/deeper/b.txt:1:needle"},
		{"search_text", map[string]any{"query": "needle"}, lines("sub/a.txt:1:needle", "sub/deeper/b.txt:1:needle")},
		{"search_files", map[string]any{"pattern": "**/*.txt", "path": "sub"}, lines("sub/a.txt", "sub/deeper/b.txt")},
		{"search_files", map[string]any{"pattern": "deeper/*.txt", "path": "sub"}, "sub/deeper/b.txt"},
	}
	run := func() {
		for _, c := range calls {
			if got := p.call(c.tool, c.args); got != c.want {
				t.Fatalf("%s(%v) = %q, want %q", c.tool, c.args, got, c.want)
			}
		}
	}
	run() // the plugin's first calls start what it keeps
	before := p.usage()
	for range 10 {
		run()
	}
	after := p.usage()
	if after.fds > before.fds || after.threads > before.threads+2 {
		t.Errorf("after %d more calls the plugin holds %v; before, %v", 10*len(calls), after, before)
	}
}

// TestPluginLargeFilesSkippedFromSize: files larger than the limit are
// skipped from their size, without reading them into memory.
func TestPluginLargeFilesSkippedFromSize(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"small.txt": "needle small\n"})
	for i := range 3 {
		path := filepath.Join(root, fmt.Sprintf("big%d.txt", i))
		if err := os.WriteFile(path, []byte("needle big\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Sparse: no disk used.
		if err := os.Truncate(path, maxFileSize+1<<20); err != nil {
			t.Skipf("truncate: %v", err)
		}
	}
	p := startPlugin(t, root)
	if got, want := p.call("search_text", map[string]any{"query": "needle"}), lines("small.txt:1:needle small", "(3 files larger than 256 MiB skipped)"); got != want {
		t.Errorf("search_text = %q, want %q", got, want)
	}
	if got, want := p.call("search_text", map[string]any{"query": "needle", "paths": []string{"big0.txt"}}), lines(`No matches for "needle" in big0.txt`, "(1 files larger than 256 MiB skipped)"); got != want {
		t.Errorf("search_text of a large file = %q, want %q", got, want)
	}
	// Reading them would have taken 256 MiB each.
	if u := p.usage(); u.peakKB > 100<<10 {
		t.Errorf("the plugin holds %v after skipping large files", u)
	}
}

// TestPluginKernelFileSystems: a walk does not descend into /proc or /sys
// from outside them, and says so; a search that starts there searches
// them, without blocking, without keeping descriptors and within bounded
// memory.
func TestPluginKernelFileSystems(t *testing.T) {
	t.Parallel()
	if !kernelFileSystems[fileSystemOf(currentMounts(), "/proc")] {
		t.Skip("no proc file system at /proc")
	}
	p := startPlugin(t, "/")
	got := p.call("search_files", map[string]any{"pattern": "*/cpuinfo", "path": "/"})
	if strings.Contains(got, "cpuinfo") && !strings.HasPrefix(got, "No files") {
		t.Errorf("search_files from / descended into /proc:\n%s", got)
	}
	if !strings.Contains(got, "(kernel file systems not searched: ") || !strings.Contains(got, "proc") {
		t.Errorf("search_files from / does not say it left /proc out:\n%s", got)
	}
	if got := p.call("search_files", map[string]any{"pattern": "cpuinfo", "path": "/proc"}); got != "proc/cpuinfo" {
		t.Errorf("search_files in /proc = %q, want proc/cpuinfo", got)
	}

	query := "no such text " + strings.Repeat("z", 3)
	want := fmt.Sprintf("No matches for %q in proc/self", query)
	p.call("search_text", map[string]any{"query": query, "paths": []string{"/proc/self"}})
	before := p.usage()
	for range 2 {
		got := p.call("search_text", map[string]any{"query": query, "paths": []string{"/proc/self"}})
		if !strings.HasPrefix(got, want) {
			t.Fatalf("search_text in /proc/self = %q, want %q and notes", got, want)
		}
	}
	after := p.usage()
	if after.fds > before.fds {
		t.Errorf("after 2 searches of /proc/self the plugin holds %v; before, %v", after, before)
	}
	if after.peakKB > 200<<10 {
		t.Errorf("searching /proc/self took the plugin to %v", after)
	}
}
