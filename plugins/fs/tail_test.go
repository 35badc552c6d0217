package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadFileTail(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content string
		args    map[string]any
		want    string
	}{
		"last lines":                {"a\nb\nc\n", map[string]any{"tail": 2}, "b\nc\n"},
		"last line":                 {"a\nb\nc\n", map[string]any{"tail": 1}, "c\n"},
		"no trailing newline":       {"a\nb\nc", map[string]any{"tail": 2}, "b\nc"},
		"no newline at all":         {"abc", map[string]any{"tail": 3}, "abc"},
		"more than the file holds":  {"a\nb\n", map[string]any{"tail": 10}, "a\nb\n"},
		"exactly the file":          {"a\nb\n", map[string]any{"tail": 2}, "a\nb\n"},
		"CRLF":                      {"a\r\nb\r\nc\r\n", map[string]any{"tail": 2}, "b\r\nc\r\n"},
		"CRLF, no trailing newline": {"a\r\nb\r\nc", map[string]any{"tail": 2}, "b\r\nc"},
		"blank lines count":         {"a\n\n\n", map[string]any{"tail": 2}, "\n\n"},
		"only newlines":             {"\n\n", map[string]any{"tail": 1}, "\n"},
		"empty file":                {"", map[string]any{"tail": 3}, ""},
		"with a limit":              {"a\nb\nc\nd\n", map[string]any{"tail": 3, "limit": 2}, "b\nc\n"},
		"a limit past the end":      {"a\nb\nc\nd\n", map[string]any{"tail": 2, "limit": 5}, "c\nd\n"},
		"a limit past a short file": {"a\nb\n", map[string]any{"tail": 5, "limit": 1}, "a\n"},
		"utf-8":                     {"é\nñ\n😀\n", map[string]any{"tail": 2}, "ñ\n😀\n"},
		"line numbers from the end": {"a\nb\nc\n", map[string]any{"tail": 2, "line_numbers": true}, "    -2\tb\n    -1\tc\n"},
		"line numbers, short file":  {"a\nb", map[string]any{"tail": 9, "line_numbers": true}, "    -2\ta\n    -1\tb"},
		"line numbers and a limit":  {"a\nb\nc\n", map[string]any{"tail": 3, "limit": 1, "line_numbers": true}, "    -3\ta\n"},
		"tail 0 is the whole file":  {"a\nb\n", map[string]any{"tail": 0}, "a\nb\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkReadFile(t, tc.content, nil, tc.args, tc.want)
		})
	}
}

func TestReadFileTailErrors(t *testing.T) {
	t.Parallel()
	root, _ := writeTestFile(t, "f.txt", "a\nb\n")
	mustWrite(t, filepath.Join(root, "bin"), "\x00\x01\n"+strings.Repeat("text\n", 10))
	mustWrite(t, filepath.Join(root, "bad"), strings.Repeat("text\n", 10000)+"caf\xe9\nok\n")
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"negative":           {map[string]any{"path": "f.txt", "tail": -1}, "tail must not be negative: tail N reads the last N lines"},
		"with an offset":     {map[string]any{"path": "f.txt", "tail": 1, "offset": 2}, "offset and tail cannot be combined: offset counts lines from the start, tail from the end"},
		"with base64":        {map[string]any{"path": "f.txt", "tail": 1, "encoding": "base64"}, "offset, limit, tail and line_numbers apply to utf-8 text; read the whole file with base64"},
		"a binary head":      {map[string]any{"path": "bin", "tail": 1}, "bin is not utf-8 text (53 bytes): read it with encoding base64"},
		"invalid in the end": {map[string]any{"path": "bad", "tail": 2}, "bad is not utf-8 text (50008 bytes): read it with encoding base64"},
		"not a file":         {map[string]any{"path": ".", "tail": 1}, ". is a directory, not a file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, readFile, tc.args)
			wantErr(t, fmt.Sprintf("read_file(%v)", tc.args), got, err, tc.want)
		})
	}
	// The invalid line is not in the last line: that reads.
	if got, err := call(t, root, readFile, map[string]any{"path": "bad", "tail": 1}); err != nil || got != "ok\n" {
		t.Errorf("read_file(bad, tail 1) = %q, %v", got, err)
	}
}

