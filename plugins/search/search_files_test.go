package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	tree := map[string]string{
		"main.go":           "",
		"go.mod":            "",
		"cmd/tool/main.go":  "",
		"internal/a/a.go":   "",
		"internal/a/a.txt":  "",
		"internal/b/b.go":   "",
		"docs/a.txt":        "",
		"docs/b.txt":        "",
		"docs/c.md":         "",
		".github/ci.yml":    "",
		".git/config":       "",
		".env":              "",
		"sub/.hidden/x.go":  "",
		"vendor/x/x.go":     "",
		".gitignore":        "vendor/\n*.tmp\n",
		"scratch.tmp":       "",
		"empty/":            "",
		"a-b/c.go":          "",
		"a/c.go":            "",
		"link-to-docs":      "-> docs",
		"docs/link-to-root": "-> ..",
	}
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"all go files": {
			map[string]any{"pattern": "**/*.go"},
			lines("a/c.go", "a-b/c.go", "cmd/tool/main.go", "internal/a/a.go", "internal/b/b.go", "main.go"),
		},
		"top level only": {
			map[string]any{"pattern": "*.go"},
			"main.go",
		},
		"alternatives": {
			map[string]any{"pattern": "{docs,internal/a}/*.txt"},
			lines("docs/a.txt", "docs/b.txt", "internal/a/a.txt"),
		},
		"a fixed prefix": {
			map[string]any{"pattern": "internal/**/*.go"},
			lines("internal/a/a.go", "internal/b/b.go"),
		},
		"directories are marked": {
			map[string]any{"pattern": "internal/*"},
			lines("internal/a/", "internal/b/"),
		},
		"links are listed, not followed": {
			map[string]any{"pattern": "**/link-*"},
			lines("docs/link-to-root", "link-to-docs"),
		},
		"everything": {
			map[string]any{"pattern": "**"},
			lines("a/", "a/c.go", "a-b/", "a-b/c.go", "cmd/", "cmd/tool/", "cmd/tool/main.go",
				"docs/", "docs/a.txt", "docs/b.txt", "docs/c.md", "docs/link-to-root",
				"empty/", "go.mod", "internal/", "internal/a/", "internal/a/a.go", "internal/a/a.txt",
				"internal/b/", "internal/b/b.go", "link-to-docs", "main.go", "sub/"),
		},
		"hidden on request": {
			map[string]any{"pattern": "**/*.{go,yml}", "include_hidden": true},
			lines(".github/ci.yml", "a/c.go", "a-b/c.go", "cmd/tool/main.go", "internal/a/a.go", "internal/b/b.go", "main.go", "sub/.hidden/x.go"),
		},
		"a pattern naming a hidden directory": {
			map[string]any{"pattern": ".github/*"},
			".github/ci.yml",
		},
		"a pattern naming hidden files": {
			map[string]any{"pattern": "**/.*"},
			lines(".env", ".github/", ".gitignore", "sub/.hidden/"),
		},
		"in a directory": {
			map[string]any{"pattern": "*.txt", "path": "docs"},
			lines("docs/a.txt", "docs/b.txt"),
		},
		"capped": {
			map[string]any{"pattern": "**/*.go", "max_results": 2},
			lines("a/c.go", "a-b/c.go", "... and 4 more (max_results 2)"),
		},
		"no match": {
			map[string]any{"pattern": "*.rs"},
			`No files matching "*.rs" in ROOT (the pattern matches paths relative to that directory; **/*.rs matches at any depth)`,
		},
		"no match with a directory": {
			map[string]any{"pattern": "nope/**/*.rs", "path": "docs"},
			`No files matching "nope/**/*.rs" in docs`,
		},
		"directories only": {
			map[string]any{"pattern": "**/a/"},
			lines("a/", "internal/a/"),
		},
		"a leading ./": {
			map[string]any{"pattern": "./docs/*.md"},
			"docs/c.md",
		},
	}
	root := writeTree(t, tree)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := mustCall(t, searchFiles, root, tc.args)
			want := strings.ReplaceAll(tc.want, "ROOT", root)
			if got != want {
				t.Errorf("search_files(%v) =\n%s\nwant:\n%s", tc.args, got, want)
			}
		})
	}
}

func TestSearchFilesSymlinkLoops(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"a/b/c.txt":  "",
		"a/b/up":     "-> ../..",
		"a/self":     "-> self",
		"a/loop1":    "-> loop2",
		"a/loop2":    "-> loop1",
		"a/b/to-a":   "-> " + "../../a",
		"a/abs-root": "-> /",
	})
	got := mustCall(t, searchFiles, root, map[string]any{"pattern": "**"})
	want := lines("a/", "a/abs-root", "a/b/", "a/b/c.txt", "a/b/to-a", "a/b/up", "a/loop1", "a/loop2", "a/self")
	if got != want {
		t.Errorf("search_files(**) =\n%s\nwant:\n%s", got, want)
	}
}

