package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/workspace"
)

// TestPluginArgumentsAreChecked: numeric arguments of any size are
// clamped or refused with a message, through the whole call path (none
// overflows), and a regex that needs a line break is refused.
func TestPluginArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "x1\nx2\n", "b.txt": "x3\n"})
	p := startPlugin(t, root)
	all := lines("a.txt:1:x1", "a.txt:2:x2", "b.txt:1:x3")
	tests := map[string]struct {
		tool, args, want string
	}{
		"max int64":            {"search_text", `{"query":"x","max_results":9223372036854775807}`, all},
		"beyond int64":         {"search_text", `{"query":"x","max_results":1e30}`, all},
		"whole float":          {"search_text", `{"query":"x","max_results":2.0}`, lines("a.txt:1:x1", "a.txt:2:x2", "... 1 more matches not shown (max_results 2)")},
		"huge negative":        {"search_text", `{"query":"x","max_results":-1e30}`, "Error executing search_text: max_results must not be negative"},
		"huge context":         {"search_text", `{"query":"x","context":9223372036854775807}`, "Error executing search_text: context must be between 0 and 50"},
		"huge negative ctx":    {"search_text", `{"query":"x","context":-9223372036854775808}`, "Error executing search_text: context must be between 0 and 50"},
		"files max int64":      {"search_files", `{"pattern":"*.txt","max_results":9223372036854775807}`, lines("a.txt", "b.txt")},
		"files beyond int64":   {"search_files", `{"pattern":"*.txt","max_results":1e300}`, lines("a.txt", "b.txt")},
		"files huge negative":  {"search_files", `{"pattern":"*.txt","max_results":-9223372036854775809}`, "Error executing search_files: max_results must not be negative"},
		"files one of several": {"search_files", `{"pattern":"*.txt","max_results":1}`, lines("a.txt", "... and 1 more (max_results 1)")},
		"regex across lines":   {"search_text", `{"query":"x1\\nx2","regex":true}`, `Error executing search_text: invalid regex "x1\\nx2": a line break (\n) is not allowed: search_text matches one line at a time`},
	}
	for name, tc := range tests {
		if got := p.callRaw(tc.tool, tc.args); got != tc.want {
			t.Errorf("%s: %s(%s) = %q, want %q", name, tc.tool, tc.args, got, tc.want)
		}
	}
}

func TestMaxResultsIsCapped(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": strings.Repeat("x\n", maxResults+5)})
	got := mustCall(t, searchText, root, map[string]any{"query": "x", "max_results": 1 << 40})
	if !strings.HasSuffix(got, fmt.Sprintf("\n... 5 more matches not shown (max_results %d)", maxResults)) {
		t.Errorf("search_text with max_results 2^40 ends %q", got[max(0, len(got)-80):])
	}
	if n := strings.Count(got, "\n"); n != maxResults {
		t.Errorf("search_text with max_results 2^40 answered %d lines, want %d and the note", n, maxResults)
	}
}

// TestOutputIsCapped: however long the lines and however much context,
// the answer stops at about maxOutputBytes, and says how much is left.
func TestOutputIsCapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 480)
	var sb strings.Builder
	for i := range 9000 {
		fmt.Fprintf(&sb, "x%d %s\n", i, long)
	}
	root := writeTree(t, map[string]string{"a.txt": sb.String()})
	got := mustCall(t, searchText, root, map[string]any{"query": "x", "max_results": maxResults, "context": 2})
	if len(got) > maxOutputBytes+64<<10 {
		t.Errorf("search_text answered %d bytes, want about %d", len(got), maxOutputBytes)
	}
	last := got[strings.LastIndexByte(got, '\n')+1:]
	if !strings.HasPrefix(last, "... ") || !strings.Contains(last, "more matches not shown (the output stops after 4 MiB") {
		t.Errorf("search_text's answer ends %q, want the note on what is left", last)
	}
}

