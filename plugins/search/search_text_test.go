package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk"
)

func TestSearchText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 480) + " needle " + strings.Repeat("x", 100)
	tests := map[string]struct {
		files map[string]string
		args  map[string]any
		want  string
	}{
		"literal": {
			map[string]string{"a.txt": "one\ntwo needle\nthree\nneedle needle\n"},
			map[string]any{"query": "needle"},
			lines("a.txt:2:two needle", "a.txt:4:needle needle"),
		},
		"literal with regex characters": {
			map[string]string{"a.txt": "a.b\naxb\n(x)*\n"},
			map[string]any{"query": "a.b"},
			"a.txt:1:a.b",
		},
		"regex": {
			map[string]string{"a.go": "func Foo() {}\nfunc bar()\nvar x = 1\n"},
			map[string]any{"query": `^func [A-Z]\w*\(`, "regex": true},
			"a.go:1:func Foo() {}",
		},
		"regex without a literal": {
			map[string]string{"a.txt": "abc\n123\nx9\n"},
			map[string]any{"query": `\d+`, "regex": true},
			lines("a.txt:2:123", "a.txt:3:x9"),
		},
		"regex that could cross lines": {
			map[string]string{"a.txt": "foo\nbar\nfoo bar\n"},
			map[string]any{"query": `foo\s+bar`, "regex": true},
			"a.txt:3:foo bar",
		},
		"negated class stays in the line": {
			map[string]string{"a.txt": "foo\nbar\nfooxbar\n"},
			map[string]any{"query": `foo[^y]bar`, "regex": true},
			"a.txt:3:fooxbar",
		},
		"dot-all stays in the line": {
			map[string]string{"a.txt": "foo\nbar\nfoo-bar\n"},
			map[string]any{"query": `(?s)foo.bar`, "regex": true},
			"a.txt:3:foo-bar",
		},
		"class with a line break and more": {
			map[string]string{"a.txt": "a\nb\na b\n"},
			map[string]any{"query": `a[\n ]b`, "regex": true},
			"a.txt:3:a b",
		},
		"regex matching empty": {
			map[string]string{"a.txt": "a\n\nb\n"},
			map[string]any{"query": `^$`, "regex": true},
			"a.txt:2:",
		},
		"case-insensitive": {
			map[string]string{"a.txt": "Hello\nHELLO\nhello\nhelo\n"},
			map[string]any{"query": "hello", "case_insensitive": true},
			lines("a.txt:1:Hello", "a.txt:2:HELLO", "a.txt:3:hello"),
		},
		"case-insensitive regex": {
			map[string]string{"a.txt": "Error: x\nerror y\nERR\n"},
			map[string]any{"query": "^error", "regex": true, "case_insensitive": true},
			lines("a.txt:1:Error: x", "a.txt:2:error y"),
		},
		"case-sensitive by default": {
			map[string]string{"a.txt": "Hello\nhello\n"},
			map[string]any{"query": "hello"},
			"a.txt:2:hello",
		},
		"include by name": {
			map[string]string{"a.go": "x\n", "b.txt": "x\n", "sub/c.go": "x\n"},
			map[string]any{"query": "x", "include": "*.go"},
			lines("a.go:1:x", "sub/c.go:1:x"),
		},
		"include with braces": {
			map[string]string{"a.c": "x\n", "a.h": "x\n", "a.cpp": "x\n"},
			map[string]any{"query": "x", "include": "*.{c,h}"},
			lines("a.c:1:x", "a.h:1:x"),
		},
		"include by path": {
			map[string]string{"a.go": "x\n", "sub/c.go": "x\n", "sub/deep/d.go": "x\n", "other/e.go": "x\n"},
			map[string]any{"query": "x", "include": "sub/**/*.go"},
			lines("sub/c.go:1:x", "sub/deep/d.go:1:x"),
		},
		"include relative to the searched directory": {
			map[string]string{"sub/c.go": "x\n", "sub/deep/d.go": "x\n"},
			map[string]any{"query": "x", "include": "deep/*.go", "paths": []string{"sub"}},
			"sub/deep/d.go:1:x",
		},
		"context": {
			map[string]string{"a.txt": "1\n2\n3 x\n4\n5\n6\n7\n8 x\n9 x\n10\n"},
			map[string]any{"query": "x", "context": 1},
			lines("a.txt-2-2", "a.txt:3:3 x", "a.txt-4-4", "--", "a.txt-7-7", "a.txt:8:8 x", "a.txt:9:9 x", "a.txt-10-10"),
		},
		"context at the edges": {
			map[string]string{"a.txt": "x\n2\n3\nx"},
			map[string]any{"query": "x", "context": 5},
			lines("a.txt:1:x", "a.txt-2-2", "a.txt-3-3", "a.txt:4:x"),
		},
		"context between files": {
			map[string]string{"a.txt": "x\n", "b.txt": "x\n"},
			map[string]any{"query": "x", "context": 1},
			lines("a.txt:1:x", "--", "b.txt:1:x"),
		},
		"sorted by path, then line": {
			map[string]string{"b.txt": "x\n", "a/z.txt": "x\n", "a.txt": "1\nx\nx\n", "a-b.txt": "x\n"},
			map[string]any{"query": "x"},
			lines("a/z.txt:1:x", "a-b.txt:1:x", "a.txt:2:x", "a.txt:3:x", "b.txt:1:x"),
		},
		"max_results and the note": {
			map[string]string{"a.txt": "x1\nx2\nx3\n", "b.txt": "x4\nx5\n"},
			map[string]any{"query": "x", "max_results": 2},
			lines("a.txt:1:x1", "a.txt:2:x2", "... 3 more matches not shown (max_results 2)"),
		},
		"max_results across files": {
			map[string]string{"a.txt": "x1\n", "b.txt": "x2\nx3\n", "c.txt": "x4\n"},
			map[string]any{"query": "x", "max_results": 2},
			lines("a.txt:1:x1", "b.txt:1:x2", "... 2 more matches not shown (max_results 2)"),
		},
		"max_results keeps the context after the last match": {
			map[string]string{"a.txt": "x1\n2\nx3\n"},
			map[string]any{"query": "x", "max_results": 1, "context": 3},
			lines("a.txt:1:x1", "a.txt-2-2", "... 1 more matches not shown (max_results 1)"),
		},
		"max_results leaves out the context before a left-out match": {
			map[string]string{"a.txt": "x1\n2\n3\n4\n5\n6\nx7\n"},
			map[string]any{"query": "x", "max_results": 1, "context": 2},
			lines("a.txt:1:x1", "a.txt-2-2", "a.txt-3-3", "... 1 more matches not shown (max_results 1)"),
		},
		"max_results cuts in the second file": {
			map[string]string{"a.txt": "x1\n", "b.txt": "x2\n2\n3\n4\nx5\n"},
			map[string]any{"query": "x", "max_results": 2, "context": 1},
			lines("a.txt:1:x1", "--", "b.txt:1:x2", "b.txt-2-2", "... 1 more matches not shown (max_results 2)"),
		},
		"long lines are cut": {
			map[string]string{"a.txt": long + "\n"},
			map[string]any{"query": "needle"},
			"a.txt:1:" + string([]rune(long)[:500]) + "… [line truncated]",
		},
		"CRLF lines": {
			map[string]string{"a.txt": "x one\r\ny\r\n"},
			map[string]any{"query": "x"},
			"a.txt:1:x one",
		},
		"invalid UTF-8 is replaced": {
			map[string]string{"a.txt": "x \xff\xfe\n"},
			map[string]any{"query": "x"},
			"a.txt:1:x \uFFFD",
		},
		"binary files are skipped": {
			map[string]string{"bin.dat": "x\x00y\n", "a.txt": "x\n"},
			map[string]any{"query": "x"},
			"a.txt:1:x",
		},
		"an explicit binary file is named": {
			map[string]string{"bin.dat": "x\x00y\n"},
			map[string]any{"query": "x", "paths": []string{"bin.dat"}},
			lines(`No matches for "x" in bin.dat`, "(skipped binary file bin.dat)"),
		},
		".git is skipped": {
			map[string]string{".git/config": "x\n", "a.txt": "x\n"},
			map[string]any{"query": "x", "include_hidden": true},
			"a.txt:1:x",
		},
		"hidden files are skipped": {
			map[string]string{".env": "x\n", ".config/a.txt": "x\n", "a.txt": "x\n"},
			map[string]any{"query": "x"},
			"a.txt:1:x",
		},
		"hidden files on request": {
			map[string]string{".env": "x\n", ".config/a.txt": "x\n", "a.txt": "x\n"},
			map[string]any{"query": "x", "include_hidden": true},
			lines(".config/a.txt:1:x", ".env:1:x", "a.txt:1:x"),
		},
		"an explicit hidden directory": {
			map[string]string{".config/a.txt": "x\n"},
			map[string]any{"query": "x", "paths": []string{".config"}},
			".config/a.txt:1:x",
		},
		"gitignore": {
			map[string]string{
				".gitignore":      "*.log\n!keep.log\n/build/\ncache/\n",
				"a.log":           "x\n",
				"keep.log":        "x\n",
				"build/a.txt":     "x\n",
				"sub/build/a.txt": "x\n", // "/build/" is anchored at the root
				"sub/cache/a.txt": "x\n", // "cache/" is not
				"sub/cache.txt":   "x\n",
				"cache":           "x\n", // "cache/" matches directories only
			},
			map[string]any{"query": "x"},
			lines("cache:1:x", "keep.log:1:x", "sub/build/a.txt:1:x", "sub/cache.txt:1:x"),
		},
		"nested gitignore": {
			map[string]string{
				".gitignore":      "*.gen\n",
				"a.gen":           "x\n",
				"sub/.gitignore":  "!*.gen\nlocal.txt\n",
				"sub/b.gen":       "x\n",
				"sub/local.txt":   "x\n",
				"local.txt":       "x\n",
				"sub/deep/c.gen":  "x\n",
				"other/local.txt": "x\n",
			},
			map[string]any{"query": "x"},
			lines("local.txt:1:x", "other/local.txt:1:x", "sub/b.gen:1:x", "sub/deep/c.gen:1:x"),
		},
		"gitignore above the searched directory": {
			map[string]string{".gitignore": "sub/skip.txt\n*.tmp\n", "sub/skip.txt": "x\n", "sub/a.tmp": "x\n", "sub/a.txt": "x\n"},
			map[string]any{"query": "x", "paths": []string{"sub"}},
			"sub/a.txt:1:x",
		},
		".ignore files": {
			map[string]string{".ignore": "*.bak\n", "a.bak": "x\n", "a.txt": "x\n"},
			map[string]any{"query": "x"},
			"a.txt:1:x",
		},
		"an explicit file is searched even when ignored": {
			map[string]string{".gitignore": "*.log\n", "a.log": "x\n"},
			map[string]any{"query": "x", "paths": []string{"a.log"}},
			"a.log:1:x",
		},
		"several paths": {
			map[string]string{"a/x.txt": "x\n", "b/x.txt": "x\n", "c/x.txt": "x\n"},
			map[string]any{"query": "x", "paths": []string{"c", "a/x.txt", "a"}},
			lines("a/x.txt:1:x", "c/x.txt:1:x"),
		},
		"no match": {
			map[string]string{"a.txt": "y\n", "sub/b.txt": "y\n"},
			map[string]any{"query": "x", "paths": []string{"a.txt", "sub"}},
			`No matches for "x" in a.txt, sub`,
		},
		"a symbolic link to a file inside is searched": {
			map[string]string{"a.txt": "x\n", "link.txt": "-> a.txt"},
			map[string]any{"query": "x"},
			lines("a.txt:1:x", "link.txt:1:x"),
		},
		"a symbolic link to a directory is not followed": {
			map[string]string{"d/a.txt": "x\n", "link": "-> d"},
			map[string]any{"query": "x"},
			"d/a.txt:1:x",
		},
		"a symbolic link loop": {
			map[string]string{"a.txt": "x\n", "loop": "-> .", "self": "-> self"},
			map[string]any{"query": "x"},
			"a.txt:1:x",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, tc.files)
			got := mustCall(t, searchText, root, tc.args)
			if got != tc.want {
				t.Errorf("search_text(%v) =\n%s\nwant:\n%s", tc.args, got, tc.want)
			}
		})
	}
}