func TestSearchFilesErrors(t *testing.T) {
	t.Parallel()
	outside := writeTree(t, map[string]string{"secret.txt": ""})
	root := writeTree(t, map[string]string{"a.txt": "", "out": "-> " + outside})
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"empty pattern":      {map[string]any{"pattern": ""}, "pattern is empty"},
		"absolute pattern":   {map[string]any{"pattern": "/etc/*"}, `pattern "/etc/*" is absolute: the pattern matches paths relative to path, so put the directory in path`},
		"dot-dot pattern":    {map[string]any{"pattern": "../*"}, `pattern "../*" contains "..": put the directory to search in path`},
		"bad pattern":        {map[string]any{"pattern": "[a"}, `invalid glob pattern "[a"`},
		"outside":            {map[string]any{"pattern": "*", "path": outside}, fmt.Sprintf("path %q is outside the workspace roots", outside)},
		"dot-dot path":       {map[string]any{"pattern": "*", "path": ".."}, `path ".." is outside the workspace roots`},
		"link out":           {map[string]any{"pattern": "*", "path": "out"}, `path "out" is outside the workspace roots`},
		"prefix through out": {map[string]any{"pattern": "out/*"}, `path "out" is outside the workspace roots`},
		"a file":             {map[string]any{"pattern": "*", "path": "a.txt"}, "a.txt is not a directory"},
		"missing":            {map[string]any{"pattern": "*", "path": "nope"}, "nope: no such file or directory"},
		"negative max":       {map[string]any{"pattern": "*", "max_results": -2}, "max_results must not be negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := callErr(t, searchFiles, root, tc.args)
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
	got := mustCall(t, searchFiles, root, map[string]any{"pattern": "**/secret.txt"})
	if !strings.HasPrefix(got, "No files matching") {
		t.Errorf("search_files listed a file outside the root: %s", got)
	}
}

func TestSearchFilesCancelled(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a/b.txt": ""})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := callIn(ctx, t, searchFiles, []string{root}, map[string]any{"pattern": "**"})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("search_files with a cancelled context: %v, want an error saying so", err)
	}
}

func TestSearchFilesRelativeToRoot(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"sub/dir/a.go": ""})
	got := mustCall(t, searchFiles, root, map[string]any{"pattern": "**/*.go", "path": filepath.Join(root, "sub")})
	if want := filepath.FromSlash("sub/dir/a.go"); got != want {
		t.Errorf("search_files = %q, want %q (relative to the root)", got, want)
	}
}

// TestGitInfoExclude: a repository's .git/info/exclude excludes like a
// .gitignore in the directory holding .git, below that .gitignore in
// precedence, for a walk from the repository's top and from below it; an
// exclude file reached through a linked .git is not read.
func TestGitInfoExclude(t *testing.T) {
	t.Parallel()
	outside := writeTree(t, map[string]string{"info/exclude": "*\n"})
	root := writeTree(t, map[string]string{
		"repo/.git/info/exclude": "*.log\nbuild/\n",
		"repo/.gitignore":        "!important.log\n",
		"repo/a.txt":             "needle\n",
		"repo/x.log":             "needle\n",
		"repo/important.log":     "",
		"repo/build/out.txt":     "",
		"repo/sub/y.log":         "",
		"repo/sub/z.txt":         "",
		"linked/.git":            "-> " + outside,
		"linked/kept.log":        "",
		"linked/sub/more.log":    "",
	})
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"from the top":      {map[string]any{"pattern": "**/*"}, lines("linked/", "linked/kept.log", "linked/sub/", "linked/sub/more.log", "repo/", "repo/a.txt", "repo/important.log", "repo/sub/", "repo/sub/z.txt")},
		"from the repo":     {map[string]any{"pattern": "**/*", "path": "repo"}, lines("repo/a.txt", "repo/important.log", "repo/sub/", "repo/sub/z.txt")},
		"from below it":     {map[string]any{"pattern": "**/*", "path": "repo/sub"}, "repo/sub/z.txt"},
		"linked .git":       {map[string]any{"pattern": "**/*.log", "path": "linked"}, lines("linked/kept.log", "linked/sub/more.log")},
		"below linked .git": {map[string]any{"pattern": "*.log", "path": "linked/sub"}, "linked/sub/more.log"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := mustCall(t, searchFiles, root, tc.args); got != tc.want {
				t.Errorf("search_files(%v) =\n%s\nwant:\n%s", tc.args, got, tc.want)
			}
		})
	}
	// search_text walks the same way.
	if got := mustCall(t, searchText, root, map[string]any{"query": "needle", "paths": []string{"repo"}}); !strings.Contains(got, "a.txt") || strings.Contains(got, "x.log") {
		t.Errorf("search_text(needle) found a.txt %v, the excluded x.log %v:\n%s", strings.Contains(got, "a.txt"), strings.Contains(got, "x.log"), got)
	}
}

// TestGlobNameFirst: matching a name against the pattern's last segment
// first changes no answer.
func TestGlobNameFirst(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"a.go": "", "b.txt": "", "x.go/": "", "d/c.go": "", "d/e/f.go": "", "d/e/g.md": "", "d/a.go.txt": "",
		"b/a.go": "", "[x]/y.go": "", "d/.h.go": "", "q/a": "", "q/b/a": "", "ab/c": "", "abc": "",
	})
	ws, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, pattern := range []string{"**/*.go", "*.go", "d/**/*.go", "**/a", "q/**/a", "**/*", "*", "**/?.go", "d/*/[f-g].*", "**/**/*.go", "**.go", "a*/**", "**/e/", "d/e/**/f.go", "[[]x]/*.go", "**/.h.go"} {
		for _, hidden := range []bool{false, true} {
			g := newGlobWalk(pattern, hidden)
			run := func(g *globWalk) []foundPath {
				start := &walkStart{ws: ws, rootPath: root, rel: g.prefix, baseRel: g.prefix, arg: "."}
				found, _, _, _, err := g.run(t.Context(), start, 1000)
				if err != nil {
					t.Fatalf("%s: %v", pattern, err)
				}
				return found
			}
			slow := *g
			slow.last = ""
			if got, want := run(g), run(&slow); !slices.Equal(got, want) {
				t.Errorf("%s (hidden %v): name first %v, path only %v", pattern, hidden, got, want)
			}
		}
	}
}
