package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

// multiTree is a workspace for read_multiple_files, with a directory
// outside it that links point to.
func multiTree(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(root, "a.txt"), "alpha\nbeta\n")
	mustWrite(t, filepath.Join(root, "b.txt"), "no newline")
	mustWrite(t, filepath.Join(root, "empty.txt"), "")
	mustWrite(t, filepath.Join(root, "sub", "c.txt"), "gamma\n")
	mustWrite(t, filepath.Join(root, "image.png"), "\x89PNG\r\n\x1a\n\x00")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "secret\n")
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape"))
	mustSymlink(t, "sub/c.txt", filepath.Join(root, "inside"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func TestReadMultipleFiles(t *testing.T) {
	t.Parallel()
	root, outside := multiTree(t)
	secret := filepath.Join(outside, "secret.txt")
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"one file": {map[string]any{"paths": []string{"a.txt"}},
			"==> a.txt <==\nalpha\nbeta\n"},
		"several, in the order given": {map[string]any{"paths": []string{"sub/c.txt", "a.txt", "b.txt", "empty.txt"}},
			"==> sub/c.txt <==\ngamma\n\n==> a.txt <==\nalpha\nbeta\n\n==> b.txt <==\nno newline\n\n==> empty.txt <==\n"},
		"an absolute path and a link inside": {map[string]any{"paths": []string{filepath.Join(root, "a.txt"), "inside"}},
			"==> " + filepath.Join(root, "a.txt") + " <==\nalpha\nbeta\n\n==> inside <==\ngamma\n"},
		"line numbers": {map[string]any{"paths": []string{"a.txt", "b.txt"}, "line_numbers": true},
			"==> a.txt <==\n     1\talpha\n     2\tbeta\n\n==> b.txt <==\n     1\tno newline\n"},
		"the same file twice": {map[string]any{"paths": []string{"sub/c.txt", "sub/c.txt"}},
			"==> sub/c.txt <==\ngamma\n\n==> sub/c.txt <==\ngamma\n"},
		"errors in their place": {map[string]any{"paths": []string{"missing.txt", "a.txt", "pipe", "sub", "image.png", "escape", secret, "../x"}},
			"==> missing.txt <==\nerror: file not found: missing.txt\n" +
				"\n==> a.txt <==\nalpha\nbeta\n" +
				"\n==> pipe <==\nerror: pipe is a fifo, not a regular file\n" +
				"\n==> sub <==\nerror: sub is a directory, not a file\n" +
				"\n==> image.png <==\nerror: image.png is not utf-8 text (9 bytes): read it with read_file and encoding base64\n" +
				"\n==> escape <==\nerror: path \"escape\" is outside the workspace roots\n" +
				"\n==> " + secret + " <==\nerror: path \"" + secret + "\" is outside the workspace roots\n" +
				"\n==> ../x <==\nerror: path \"../x\" is outside the workspace roots\n"},
		"a name that could forge lines is quoted": {map[string]any{"paths": []string{"a.txt", "x\n==> a.txt <=="}},
			"==> a.txt <==\nalpha\nbeta\n\n==> \"x\\n==> a.txt <==\" <==\nerror: file not found: \"x\\n==> a.txt <==\"\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, readMultipleFiles, tc.args)
			if err != nil || got != tc.want {
				t.Errorf("read_multiple_files(%v) =\n%s\n%v\nwant:\n%s", tc.args, got, err, tc.want)
			}
		})
	}
}

