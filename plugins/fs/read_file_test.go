package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileLineNumbers(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content string
		args    map[string]any
		want    string
	}{
		"whole file":            {"a\nb\n", nil, "     1\ta\n     2\tb\n"},
		"last line, no newline": {"a\nb", nil, "     1\ta\n     2\tb"},
		"from an offset":        {"a\nb\nc\n", map[string]any{"offset": 2}, "     2\tb\n     3\tc\n"},
		"offset and limit":      {"a\nb\nc\nd\n", map[string]any{"offset": 2, "limit": 2}, "     2\tb\n     3\tc\n"},
		"blank lines":           {"\n\n", nil, "     1\t\n     2\t\n"},
		"empty file":            {"", nil, ""},
		"wide numbers":          {strings.Repeat("x\n", 1000000), map[string]any{"offset": 999999}, "999999\tx\n1000000\tx\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkReadFile(t, tc.content, map[string]any{"line_numbers": true}, tc.args, tc.want)
		})
	}
}

func TestReadFileCap(t *testing.T) {
	t.Parallel()
	// 3000 lines of 100 bytes: 300,000 bytes, more than 256 KiB.
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %05d %s\n", i, strings.Repeat("x", 88))
	}
	content := b.String()
	root, _ := writeTestFile(t, "big.txt", content)

	t.Run("cut at a line boundary with a note", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readFile, map[string]any{"path": "big.txt"})
		if err != nil {
			t.Fatal(err)
		}
		// 2621 lines (262,100 bytes) fit in 262,144.
		note := "[Output capped at 256 KiB: showed lines 1-2621 (262100 bytes) of a 300000-byte file. To read on, call read_file with offset 2622.]"
		if want := content[:262100] + note; got != want {
			t.Errorf("read_file of a large file ends %q, want %q", got[max(len(got)-200, 0):], want[len(want)-200:])
		}
		rest, err := call(t, root, readFile, map[string]any{"path": "big.txt", "offset": 2622})
		if err != nil || rest != content[262100:] {
			t.Errorf("read_file from offset 2622 = %d bytes, %v; want the remaining %d bytes", len(rest), err, len(content)-262100)
		}
	})

	t.Run("a limit under the cap has no note", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readFile, map[string]any{"path": "big.txt", "offset": 11, "limit": 2})
		if want := content[1000:1200]; err != nil || got != want {
			t.Errorf("read_file(offset 11, limit 2) = %q, %v; want %q", got, err, want)
		}
	})

	t.Run("line numbers count toward the cap", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readFile, map[string]any{"path": "big.txt", "line_numbers": true})
		if err != nil {
			t.Fatal(err)
		}
		// 107 bytes a line: 2449 lines fit.
		body, note, ok := strings.Cut(got, "[Output capped")
		if !ok || len(body) != 2449*107 || !strings.HasSuffix(note, "To read on, call read_file with offset 2450.]") {
			t.Errorf("read_file with line numbers: %d bytes before the note %q", len(body), note)
		}
	})

	t.Run("one line longer than the cap", func(t *testing.T) {
		t.Parallel()
		root, _ := writeTestFile(t, "long.txt", strings.Repeat("é", 200000)+"\nnext\n")
		got, err := call(t, root, readFile, map[string]any{"path": "long.txt"})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat("é", maxTextOutput/2) + "\n[Line 1 alone is longer than the 256 KiB that read_file returns: its first 262144 bytes are shown. The next line is at offset 2.]"
		if got != want {
			t.Errorf("read_file of a long line: %d bytes ending %q", len(got), got[len(got)-150:])
		}
		next, err := call(t, root, readFile, map[string]any{"path": "long.txt", "offset": 2})
		if err != nil || next != "next\n" {
			t.Errorf("read_file offset 2 = %q, %v", next, err)
		}
	})
}

func TestReadFileBoundedRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "huge.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Repeat("some text\n", 2000)); err != nil {
		t.Fatal(err)
	}
	// A 2 GiB file, sparse: reading it whole would take seconds and
	// memory; read_file reads only what it returns.
	if err := f.Truncate(2 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	start := time.Now()
	got, err := call(t, root, readFile, map[string]any{"path": "huge.txt", "limit": 3})
	if err != nil || got != "some text\nsome text\nsome text\n" {
		t.Errorf("read_file(limit 3) = %q, %v", got, err)
	}
	// The text, then one line of zeros: its head is cut off by the cap.
	got, err = call(t, root, readFile, map[string]any{"path": "huge.txt"})
	if want := strings.Repeat("some text\n", 2000) + "[Output capped at 256 KiB: showed lines 1-2000 (20000 bytes) of a 2147483648-byte file. To read on, call read_file with offset 2001.]"; err != nil || got != want {
		t.Errorf("read_file of the whole file ends %q, %v; want %q", got[max(len(got)-200, 0):], err, want[len(want)-200:])
	}
	// The zeros are not text.
	_, err = call(t, root, readFile, map[string]any{"path": "huge.txt", "offset": 2001})
	if want := "huge.txt is not utf-8 text (2147483648 bytes): read it with encoding base64"; err == nil || err.Error() != want {
		t.Errorf("read_file from offset 2001: %v, want %q", err, want)
	}
	_, err = call(t, root, readFile, map[string]any{"path": "huge.txt", "encoding": "base64"})
	if want := "huge.txt is 2147483648 bytes: base64 reads files up to 10485760 bytes (10 MiB)"; err == nil || err.Error() != want {
		t.Errorf("read_file as base64: %v, want %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("four reads of a 2 GiB file took %v: they read more than they return", d)
	}
}

func TestReadFileNotText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content string
		args    map[string]any
	}{
		"NUL at the start":        {"\x00abc", nil},
		"invalid utf-8":           {"caf\xe9\n", nil},
		"NUL past the first 8KiB": {strings.Repeat("text\n", 4000) + "\x00\n", nil},
		"invalid in the selection": {
			"ok\n" + strings.Repeat("text\n", 4000) + "bad \xff\n", map[string]any{"offset": 4002},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, _ := writeTestFile(t, "f.bin", tc.content)
			args := map[string]any{"path": "f.bin"}
			for k, v := range tc.args {
				args[k] = v
			}
			got, err := call(t, root, readFile, args)
			wantErr(t, "read_file", got, err, fmt.Sprintf("f.bin is not utf-8 text (%d bytes): read it with encoding base64", len(tc.content)))
		})
	}
	t.Run("a rune cut by the sniffed head is text", func(t *testing.T) {
		t.Parallel()
		content := strings.Repeat("a", sniffSize-1) + "é"
		root, _ := writeTestFile(t, "f.txt", content)
		got, err := call(t, root, readFile, map[string]any{"path": "f.txt"})
		if err != nil || got != content {
			t.Errorf("read_file = %d bytes, %v", len(got), err)
		}
	})
}

func TestReadFileSpecialFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	mustWrite(t, filepath.Join(root, "f.txt"), "hi")
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"a FIFO does not block":    {map[string]any{"path": "pipe"}, "pipe is a fifo, not a regular file"},
		"a directory":              {map[string]any{"path": "."}, ". is a directory, not a file"},
		"a file as a directory":    {map[string]any{"path": "f.txt/x"}, "f.txt/x: not a directory"},
		"line_numbers with base64": {map[string]any{"path": "f.txt", "encoding": "base64", "line_numbers": true}, "offset, limit, tail and line_numbers apply to utf-8 text; read the whole file with base64"},
		"offset past the end":      {map[string]any{"path": "f.txt", "offset": 3}, "offset 3 is past the end of the file (1 lines)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, readFile, tc.args)
			wantErr(t, fmt.Sprintf("read_file(%v)", tc.args), got, err, tc.want)
		})
	}
}

// checkReadFile writes content to f.txt and checks that read_file of it,
// with the arguments of base and then of args, answers want.
func checkReadFile(t *testing.T, content string, base, args map[string]any, want string) {
	t.Helper()
	root, _ := writeTestFile(t, "f.txt", content)
	all := map[string]any{"path": "f.txt"}
	maps.Copy(all, base)
	maps.Copy(all, args)
	got, err := call(t, root, readFile, all)
	if err != nil || got != want {
		t.Errorf("read_file(%v) = %q, %v; want %q", all, got, err, want)
	}
}
