package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk"
)

// call runs tool in-process with args built from fields.
func call(t *testing.T, tool sdk.Tool, fields map[string]any) (string, error) {
	t.Helper()
	args, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Execute(t.Context(), args)
}

// writeTestFile creates a file in a new temporary directory.
func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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
			path := writeTestFile(t, "f.txt", tc.content)
			args := map[string]any{"path": path}
			for k, v := range tc.args {
				args[k] = v
			}
			got, err := call(t, readFile, args)
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
			got, err := call(t, readFile, tc.args)
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
		_, err := call(t, readFile, map[string]any{"path": missing})
		if err == nil || err.Error() != "file not found: "+missing {
			t.Errorf("read_file of a missing file: error %v, want exactly %q", err, "file not found: "+missing)
		}
	})
}

func TestReadFileBinaryAsText(t *testing.T) {
	t.Parallel()
	path := writeTestFile(t, "image.png", "\x89PNG\r\n\x1a\n\x00\xff\xfe")
	got, err := call(t, readFile, map[string]any{"path": path})
	if err == nil && !utf8.ValidString(got) {
		t.Errorf("read_file of a binary file = %q: not valid UTF-8 and no error", got)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()

	t.Run("creates the file and its parent directories", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "a", "b", "new.txt")
		got, err := call(t, writeFile, map[string]any{"path": path, "content": "hello\n"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 6 bytes to " + path; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "hello\n", 0o644)
	})

	t.Run("counts bytes, not characters", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "utf8.txt")
		got, err := call(t, writeFile, map[string]any{"path": path, "content": "héllo"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 6 bytes to " + path; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
	})

	t.Run("overwrites and keeps the mode", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "run.sh")
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho a long old script\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		got, err := call(t, writeFile, map[string]any{"path": path, "content": "new"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 3 bytes to " + path; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "new", 0o750)
	})

	t.Run("empty content", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "empty.txt")
		got, err := call(t, writeFile, map[string]any{"path": path, "content": ""})
		if err != nil {
			t.Fatal(err)
		}
		if want := "Wrote 0 bytes to " + path; got != want {
			t.Errorf("write_file = %q, want %q", got, want)
		}
		assertFile(t, path, "", 0o644)
	})

	t.Run("what it writes read_file reads", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "round.txt")
		const content = "one\ntwo\nthree"
		if _, err := call(t, writeFile, map[string]any{"path": path, "content": content}); err != nil {
			t.Fatal(err)
		}
		got, err := call(t, readFile, map[string]any{"path": path, "offset": 2})
		if err != nil || got != "two\nthree" {
			t.Errorf("read_file after write_file = %q, %v; want %q", got, err, "two\nthree")
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
	tests := map[string]struct {
		args map[string]any
		want string // a substring of the error
	}{
		"empty path":          {map[string]any{"path": "", "content": "x"}, "path is empty"},
		"no path":             {map[string]any{"content": "x"}, "invalid arguments"},
		"no content":          {map[string]any{"path": filepath.Join(dir, "n.txt")}, "invalid arguments"},
		"content not string":  {map[string]any{"path": filepath.Join(dir, "n.txt"), "content": 5}, "invalid arguments"},
		"path is a directory": {map[string]any{"path": dir, "content": "x"}, "is a directory"},
		"parent is a file":    {map[string]any{"path": filepath.Join(blocker, "child.txt"), "content": "x"}, blocker},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, writeFile, tc.args)
			if err == nil {
				t.Fatalf("write_file(%v) = %q, want an error", tc.args, got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("write_file(%v) error %q does not contain %q", tc.args, err, tc.want)
			}
		})
	}
	if data, err := os.ReadFile(blocker); err != nil || string(data) != "x" {
		t.Errorf("the file in the way changed: %q, %v", data, err)
	}
}

func TestFSToolSchemas(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool     sdk.Tool
		required []string
		ann      sdk.Annotations
	}{
		"read_file":  {readFile, []string{"path"}, sdk.Annotations{ReadOnly: true, Idempotent: true}},
		"write_file": {writeFile, []string{"path", "content"}, sdk.Annotations{Destructive: true, Idempotent: true}},
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
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(s.Function.Parameters, &params); err != nil {
				t.Fatal(err)
			}
			if strings.Join(params.Required, ",") != strings.Join(tc.required, ",") {
				t.Errorf("required = %v, want %v", params.Required, tc.required)
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