// TestNamesAndLinesCannotForgeOutput: control characters in file names
// and in matched lines are escaped, so that one entry is one line, and no
// terminal escape gets through.
func TestNamesAndLinesCannotForgeOutput(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"evil\nfake.txt:1:forged":  "needle one\n",
		"\x1b[31mred.txt":          "needle two\n",
		"plain.txt":                "needle \x1b[2J clear\nneedle a\rb\nneedle \u2028 sep\tand tab\n",
		"dir\nfake/inner.txt":      "needle three\n",
		"bad\xffutf8.txt":          "needle four\n",
		"quote \"in\" middle.txt":  "needle five\n",
		"\"leading quote.txt\"":    "needle six\n",
		"nul\x01and\x7fdel.txt":    "needle seven\n",
		"c1\u0085next.txt":         "needle eight\n",
		"ok/line\u2028sep.txt":     "needle nine\n",
		"bidi\u202eoverride.txt":   "needle ten\n",
		"tab\tname.txt":            "needle eleven\n",
		"emoji 🙂 and é.txt":        "needle twelve\n",
		"trailing\r":               "needle thirteen\n",
		"dir\x1b]0;title\x07/x.go": "needle fourteen\n",
	})
	p := startPlugin(t, root)

	files := p.call("search_files", map[string]any{"pattern": "**/*"})
	text := p.call("search_text", map[string]any{"query": "needle"})
	for name, out := range map[string]string{"search_files": files, "search_text": text} {
		for _, bad := range []string{"\x1b", "\r", "\u2028", "\u0085", "\x01", "\x7f", "\x07", "\xff"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s printed %q raw:\n%s", name, bad, out)
			}
		}
	}
	// One line per entry: the 15 files and the 3 directories.
	if n := len(strings.Split(files, "\n")); n != 18 {
		t.Errorf("search_files answered %d lines for 18 entries:\n%s", n, files)
	}
	for _, want := range []string{`"evil\nfake.txt:1:forged"`, `"\x1b[31mred.txt"`, `"dir\nfake/"`, "ok/", `"dir\nfake/inner.txt"`, `"bad\xffutf8.txt"`, `quote "in" middle.txt`, `"\"leading quote.txt\""`, "emoji 🙂 and é.txt"} {
		if !strings.Contains(files, want+"\n") && !strings.HasSuffix(files, want) {
			t.Errorf("search_files does not list %s:\n%s", want, files)
		}
	}
	// One line per match: 17 matching lines.
	if n := len(strings.Split(text, "\n")); n != 17 {
		t.Errorf("search_text answered %d lines for 17 matches:\n%s", n, text)
	}
	for _, want := range []string{
		`"evil\nfake.txt:1:forged":1:needle one`,
		`plain.txt:1:needle \x1b[2J clear`,
		`plain.txt:2:needle a\rb`,
		"plain.txt:3:needle \\u2028 sep\tand tab",
		`"c1\u0085next.txt":1:needle eight`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("search_text does not show %s:\n%s", want, text)
		}
	}
}

// TestSearchErrorsInToolWords: an error names the path as the call gave
// it and says what is wrong, never with a system call's name or the
// root-relative name the system saw.
func TestSearchErrorsInToolWords(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"a.txt": "x\n", "loopa": "-> loopb", "loopb": "-> loopa", "d/b.txt": "x\n"})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "swap")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		tool string
		args map[string]any
		want string
	}{
		"text link loop":         {"search_text", map[string]any{"query": "x", "paths": []string{"loopa"}}, "loopa: too many levels of symbolic links (a link that leads to itself?)"},
		"text below a loop":      {"search_text", map[string]any{"query": "x", "paths": []string{"loopa/x"}}, "loopa/x: too many levels of symbolic links (a link that leads to itself?)"},
		"text below a file":      {"search_text", map[string]any{"query": "x", "paths": []string{"a.txt/x"}}, "a.txt/x: a part of the path is not a directory"},
		"text link out":          {"search_text", map[string]any{"query": "x", "paths": []string{"swap/x"}}, `path "swap/x" is outside the workspace roots`},
		"files link loop":        {"search_files", map[string]any{"pattern": "*", "path": "loopa"}, "loopa: too many levels of symbolic links (a link that leads to itself?)"},
		"files below a file":     {"search_files", map[string]any{"pattern": "*", "path": "a.txt/x"}, "a.txt/x: a part of the path is not a directory"},
		"files link out":         {"search_files", map[string]any{"pattern": "*", "path": "swap"}, `path "swap" is outside the workspace roots`},
		"files prefix out":       {"search_files", map[string]any{"pattern": "swap/*"}, `path "swap" is outside the workspace roots`},
		"files a file":           {"search_files", map[string]any{"pattern": "*", "path": "a.txt"}, "a.txt is not a directory"},
		"files a name to escape": {"search_files", map[string]any{"pattern": "*", "path": "new\nline"}, `"new\nline": no such file or directory`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool := searchText
			if tc.tool == "search_files" {
				tool = searchFiles
			}
			err := callErr(t, tool, root, tc.args)
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}

	// The errors os.Root gives name the system call and the name it saw.
	ws, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, escape := ws.Open("swap")
	_, loop := ws.Stat("loopa")
	for _, e := range []error{escape, loop, errNotRegular, errTooLarge, errors.New("readdirent d: input/output error")} {
		msg := pathError("my/path", e).Error()
		if rawSystemError(msg) || !strings.Contains(msg, "my/path") {
			t.Errorf("pathError(%v) = %q", e, msg)
		}
	}
	if !errors.Is(pathError("swap", escape), workspace.ErrOutside) {
		t.Errorf("pathError of an escape is not ErrOutside")
	}
}

