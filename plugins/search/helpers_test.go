package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

// writeTree creates files (slash-separated path → content) under a new
// temporary directory and returns the directory. A content starting with
// "-> " makes a symbolic link to the rest; a path ending in "/" makes an
// empty directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// callIn runs tool in-process with the workspace roots and args.
func callIn(ctx context.Context, t testing.TB, tool sdk.Tool, roots []string, args map[string]any) (string, error) {
	t.Helper()
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Execute(sdk.WithRoots(ctx, roots), data)
}

// mustCall is callIn with one root, failing the test on an error.
func mustCall(t testing.TB, tool sdk.Tool, root string, args map[string]any) string {
	t.Helper()
	out, err := callIn(t.Context(), t, tool, []string{root}, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool.Name(), args, err)
	}
	return out
}

// callErr is callIn with one root, failing the test unless it errs.
func callErr(t testing.TB, tool sdk.Tool, root string, args map[string]any) error {
	t.Helper()
	out, err := callIn(t.Context(), t, tool, []string{root}, args)
	if err == nil {
		t.Fatalf("%s(%v) = %q, want an error", tool.Name(), args, out)
	}
	return err
}

func lines(s ...string) string { return strings.Join(s, "\n") }

// lookFd finds fd, which Debian installs as fdfind.
func lookFd() string {
	for _, name := range []string{"fd", "fdfind"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// parseRegexp parses expr with the matcher's flags, case-folded when fold.
func parseRegexp(t testing.TB, expr string, fold bool) *syntax.Regexp {
	t.Helper()
	flags := syntax.Perl
	if fold {
		flags |= syntax.FoldCase
	}
	re, err := syntax.Parse(expr, flags)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
