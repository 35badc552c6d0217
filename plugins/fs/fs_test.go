package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk"
)

// run runs tool in-process with the workspace roots given and args built
// from fields.
func run(t *testing.T, roots []string, tool sdk.Tool, fields map[string]any) (string, error) {
	t.Helper()
	args, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Execute(sdk.WithRoots(t.Context(), roots), args)
}

// call runs tool in-process in the one workspace root given.
func call(t *testing.T, root string, tool sdk.Tool, fields map[string]any) (string, error) {
	t.Helper()
	return run(t, []string{root}, tool, fields)
}

// writeTestFile creates a file in a new temporary directory, which it
// returns as the workspace root with the file's path.
func writeTestFile(t *testing.T, name, content string) (root, path string) {
	t.Helper()
	root = t.TempDir()
	path = filepath.Join(root, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, path
}

// mustWrite creates a file and its parent directories.
func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustSymlink creates a symbolic link.
func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// readString returns a file's content.
func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// wantErr fails unless err is exactly want.
func wantErr(t *testing.T, what string, got string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = %q, want the error %q", what, got, want)
		return
	}
	if err.Error() != want {
		t.Errorf("%s error:\n%s\nwant:\n%s", what, err, want)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	const text = "line 1\nline 2\nline 3\nline 4" // the last line has no newline
	tests := map[string]struct {
		content string
		args    map[string]any // "path" is added
		want    string
	}{
		"whole file":               {text, nil, text},
		"utf-8 explicitly":         {text, map[string]any{"encoding": "utf-8"}, text},
		"utf8 spelling":            {text, map[string]any{"encoding": "utf8"}, text},
		"UTF-8 in capitals":        {text, map[string]any{"encoding": "UTF-8"}, text},
		"non-ASCII text":           {"héllo, wörld\n", nil, "héllo, wörld\n"},
		"empty file":               {"", nil, ""},
		"offset":                   {text, map[string]any{"offset": 3}, "line 3\nline 4"},
		"offset 1 is the start":    {text, map[string]any{"offset": 1}, text},
		"offset and limit":         {text, map[string]any{"offset": 2, "limit": 2}, "line 2\nline 3\n"},
		"limit only":               {text, map[string]any{"limit": 1}, "line 1\n"},
		"last line, no newline":    {text, map[string]any{"offset": 4}, "line 4"},
		"limit past the end":       {text, map[string]any{"offset": 3, "limit": 10}, "line 3\nline 4"},
		"trailing newline kept":    {"a\nb\n", map[string]any{"offset": 2}, "b\n"},
		"blank lines count":        {"a\n\n\nd\n", map[string]any{"offset": 2, "limit": 2}, "\n\n"},
		"CRLF lines":               {"a\r\nb\r\n", map[string]any{"offset": 2}, "b\r\n"},
		"base64":                   {"\x00\x01\x02\xff", map[string]any{"encoding": "base64"}, "AAEC/w=="},
		"base64 in capitals":       {"hi", map[string]any{"encoding": "BASE64"}, "aGk="},
		"base64 of an empty file":  {"", map[string]any{"encoding": "base64"}, ""},
		"zero offset means whole":  {text, map[string]any{"offset": 0, "limit": 0}, text},
		"zero offset with a limit": {text, map[string]any{"offset": 0, "limit": 2}, "line 1\nline 2\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, path := writeTestFile(t, "f.txt", tc.content)
			args := map[string]any{"path": path}
			for k, v := range tc.args {
				args[k] = v
			}
			got, err := call(t, root, readFile, args)
			if err != nil {
				t.Fatalf("read_file(%v): %v", tc.args, err)
			}
			if got != tc.want {
				t.Errorf("read_file(%v) = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "four.txt")
	if err := os.WriteFile(file, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.txt")
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		args map[string]any
		want []string // substrings of the error
	}{
		"offset past the end":    {map[string]any{"path": file, "offset": 5}, []string{"offset 5", "4 lines"}},
		"offset in empty file":   {map[string]any{"path": empty, "offset": 1}, []string{"0 lines"}},
		"unsupported encoding":   {map[string]any{"path": file, "encoding": "latin1"}, []string{`"latin1"`, "utf-8", "base64"}},
		"offset with base64":     {map[string]any{"path": file, "encoding": "base64", "offset": 2}, []string{"base64"}},
		"limit with base64":      {map[string]any{"path": file, "encoding": "base64", "limit": 2}, []string{"base64"}},
		"negative offset":        {map[string]any{"path": file, "offset": -1}, []string{"negative"}},
		"negative limit":         {map[string]any{"path": file, "limit": -3}, []string{"negative"}},
		"missing file":           {map[string]any{"path": missing}, []string{"file not found: " + missing}},
		"directory":              {map[string]any{"path": dir}, []string{dir, "is a directory"}},
		"empty path":             {map[string]any{"path": ""}, []string{"path is empty"}},
		"no path":                {map[string]any{}, []string{"invalid arguments", "path"}},
		"unknown argument":       {map[string]any{"path": file, "lines": 3}, []string{"invalid arguments", "lines"}},
		"offset of a wrong type": {map[string]any{"path": file, "offset": "2"}, []string{"invalid arguments", "offset"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, dir, readFile, tc.args)
			if err == nil {
				t.Fatalf("read_file(%v) = %q, want an error", tc.args, got)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("read_file(%v) error %q does not contain %q", tc.args, err, want)
				}
			}
		})
	}

	t.Run("missing file text", func(t *testing.T) {
		t.Parallel()
		_, err := call(t, dir, readFile, map[string]any{"path": missing})
		if err == nil || err.Error() != "file not found: "+missing {
			t.Errorf("read_file of a missing file: error %v, want exactly %q", err, "file not found: "+missing)
		}
	})
}

func TestReadFileBinaryAsText(t *testing.T) {
	t.Parallel()
	root, path := writeTestFile(t, "image.png", "\x89PNG\r\n\x1a\n\x00\xff\xfe")
	got, err := call(t, root, readFile, map[string]any{"path": path})
	if err == nil && !utf8.ValidString(got) {
		t.Errorf("read_file of a binary file = %q: not valid UTF-8 and no error", got)
	}
	wantErr(t, "read_file of a binary file", got, err, path+" is not utf-8 text (11 bytes): read it with encoding base64")
	got, err = call(t, root, readFile, map[string]any{"path": "image.png", "encoding": "base64"})
	if want := "iVBORw0KGgoA//4="; err != nil || got != want {
		t.Errorf("read_file as base64 = %q, %v; want %q", got, err, want)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()

	t.Run("creates the file and its parent directories", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		path := filepath.Join(root, "a", "b", "new.txt")
		got, err := call(t, root, writeFile, map[string]any{"path": path, "content": "hello\n"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 6 bytes to a/b/new.txt"; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "hello\n", 0o644)
	})

	t.Run("a relative path resolves against the root", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		got, err := call(t, root, writeFile, map[string]any{"path": "notes/a.txt", "content": "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 2 bytes to notes/a.txt"; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, filepath.Join(root, "notes", "a.txt"), "hi", 0o644)
	})

	t.Run("counts bytes, not characters", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		got, err := call(t, root, writeFile, map[string]any{"path": filepath.Join(root, "utf8.txt"), "content": "héllo"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 6 bytes to utf8.txt"; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
	})

	t.Run("overwrites and keeps the mode", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		path := filepath.Join(root, "run.sh")
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho a long old script\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		got, err := call(t, root, writeFile, map[string]any{"path": path, "content": "new"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 3 bytes to run.sh"; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "new", 0o750)
	})

	t.Run("empty content", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		path := filepath.Join(root, "empty.txt")
		got, err := call(t, root, writeFile, map[string]any{"path": path, "content": ""})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 0 bytes to empty.txt"; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "", 0o644)
	})

	t.Run("what it writes read_file reads", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		path := filepath.Join(root, "round.txt")
		const content = "one\ntwo\nthree"
		if _, err := call(t, root, writeFile, map[string]any{"path": path, "content": content}); err != nil {
			t.Fatal(err)
		}
		got, err := call(t, root, readFile, map[string]any{"path": path, "offset": 2})
		if err != nil || got != "two\nthree" {
			t.Errorf("read_file after write_file = %q, %v; want %q", got, err, "two\nthree")
		}
	})

	t.Run("writes through a symbolic link inside the root", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		target := filepath.Join(root, "real", "target.txt")
		mustWrite(t, target, "old")
		if err := os.Chmod(target, 0o600); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, "real/target.txt", filepath.Join(root, "rel-link"))
		mustSymlink(t, target, filepath.Join(root, "abs-link"))
		mustSymlink(t, "rel-link", filepath.Join(root, "chain"))
		for _, link := range []string{"rel-link", "abs-link", "chain"} {
			got, err := call(t, root, writeFile, map[string]any{"path": link, "content": "via " + link})
			if want := "Wrote " + fmt.Sprint(len("via "+link)) + " bytes to " + link; err != nil || got != want {
				t.Errorf("write_file(%s) = %q, %v; want %q", link, got, err, want)
			}
			assertFile(t, target, "via "+link, 0o600)
			if info, err := os.Lstat(filepath.Join(root, link)); err != nil || info.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer a symbolic link: %v, %v", link, info, err)
			}
		}
	})

	t.Run("a dangling link inside the root creates its target", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		mustSymlink(t, "sub/dir/later.txt", filepath.Join(root, "later"))
		if _, err := call(t, root, writeFile, map[string]any{"path": "later", "content": "made"}); err != nil {
			t.Fatal(err)
		}
		assertFile(t, filepath.Join(root, "sub", "dir", "later.txt"), "made", 0o644)
	})

	t.Run("a link through a linked directory resolves from the real directory", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		// d -> a/b, and d/f -> ../x: the link's ".." is a/b's parent, a,
		// not the root.
		if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, "a/b", filepath.Join(root, "d"))
		mustSymlink(t, "../x", filepath.Join(root, "a", "b", "f"))
		if _, err := call(t, root, writeFile, map[string]any{"path": "d/f", "content": "x"}); err != nil {
			t.Fatal(err)
		}
		assertFile(t, filepath.Join(root, "a", "x"), "x", 0o644)
		if _, err := os.Lstat(filepath.Join(root, "x")); err == nil {
			t.Error("the link was resolved lexically: x was written at the root")
		}
	})
}

func TestWriteFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "loop-b", filepath.Join(dir, "loop-a"))
	mustSymlink(t, "loop-a", filepath.Join(dir, "loop-b"))
	tests := map[string]struct {
		args map[string]any
		want string // the error
	}{
		"empty path":          {map[string]any{"path": "", "content": "x"}, "path is empty"},
		"no path":             {map[string]any{"content": "x"}, `invalid arguments: required: missing properties: ["path"]`},
		"no content":          {map[string]any{"path": filepath.Join(dir, "n.txt")}, `invalid arguments: required: missing properties: ["content"]`},
		"content not string":  {map[string]any{"path": filepath.Join(dir, "n.txt"), "content": 5}, "invalid arguments: content: type: 5 has type \"integer\", want \"string\""},
		"path is a directory": {map[string]any{"path": dir, "content": "x"}, dir + ": is a directory"},
		"parent is a file":    {map[string]any{"path": filepath.Join(blocker, "child.txt"), "content": "x"}, filepath.Join(blocker, "child.txt") + ": not a directory"},
		"a link loop":         {map[string]any{"path": "loop-a", "content": "x"}, "loop-a: too many levels of symbolic links"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, dir, writeFile, tc.args)
			wantErr(t, fmt.Sprintf("write_file(%v)", tc.args), got, err, tc.want)
		})
	}
	if data, err := os.ReadFile(blocker); err != nil || string(data) != "x" {
		t.Errorf("the file in the way changed: %q, %v", data, err)
	}
}

