//go:build unix

package main

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestSearchSkipsFIFOs: a FIFO, or a link to one, would block a reader
// forever; the search passes it by.
func TestSearchSkipsFIFOs(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "x\n", "link": "-> fifo"})
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if got := mustCall(t, searchText, root, map[string]any{"query": "x"}); got != "a.txt:1:x" {
		t.Errorf("search_text = %q, want %q", got, "a.txt:1:x")
	}
	if got := mustCall(t, searchFiles, root, map[string]any{"pattern": "*"}); got != lines("a.txt", "fifo", "link") {
		t.Errorf("search_files = %q, want the three entries", got)
	}
}