func TestSearchTextRootDisplay(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "y\n", "sub/a.txt": "x\n"})
	got := mustCall(t, searchText, root, map[string]any{"query": "nothing"})
	if want := fmt.Sprintf("No matches for %q in %s", "nothing", root); got != want {
		t.Errorf("search_text in the root = %q, want %q", got, want)
	}
	abs := filepath.Join(root, "sub")
	got = mustCall(t, searchText, root, map[string]any{"query": "x", "paths": []string{abs}})
	if want := "sub/a.txt:1:x"; got != filepath.FromSlash(want) {
		t.Errorf("search_text(%s) = %q, want %q (relative to the root)", abs, got, want)
	}
}

func TestSearchTextSecondRoot(t *testing.T) {
	t.Parallel()
	first := writeTree(t, map[string]string{"a.txt": "x first\n"})
	second := writeTree(t, map[string]string{"b.txt": "x second\n"})
	got, err := callIn(t.Context(), t, searchText, []string{first, second}, map[string]any{"query": "x", "paths": []string{second}})
	if err != nil {
		t.Fatal(err)
	}
	if got != "b.txt:1:x second" {
		t.Errorf("search_text in the second root = %q, want %q", got, "b.txt:1:x second")
	}
}

func TestSearchTextCapIsDeterministic(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("d%d/f%02d.txt", i%7, i)] = strings.Repeat("x\n", i%5+1)
	}
	root := writeTree(t, files)
	full := mustCall(t, searchText, root, map[string]any{"query": "x", "max_results": 10000})
	all := strings.Split(full, "\n")
	for _, limit := range []int{1, 7, 33, 100} {
		want := lines(append(all[:limit:limit], fmt.Sprintf("... %d more matches not shown (max_results %d)", len(all)-limit, limit))...)
		for range 5 {
			got := mustCall(t, searchText, root, map[string]any{"query": "x", "max_results": limit})
			if got != want {
				t.Fatalf("max_results %d:\n%s\nwant:\n%s", limit, got, want)
			}
		}
	}
}

