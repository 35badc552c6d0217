package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/servetest"
)

// TestMCPFileOperations drives the built agenthost mcp over stdio with
// the official client: read_multiple_files, failing only when every file
// fails, and edit_file with a list of edits and a dry run, which leave
// the file as it was when they fail or only preview. Hostile paths are
// among the files: outside the roots, a link out of them, a FIFO and a
// huge file.
func TestMCPFileOperations(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	root, outside := t.TempDir(), t.TempDir()
	const notes = "alpha\nbeta\n"
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "notes.txt"), notes)
	write(filepath.Join(root, "todo.txt"), "one\n")
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge, err := os.Create(filepath.Join(root, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := huge.WriteString(strings.Repeat("0123456789abcdef\n", 1<<15)); err != nil { // 544 KiB of lines
		t.Fatal(err)
	}
	if err := huge.Truncate(8 << 30); err != nil { // then 8 GiB, sparse
		t.Fatal(err)
	}
	huge.Close()

	cs := mcpOverStdio(t, exe, plugins, root)
	secret := filepath.Join(outside, "secret.txt")

	t.Run("read_multiple_files with some files failing", func(t *testing.T) {
		res := servetest.Call(t, cs, "read_multiple_files", map[string]any{"paths": []string{"notes.txt", "missing.txt", secret, "escape", "pipe", "todo.txt"}})
		want := "==> notes.txt <==\nalpha\nbeta\n" +
			"\n==> missing.txt <==\nerror: file not found: missing.txt\n" +
			"\n==> " + secret + " <==\nerror: path \"" + secret + "\" is outside the workspace roots\n" +
			"\n==> escape <==\nerror: path \"escape\" is outside the workspace roots\n" +
			"\n==> pipe <==\nerror: pipe is a fifo, not a regular file\n" +
			"\n==> todo.txt <==\none\n"
		if got := servetest.Text(t, res); res.IsError || got != want {
			t.Errorf("read_multiple_files: isError %v\n%s\nwant:\n%s", res.IsError, got, want)
		}
	})

	t.Run("read_multiple_files with every file failing", func(t *testing.T) {
		res := servetest.Call(t, cs, "read_multiple_files", map[string]any{"paths": []string{"missing.txt", "escape", "pipe"}})
		want := "file not found: missing.txt\npath \"escape\" is outside the workspace roots\npipe is a fifo, not a regular file"
		if got := servetest.Text(t, res); !res.IsError || !strings.Contains(got, want) || strings.Contains(got, "secret\n") {
			t.Errorf("read_multiple_files: isError %v\n%s\nwant an error holding:\n%s", res.IsError, got, want)
		}
	})

	t.Run("read_multiple_files of a huge file", func(t *testing.T) {
		res := servetest.Call(t, cs, "read_multiple_files", map[string]any{"paths": []string{"notes.txt", "huge.txt", "todo.txt"}})
		got := servetest.Text(t, res)
		if res.IsError || !strings.HasPrefix(got, "==> notes.txt <==\nalpha\nbeta\n\n==> huge.txt <==\n0123456789abcdef\n") {
			t.Fatalf("read_multiple_files: isError %v, %.200s", res.IsError, got)
		}
		body, notes, _ := strings.Cut(got, "[Output capped at 256 KiB in all: showed lines 1-")
		if len(body) > 256<<10 {
			t.Errorf("%d bytes of text, over 256 KiB", len(body))
		}
		if !strings.Contains(notes, "of a 8589934592-byte file. To read on, call read_file with path \"huge.txt\" and offset ") ||
			!strings.HasSuffix(notes, "huge.txt was cut short (its note says how to read on). todo.txt was left out: read it with read_file, or with another read_multiple_files call.]\n") {
			t.Errorf("the notes of a cut answer: %s", notes)
		}
	})

	t.Run("edit_file dry run", func(t *testing.T) {
		res := servetest.Call(t, cs, "edit_file", map[string]any{"path": "notes.txt", "dry_run": true,
			"edits": []map[string]any{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "beta", "new_string": "BETA"}}})
		want := "Dry run, nothing was written: 2 edits, 2 replacements would be made in notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-alpha\n+ALPHA\n-beta\n+BETA\n"
		if got := servetest.Text(t, res); res.IsError || got != want {
			t.Errorf("edit_file dry run: isError %v\n%s\nwant:\n%s", res.IsError, got, want)
		}
		checkContent(t, filepath.Join(root, "notes.txt"), notes)
	})

	t.Run("edit_file with a failing second edit", func(t *testing.T) {
		res := servetest.Call(t, cs, "edit_file", map[string]any{"path": "notes.txt",
			"edits": []map[string]any{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "gamma", "new_string": "GAMMA"}}})
		if got := servetest.Text(t, res); !res.IsError || !strings.HasPrefix(got, "Error executing edit_file: edit 2 of 2 failed, so nothing was written (it applies to the text as edit 1 left it): old_string was not found in notes.txt.") {
			t.Errorf("edit_file: isError %v\n%s", res.IsError, got)
		}
		checkContent(t, filepath.Join(root, "notes.txt"), notes)
	})

	t.Run("edit_file with edits", func(t *testing.T) {
		res := servetest.Call(t, cs, "edit_file", map[string]any{"path": "notes.txt",
			"edits": []map[string]any{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA"}}})
		want := "Edited notes.txt: 2 edits, 2 replacements\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-alpha\n-beta\n+ALPHA\n+BETA\n"
		if got := servetest.Text(t, res); res.IsError || got != want {
			t.Errorf("edit_file: isError %v\n%s\nwant:\n%s", res.IsError, got, want)
		}
		checkContent(t, filepath.Join(root, "notes.txt"), "ALPHA\nBETA\n")
	})

	t.Run("edit_file outside the roots", func(t *testing.T) {
		for _, path := range []string{"escape", secret} {
			res := servetest.Call(t, cs, "edit_file", map[string]any{"path": path, "edits": []map[string]any{{"old_string": "secret", "new_string": "leaked"}}})
			if got := servetest.Text(t, res); !res.IsError || got != "Error executing edit_file: path \""+path+"\" is outside the workspace roots" {
				t.Errorf("edit_file %s: isError %v, %s", path, res.IsError, got)
			}
		}
		checkContent(t, secret, "secret\n")
	})
}

// checkContent fails unless the file at path holds want.
func checkContent(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != want {
		t.Errorf("%s holds %q, %v; want %q", path, data, err, want)
	}
}

// mcpOverStdio runs the built binary with agenthost mcp over stdio,
// serving the plugins in plugins in the workspace root, and connects the
// official client to it. When the test ends it closes the session and
// checks that agenthost exited cleanly.
func mcpOverStdio(t *testing.T, exe, plugins, root string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(exe, "mcp", "--plugins", plugins, "--root", root)
	cmd.Env = agenthostEnv()
	stderr := &plugintest.Buffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v\n%s", err, stderr.String())
		}
		if !cmd.ProcessState.Success() {
			t.Errorf("agenthost mcp: %v\n%s", cmd.ProcessState, stderr.String())
		}
	})
	return cs
}