// rawSystemError reports whether msg carries a system call's or Go's own
// words instead of the tools'.
func rawSystemError(msg string) bool {
	for _, raw := range []string{"openat", "statat", "fstatat", "lstat ", "readdirent", "getdents", "escapes from parent", "json: ", "Go struct", "reflect", "errno", "syscall", "panic"} {
		if strings.Contains(msg, raw) {
			return true
		}
	}
	return false
}

func TestWholeNumber(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want int
		err  bool
	}{
		"zero":          {"0", 0, false},
		"small":         {"17", 17, false},
		"negative":      {"-3", -3, false},
		"whole float":   {"2.0", 2, false},
		"exponent":      {"1e3", 1000, false},
		"max int64":     {"9223372036854775807", maxInt, false},
		"beyond int64":  {"9223372036854775808", maxInt, false},
		"huge":          {"1e400", maxInt, false},
		"huge negative": {"-1e400", minInt, false},
		"fraction":      {"2.5", 0, true},
		"string":        {`"3"`, 0, true},
	}
	for name, tc := range tests {
		var n wholeNumber
		err := n.UnmarshalJSON([]byte(tc.in))
		if (err != nil) != tc.err || (err == nil && int(n) != tc.want) {
			t.Errorf("%s: UnmarshalJSON(%s) = %d, %v; want %d, error %v", name, tc.in, n, err, tc.want, tc.err)
		}
	}
}

const (
	maxInt = int(^uint(0) >> 1)
	minInt = -maxInt - 1
)

// memFile is a file in memory that says it has size bytes.
type memFile struct {
	data    []byte
	size    int64
	regular bool
	reads   int
}

func (f *memFile) read(p []byte) (int, error) {
	f.reads++
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}
func (f *memFile) stat() (int64, bool, error) { return f.size, f.regular, nil }
func (f *memFile) realPath() (string, bool)   { return "", false }
func (f *memFile) close() error               { return nil }
func (f *memFile) rewind() error              { return errors.New("memFile cannot rewind") }

// TestReadAllDecidesFromSize: a file is read whole up to the limit, and
// no further than one buffer when its size or type rules it out.
func TestReadAllDecidesFromSize(t *testing.T) {
	t.Parallel()
	mk := func(n int, size int64, regular bool) *memFile {
		return &memFile{data: make([]byte, n), size: size, regular: regular}
	}
	tests := map[string]struct {
		f       *memFile
		buf     []byte
		wantLen int
		wantErr error
	}{
		"small":                      {mk(100, 100, true), make([]byte, 0, readBufferSize), 100, nil},
		"one buffer exactly":         {mk(readBufferSize, readBufferSize, true), make([]byte, 0, readBufferSize), readBufferSize, nil},
		"larger than a buffer":       {mk(3*readBufferSize+7, 3*readBufferSize+7, true), make([]byte, 0, readBufferSize), 3*readBufferSize + 7, nil},
		"too large by its size":      {mk(2*readBufferSize, maxFileSize+1, true), make([]byte, 0, readBufferSize), 0, errTooLarge},
		"not regular":                {mk(2*readBufferSize, 0, false), make([]byte, 0, readBufferSize), 0, errNotRegular},
		"no size, short":             {mk(1000, 0, true), nil, 1000, nil},
		"no size, endless":           {mk(4*maxGeneratedSize, 0, true), make([]byte, 0, readBufferSize), 0, errNoEnd},
		"no size, a large buffer":    {mk(4*maxGeneratedSize, 0, true), make([]byte, 0, keepBufferSize), 0, errNoEnd},
		"ignore file, nil buffer":    {mk(10, 10, true), nil, 10, nil},
		"too large, nil buffer":      {mk(10, maxFileSize+1, true), nil, 0, errTooLarge},
		"grows past its stated size": {mk(3*readBufferSize, readBufferSize+1, true), make([]byte, 0, readBufferSize), 3 * readBufferSize, nil},
	}
	for name, tc := range tests {
		got, err := readAll(tc.f, tc.buf)
		if !errors.Is(err, tc.wantErr) || (err == nil && len(got) != tc.wantLen) {
			t.Errorf("%s: readAll = %d bytes, %v; want %d, %v", name, len(got), err, tc.wantLen, tc.wantErr)
		}
		if tc.wantErr == errTooLarge && tc.f.reads > 1 || tc.wantErr == errNotRegular && tc.f.reads > 1 {
			t.Errorf("%s: %d reads before it was refused", name, tc.f.reads)
		}
		if tc.wantErr == errNoEnd && len(got) > keepBufferSize {
			t.Errorf("%s: read %d bytes of a file without a size", name, len(got))
		}
		if cap(got) > keepBufferSize {
			<-largeBuffer
		}
	}
}