func TestNoRoots(t *testing.T) {
	t.Parallel()
	for _, tool := range tools {
		got, err := tool.Execute(t.Context(), json.RawMessage(argsFor(tool.Name())))
		wantErr(t, tool.Name()+" without roots", got, err, "the host set no workspace roots")
	}
}

// argsFor returns valid arguments for each tool.
func argsFor(name string) string {
	switch name {
	case "list_dir", "mkdir", "remove", "read_file":
		return `{"path":"x"}`
	case "move":
		return `{"source":"a","destination":"b"}`
	case "edit_file":
		return `{"path":"x","old_string":"a","new_string":"b"}`
	case "file_info", "read_multiple_files":
		return `{"paths":["x"]}`
	}
	return `{"path":"x","content":""}`
}

// tools are the tools main serves.
var tools = []sdk.Tool{readFile, readMultipleFiles, writeFile, listDir, fileInfo, mkdir, remove, move, editFile}

func TestFSToolSchemas(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool     sdk.Tool
		required []string
		ann      sdk.Annotations
	}{
		"read_file":           {readFile, []string{"path"}, sdk.Annotations{ReadOnly: true, Idempotent: true}},
		"read_multiple_files": {readMultipleFiles, []string{"paths"}, sdk.Annotations{ReadOnly: true, Idempotent: true}},
		"write_file":          {writeFile, []string{"path", "content"}, sdk.Annotations{Destructive: true, Idempotent: true}},
		"list_dir":            {listDir, nil, sdk.Annotations{ReadOnly: true, Idempotent: true}},
		"file_info":           {fileInfo, []string{"paths"}, sdk.Annotations{ReadOnly: true, Idempotent: true}},
		"mkdir":               {mkdir, []string{"path"}, sdk.Annotations{Idempotent: true}},
		"remove":              {remove, []string{"path"}, sdk.Annotations{Destructive: true, OptIn: true}},
		"move":                {move, []string{"source", "destination"}, sdk.Annotations{Destructive: true}},
		"edit_file":           {editFile, []string{"path"}, sdk.Annotations{Destructive: true}},
	}
	if len(tests) != len(tools) {
		t.Errorf("%d tools in the table, %d served", len(tests), len(tools))
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := tc.tool.Schema()
			if tc.tool.Name() != name || s.Function.Name != name || s.Type != "function" {
				t.Errorf("Name %q, schema %q/%q; want %q, function", tc.tool.Name(), s.Type, s.Function.Name, name)
			}
			if s.Function.Description == "" {
				t.Error("the description is empty")
			}
			var params struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(s.Function.Parameters, &params); err != nil {
				t.Fatal(err)
			}
			if strings.Join(params.Required, ",") != strings.Join(tc.required, ",") {
				t.Errorf("required = %v, want %v", params.Required, tc.required)
			}
			for prop, schema := range params.Properties {
				if !strings.Contains(string(schema), `"description"`) {
					t.Errorf("property %s has no description: %s", prop, schema)
				}
			}
			if got := sdk.AnnotationsOf(tc.tool); got != tc.ann {
				t.Errorf("annotations = %+v, want %+v", got, tc.ann)
			}
		})
	}
}

func assertFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != content {
		t.Errorf("%s holds %q, want %q", path, data, content)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != perm {
		t.Errorf("%s has mode %v, want %v", path, got, perm)
	}
}