func TestReadFileTailCap(t *testing.T) {
	t.Parallel()
	// 3000 lines of 100 bytes: 300,000 bytes, more than 256 KiB.
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %05d %s\n", i, strings.Repeat("x", 88))
	}
	content := b.String()
	root, _ := writeTestFile(t, "big.txt", content)

	got, err := call(t, root, readFile, map[string]any{"path": "big.txt", "tail": 3000})
	if err != nil {
		t.Fatal(err)
	}
	// 2621 lines (262,100 bytes) fit in 262,144; 379 remain.
	note := "[Output capped at 256 KiB: showed lines -3000 to -380 counted from the end (2621 lines, 262100 bytes) of a 300000-byte file. To read on, call read_file with tail 379.]"
	if want := content[:262100] + note; got != want {
		t.Errorf("read_file(tail 3000) ends %q, want %q", got[max(len(got)-250, 0):], want[len(want)-250:])
	}
	rest, err := call(t, root, readFile, map[string]any{"path": "big.txt", "tail": 379})
	if err != nil || rest != content[262100:] {
		t.Errorf("read_file(tail 379) = %d bytes, %v; want the remaining %d bytes", len(rest), err, len(content)-262100)
	}

	// With a limit, reading on keeps what is left of it.
	got, err = call(t, root, readFile, map[string]any{"path": "big.txt", "tail": 3000, "limit": 2700})
	if err != nil || !strings.HasSuffix(got, "To read on, call read_file with tail 379 and limit 79.]") {
		t.Errorf("read_file(tail 3000, limit 2700) ends %q, %v", got[max(len(got)-100, 0):], err)
	}

	t.Run("one line longer than the cap", func(t *testing.T) {
		t.Parallel()
		root, _ := writeTestFile(t, "long.txt", "first\n"+strings.Repeat("é", 200000)+"\nnext\n")
		got, err := call(t, root, readFile, map[string]any{"path": "long.txt", "tail": 2})
		want := strings.Repeat("é", maxTextOutput/2) + "\n[Line -2 (counted from the end) alone is longer than the 256 KiB that read_file returns: its first 262144 bytes are shown. To read on, call read_file with tail 1.]"
		if err != nil || got != want {
			t.Errorf("read_file(tail 2) of a long line: %d bytes ending %q, %v", len(got), got[max(len(got)-150, 0):], err)
		}
		got, err = call(t, root, readFile, map[string]any{"path": "long.txt", "tail": 1})
		if err != nil || got != "next\n" {
			t.Errorf("read_file(tail 1) = %q, %v", got, err)
		}
	})
}

// TestTailStartBlocks compares tailStart with a plain count over files
// whose newlines fall around the edges of its blocks.
func TestTailStartBlocks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, readBuffer - 1, readBuffer, readBuffer + 1, 2*readBuffer + 3, 5*readBuffer + 17} {
		for _, density := range []int{2, 50, readBuffer / 2, 4 * readBuffer} {
			data := make([]byte, size)
			for i := range data {
				data[i] = 'x'
				if rng.IntN(density) == 0 {
					data[i] = '\n'
				}
			}
			// Newlines right at the block edges, and at the end.
			for _, at := range []int{size - readBuffer, size - readBuffer - 1, size - 2*readBuffer, size - 1} {
				if at >= 0 && at < size && rng.IntN(2) == 0 {
					data[at] = '\n'
				}
			}
			starts := naiveLineStarts(data)
			for _, n := range []int{1, 2, 3, 7, len(starts) - 1, len(starts), len(starts) + 1, 1000} {
				if n < 1 {
					continue
				}
				start, lines, err := tailStart(t.Context(), strings.NewReader(string(data)), int64(size), n)
				wantLines := min(n, len(starts))
				wantStart := int64(starts[len(starts)-wantLines])
				if err != nil || start != wantStart || lines != wantLines {
					t.Errorf("size %d, density %d: tailStart(%d) = %d, %d, %v; want %d, %d", size, density, n, start, lines, err, wantStart, wantLines)
				}
			}
		}
	}
}

// naiveLineStarts returns the offsets where data's lines start: a
// newline that ends data starts no line.
func naiveLineStarts(data []byte) []int {
	if len(data) == 0 {
		return nil
	}
	starts := []int{0}
	for i, c := range data[:len(data)-1] {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func TestReadFileTailOfAHugeFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := filepath.Join(root, "huge.log")
	const size = 200 << 20
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Repeat("a text head\n", 1000)); err != nil {
		t.Fatal(err)
	}
	// 200 MiB, sparse between its head and its last lines.
	if err := f.Truncate(size); err != nil {
		t.Skip("no sparse files here:", err)
	}
	end := "\nline 1\nline 2\nline 3\n"
	if _, err := f.WriteAt([]byte(end), size-int64(len(end))); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	got, err := call(t, root, readFile, map[string]any{"path": "huge.log", "tail": 2, "line_numbers": true})
	if want := "    -2\tline 2\n    -1\tline 3\n"; err != nil || got != want {
		t.Errorf("read_file(tail 2) = %q, %v; want %q", got, err, want)
	}
	got, err = call(t, root, readFile, map[string]any{"path": "huge.log", "tail": 3, "limit": 1})
	if err != nil || got != "line 1\n" {
		t.Errorf("read_file(tail 3, limit 1) = %q, %v", got, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("two tails of a 200 MiB file took %v: they read more than the end", d)
	}

	// What readText reads: the sniffed head, one block back from the
	// end, and the lines it returns.
	c := &countingReaderAt{r: f}
	got, _, err = readText(t.Context(), c, "huge.log", size, readFileInput{Tail: 3}, readFileCap)
	if err != nil || got != "line 1\nline 2\nline 3\n" {
		t.Errorf("readText(tail 3) = %q, %v", got, err)
	}
	if n := c.n.Load(); n > sniffSize+2*readBuffer {
		t.Errorf("readText(tail 3) of a %d-byte file read %d bytes; want at most %d", size, n, sniffSize+2*readBuffer)
	}
}