func TestReadMultipleFilesErrors(t *testing.T) {
	t.Parallel()
	root, _ := multiTree(t)
	many := make([]string, maxReadPaths+1)
	for i := range many {
		many[i] = "a.txt"
	}
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"every file fails": {map[string]any{"paths": []string{"missing.txt", "pipe", "escape"}},
			"file not found: missing.txt\npipe is a fifo, not a regular file\npath \"escape\" is outside the workspace roots"},
		"one file, failing": {map[string]any{"paths": []string{"sub"}}, "sub is a directory, not a file"},
		"no paths":          {map[string]any{"paths": []string{}}, "paths is empty: give 1 to 100 paths"},
		"too many paths":    {map[string]any{"paths": many}, "101 paths is too many: give at most 100 per call"},
		"paths missing":     {map[string]any{}, `invalid arguments: required: missing properties: ["paths"]`},
		"an empty path":     {map[string]any{"paths": []string{""}}, "path is empty"},
		"unknown argument":  {map[string]any{"paths": []string{"a.txt"}, "offset": 2}, `invalid arguments: unexpected additional properties ["offset"]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, readMultipleFiles, tc.args)
			wantErr(t, fmt.Sprintf("read_multiple_files(%v)", tc.args), got, err, tc.want)
		})
	}
}

// The tools' titles pass through the argument check that wraps them.
func TestMultiToolTitles(t *testing.T) {
	t.Parallel()
	for tool, want := range map[sdk.Tool]string{readMultipleFiles: "Read multiple files", editFile: "Edit file"} {
		if got := sdk.TitleOf(tool); got != want {
			t.Errorf("%s has the title %q, want %q", tool.Name(), got, want)
		}
	}
}

// The answer holds at most 256 KiB of text in all: the file that does
// not fit is cut with a note on how to read on, the files after it are
// left out and named, and a huge file costs no more than the cap.
func TestReadMultipleFilesCap(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"                                          // 100 bytes
	mustWrite(t, filepath.Join(root, "first.txt"), strings.Repeat(line, 2000))      // 200,000 bytes
	mustWrite(t, filepath.Join(root, "second.txt"), strings.Repeat(line, 1000))     // 100,000 bytes
	mustWrite(t, filepath.Join(root, "third.txt"), "three\n")                       // left out
	mustWrite(t, filepath.Join(root, "long-line.txt"), strings.Repeat("y", 300000)) // one line
	huge := filepath.Join(root, "huge.log")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// 1 GiB, sparse: reading it whole would show in the test's time and
	// memory; the cap reads 256 KiB of it.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat(line, 100)), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// 20 MiB of text, written for real.
	mustWrite(t, filepath.Join(root, "big.txt"), strings.Repeat(line, 200<<10))

	t.Run("a file cut, the next left out", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readMultipleFiles, map[string]any{"paths": []string{"first.txt", "second.txt", "third.txt", "missing.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		head1, head2 := "==> first.txt <==\n", "\n==> second.txt <==\n"
		// What fits of second.txt: whole lines in what first.txt and
		// the headers left.
		room := maxTextOutput - len(head1) - 200000 - len(head2)
		lines := room / 100
		want := head1 + strings.Repeat(line, 2000) + head2 + strings.Repeat(line, lines) +
			fmt.Sprintf("[Output capped at 256 KiB in all: showed lines 1-%d (%d bytes) of a 100000-byte file. To read on, call read_file with path \"second.txt\" and offset %d.]\n", lines, lines*100, lines+1) +
			"\n[Output capped at 256 KiB in all: second.txt was cut short (its note says how to read on). third.txt and missing.txt were left out: read them with read_file, or with another read_multiple_files call.]\n"
		wantLong(t, "read_multiple_files", got, want)
		if text, _, _ := strings.Cut(got, "[Output capped"); len(text) > maxTextOutput {
			t.Errorf("%d bytes of text, over the cap of %d", len(text), maxTextOutput)
		}
	})

	t.Run("a line longer than the room left", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readMultipleFiles, map[string]any{"paths": []string{"second.txt", "long-line.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		head1, head2 := "==> second.txt <==\n", "\n==> long-line.txt <==\n"
		room := maxTextOutput - len(head1) - 100000 - len(head2)
		want := head1 + strings.Repeat(line, 1000) + head2 + strings.Repeat("y", room) +
			fmt.Sprintf("\n[Line 1 is longer than the %d bytes left of the 256 KiB that read_multiple_files returns in all: its first %d bytes are shown. To read on, call read_file with path \"long-line.txt\" and offset 1.]\n", room, room) +
			"\n[Output capped at 256 KiB in all: long-line.txt was cut short (its note says how to read on).]\n"
		wantLong(t, "read_multiple_files", got, want)
	})

	t.Run("a huge file", func(t *testing.T) {
		t.Parallel()
		got, err := call(t, root, readMultipleFiles, map[string]any{"paths": []string{"third.txt", "huge.log"}})
		if err != nil {
			t.Fatal(err)
		}
		// The line of zeros after the text is longer than the room left:
		// the text before it is shown, and the zeros are never read.
		want := "==> third.txt <==\nthree\n\n==> huge.log <==\n" + strings.Repeat(line, 100) +
			"[Output capped at 256 KiB in all: showed lines 1-100 (10000 bytes) of a 1073741824-byte file. To read on, call read_file with path \"huge.log\" and offset 101.]\n" +
			"\n[Output capped at 256 KiB in all: huge.log was cut short (its note says how to read on).]\n"
		wantLong(t, "read_multiple_files", got, want)
		got, err = call(t, root, readMultipleFiles, map[string]any{"paths": []string{"third.txt", "big.txt", "a.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		head1, head2 := "==> third.txt <==\n", "\n==> big.txt <==\n"
		lines := (maxTextOutput - len(head1) - len("three\n") - len(head2)) / 100
		want = head1 + "three\n" + head2 + strings.Repeat(line, lines) +
			fmt.Sprintf("[Output capped at 256 KiB in all: showed lines 1-%d (%d bytes) of a 20480000-byte file. To read on, call read_file with path \"big.txt\" and offset %d.]\n", lines, lines*100, lines+1) +
			"\n[Output capped at 256 KiB in all: big.txt was cut short (its note says how to read on). a.txt was left out: read it with read_file, or with another read_multiple_files call.]\n"
		wantLong(t, "read_multiple_files", got, want)
	})
}

// wantLong fails unless got is want, showing where a long answer
// departs from it.
func wantLong(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s =\n%s\nwant:\n%s\nfrom byte %d: %q, want %q", what, short(got), short(want), i, short(got[i:]), short(want[i:]))
}