func TestSearchTextErrors(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "x\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "out.txt")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args map[string]any
		want string // the exact error
	}{
		"missing paren":       {map[string]any{"query": "a(b", "regex": true}, `invalid regex "a(b": missing closing ): at position 1`},
		"unexpected paren":    {map[string]any{"query": "ab)", "regex": true}, `invalid regex "ab)": unexpected ): at position 2`},
		"escaped paren":       {map[string]any{"query": `\((a`, "regex": true}, `invalid regex "\\((a": missing closing ): at position 2`},
		"invalid escape":      {map[string]any{"query": `ab\q`, "regex": true}, "invalid regex \"ab\\\\q\": invalid escape sequence: `\\q` at position 2"},
		"nested repetition":   {map[string]any{"query": `éa**`, "regex": true}, "invalid regex \"éa**\": invalid nested repetition operator: `**` at position 2"},
		"bad range":           {map[string]any{"query": `x[z-a]`, "regex": true}, "invalid regex \"x[z-a]\": invalid character class range: `z-a` at position 2"},
		"missing bracket":     {map[string]any{"query": `x[ab`, "regex": true}, "invalid regex \"x[ab\": missing closing ]: `[ab` at position 1"},
		"trailing backslash":  {map[string]any{"query": `ab\`, "regex": true}, `invalid regex "ab\\": trailing backslash at end of expression: at position 2`},
		"missing argument":    {map[string]any{"query": `*a`, "regex": true}, "invalid regex \"*a\": missing argument to repetition operator: `*` at position 0"},
		"empty query":         {map[string]any{"query": ""}, "query is empty"},
		"regex line break":    {map[string]any{"query": `foo\nbar`, "regex": true}, `invalid regex "foo\\nbar": a line break (\n) is not allowed: search_text matches one line at a time`},
		"optional line break": {map[string]any{"query": `a\n?b`, "regex": true}, `invalid regex "a\\n?b": a line break (\n) is not allowed: search_text matches one line at a time`},
		"line break by code":  {map[string]any{"query": `a\x0ab`, "regex": true}, `invalid regex "a\\x0ab": a line break (\n) is not allowed: search_text matches one line at a time`},
		"line break class":    {map[string]any{"query": `a[\n]b`, "regex": true}, `invalid regex "a[\\n]b": a line break (\n) is not allowed: search_text matches one line at a time`},
		"line break":          {map[string]any{"query": "a\nb"}, "query contains a line break: search_text matches one line at a time"},
		"negative max":        {map[string]any{"query": "x", "max_results": -1}, "max_results must not be negative"},
		"context too large":   {map[string]any{"query": "x", "context": 51}, "context must be between 0 and 50"},
		"bad include":         {map[string]any{"query": "x", "include": "[a"}, `invalid include glob "[a"`},
		"absolute outside":    {map[string]any{"query": "x", "paths": []string{outside}}, fmt.Sprintf("path %q is outside the workspace roots", outside)},
		"dot-dot":             {map[string]any{"query": "x", "paths": []string{"../x"}}, `path "../x" is outside the workspace roots`},
		"prefix trick":        {map[string]any{"query": "x", "paths": []string{root + "_evil/x"}}, fmt.Sprintf("path %q is outside the workspace roots", root+"_evil/x")},
		"link to a dir out":   {map[string]any{"query": "x", "paths": []string{"out"}}, `path "out" is outside the workspace roots`},
		"link to a file out":  {map[string]any{"query": "x", "paths": []string{"out.txt"}}, `path "out.txt" is outside the workspace roots`},
		"through a link out":  {map[string]any{"query": "x", "paths": []string{"out/secret.txt"}}, `path "out/secret.txt" is outside the workspace roots`},
		"missing path":        {map[string]any{"query": "x", "paths": []string{"nope"}}, "nope: no such file or directory"},
		"unknown argument":    {map[string]any{"query": "x", "path": "a.txt"}, ""},
		"query of wrong type": {map[string]any{"query": 3}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := callErr(t, searchText, root, tc.args)
			if tc.want == "" {
				if !strings.HasPrefix(err.Error(), "invalid arguments") {
					t.Errorf("error %q, want invalid arguments", err)
				}
				return
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestSearchTextDoesNotFollowLinksOut(t *testing.T) {
	t.Parallel()
	outside := writeTree(t, map[string]string{"secret.txt": "needle outside\n", "dir/s.txt": "needle outside\n"})
	root := writeTree(t, map[string]string{
		"a.txt":       "needle inside\n",
		"file-out":    "-> " + filepath.Join(outside, "secret.txt"),
		"dir-out":     "-> " + filepath.Join(outside, "dir"),
		"rel-out":     "-> ../" + filepath.Base(outside) + "/secret.txt",
		"dangling":    "-> " + filepath.Join(outside, "missing.txt"),
		"sub/up":      "-> ..",
		"sub/rel-out": "-> ../../" + filepath.Base(outside) + "/secret.txt",
	})
	for _, args := range []map[string]any{
		{"query": "needle"},
		{"query": "needle", "include_hidden": true},
		{"query": "needle", "paths": []string{"sub"}},
	} {
		got := mustCall(t, searchText, root, args)
		if strings.Contains(got, "outside") {
			t.Errorf("search_text(%v) read outside the root:\n%s", args, got)
		}
	}
	if got := mustCall(t, searchText, root, map[string]any{"query": "needle"}); got != "a.txt:1:needle inside" {
		t.Errorf("search_text = %q, want only a.txt", got)
	}
}

func TestSearchTextCancelled(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "x\n", "d/b.txt": "x\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := callIn(ctx, t, searchText, []string{root}, map[string]any{"query": "x"})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("search_text with a cancelled context: %v, want an error saying so", err)
	}
	_, err = callIn(ctx, t, searchText, []string{root}, map[string]any{"query": "x", "paths": []string{"a.txt"}})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("search_text of a file with a cancelled context: %v, want an error saying so", err)
	}
}

// TestSearchTextDeadline stops a search of Go's source tree midway.
func TestSearchTextDeadline(t *testing.T) {
	t.Parallel()
	tree := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(tree); err != nil {
		t.Skipf("no Go source tree: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer cancel()
	start := time.Now()
	args, _ := json.Marshal(map[string]any{"query": `\w+\s*\(\s*\)\s*error`, "regex": true})
	_, err := searchText.Execute(sdk.WithRoots(ctx, []string{tree}), args)
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("search_text past its deadline: %v, want an error saying so", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("search_text took %v after a 5ms deadline", elapsed)
	}
}

func TestSearchToolSchemas(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool     sdk.Tool
		required []string
		props    []string
	}{
		"search_text":  {searchText, []string{"query"}, []string{"query", "paths", "regex", "case_insensitive", "include", "context", "max_results", "include_hidden"}},
		"search_files": {searchFiles, []string{"pattern"}, []string{"pattern", "path", "max_results", "include_hidden"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := tc.tool.Schema()
			if tc.tool.Name() != name || s.Function.Name != name {
				t.Errorf("name %q, schema name %q; want %q", tc.tool.Name(), s.Function.Name, name)
			}
			var params struct {
				Required   []string       `json:"required"`
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(s.Function.Parameters, &params); err != nil {
				t.Fatal(err)
			}
			if strings.Join(params.Required, ",") != strings.Join(tc.required, ",") {
				t.Errorf("required = %v, want %v", params.Required, tc.required)
			}
			if len(params.Properties) != len(tc.props) {
				t.Errorf("properties = %v, want %v", params.Properties, tc.props)
			}
			for _, p := range tc.props {
				if _, ok := params.Properties[p]; !ok {
					t.Errorf("no property %q", p)
				}
			}
			if got, want := sdk.AnnotationsOf(tc.tool), (sdk.Annotations{ReadOnly: true, Idempotent: true}); got != want {
				t.Errorf("annotations = %+v, want %+v", got, want)
			}
		})
	}
}
