package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// windowQueries are queries for the window tests: literals, regexes with
// and without a literal, anchors, classes around a literal.
var windowQueries = []struct {
	query string
	regex bool
}{
	{"needle", false}, {"ab", false}, {"a b", false}, {"NEEDLE", false},
	{`needle\d+`, true}, {`^ab`, true}, {`ba$`, true}, {`[A-Z]{3,}_[A-Z]+`, true}, {`\bba\b`, true},
	{`a\s+b`, true}, {`b{5,}`, true}, {`(ab|ba){3}`, true}, {`^$`, true}, {`x\z`, true}, {`\Ab`, true},
}

// windowText is random text of n bytes or so: lines of any length, some
// longer than a read buffer, needles and upper-case runs here and there.
func windowText(rng *rand.Rand, n int) string {
	pieces := []string{"a", "b", " ", "ab", "ba", "\n", "\n", "\r\n", "needle", "NEEDLE12", "ABCD_EF", "x", "é", "\t"}
	var sb strings.Builder
	for sb.Len() < n {
		if rng.IntN(2000) == 0 {
			// A long line.
			sb.WriteString(strings.Repeat("ab ", rng.IntN(readBufferSize/2)))
		}
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

// TestWindowedReadsSameResults: search_text answers the same whether it
// reads large files a window at a time or whole, for files of every
// shape around the window's size: matches early, late, across window
// ends, only in the last line without a line break, lines longer than a
// window, a NUL byte after a match, context lines across windows. It
// is not parallel: it turns windowedReads off.
func TestWindowedReadsSameResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	files := map[string]string{}
	for i := range 6 {
		files[fmt.Sprintf("r%02d.txt", i)] = windowText(rng, readBufferSize/2+rng.IntN(2*readBufferSize))
	}
	plain := strings.Repeat("plain text line\n", 5*readBufferSize/16/4)
	files["none.txt"] = plain
	files["last.txt"] = plain + "the needle at the end"
	files["first.txt"] = "needle first\n" + plain
	files["edge.txt"] = strings.Repeat("x", readBufferSize-3) + "\nneedle across\n" + plain
	files["nul.txt"] = "needle\n" + plain + "\x00" + plain
	files["nul-late.txt"] = plain + "\x00\nneedle\n"
	files["long-line.txt"] = strings.Repeat("ab", readBufferSize) + "needle\n" + plain
	files["crlf.txt"] = strings.ReplaceAll(plain, "\n", "\r\n") + "needle\r\n"
	root := writeTree(t, files)
	// Each query runs with one of the four combinations of case folding
	// and context, in turn, so that every combination is met and the
	// test stays short under the race detector.
	for i, q := range windowQueries {
		fold, context := i%2 == 1, 2*(i/2%2)
		args := map[string]any{"query": q.query, "regex": q.regex, "case_insensitive": fold, "context": context, "max_results": 10000}
		windowedReads = false
		whole := mustCall(t, searchText, root, args)
		windowedReads = true
		windowed := mustCall(t, searchText, root, args)
		if whole != windowed {
			t.Errorf("%v: read whole:\n%s\nread by windows:\n%s", args, whole, windowed)
		}
	}
}

// rewindFile is a memFile that can be read again from its start.
type rewindFile struct {
	memFile
	all []byte
}

func (f *rewindFile) rewind() error {
	f.data = f.all
	return nil
}

// TestReadCandidate: readCandidate hands a file's whole content to use
// whenever the matcher finds a line in it, with read buffers of any size;
// it never hands a part of it; it stops at a NUL byte only in a file that
// holds one.
func TestReadCandidate(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		text := windowText(rng, rng.IntN(5*readBufferSize))
		if rng.IntN(4) == 0 {
			at := rng.IntN(len(text) + 1)
			text = text[:at] + "\x00" + text[at:]
		}
		for _, q := range windowQueries {
			m, err := newMatcher(q.query, q.regex, rng.IntN(2) == 0)
			if err != nil {
				t.Fatal(err)
			}
			if !m.lineLocal {
				continue
			}
			want := m.any([]byte(text))
			f := &rewindFile{memFile: memFile{data: []byte(text), size: int64(len(text)), regular: true}, all: []byte(text)}
			buf := make([]byte, 0, readBufferSize+rng.IntN(3)*rng.IntN(readBufferSize))
			var got []byte
			called := false
			_, err = readCandidate(f, buf, rng.IntN(2) == 0, m.any, func(content []byte) {
				called = true
				got = bytes.Clone(content)
			})
			switch {
			case errors.Is(err, errBinary):
				if !strings.Contains(text, "\x00") {
					t.Fatalf("query %q: errBinary for a text without NUL", q.query)
				}
			case err != nil:
				t.Fatalf("query %q: %v", q.query, err)
			case called && string(got) != text:
				t.Fatalf("query %q: use got %d bytes of %d", q.query, len(got), len(text))
			case want && !called:
				t.Fatalf("query %q: the text matches, and use was not called (%d bytes, buffer %d)", q.query, len(text), cap(buf))
			}
		}
	}
}

// shortReader is a memFile whose reads return at most chunk bytes, as a
// FUSE server or a file made up by the kernel may.
type shortReader struct {
	rewindFile
	chunk int
}

func (f *shortReader) read(p []byte) (int, error) {
	return f.rewindFile.read(p[:min(len(p), f.chunk)])
}

// TestShortReadsEndOnlyWhenTrusted: a read that returns less than it
// asked for ends a file only with shortEnds; without, the whole file is
// read, whatever its reads return.
func TestShortReadsEndOnlyWhenTrusted(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("a line of text\n", 100) + "needle\n"
	m, err := newMatcher("needle", false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, shortEnds := range []bool{false, true} {
		f := &shortReader{rewindFile: rewindFile{memFile: memFile{data: []byte(text), size: int64(len(text)), regular: true}, all: []byte(text)}, chunk: 100}
		var got string
		_, err := readCandidate(f, make([]byte, 0, readBufferSize), shortEnds, m.any, func(content []byte) { got = string(content) })
		if err != nil {
			t.Fatal(err)
		}
		if want := text; !shortEnds && got != want {
			t.Errorf("without shortEnds: read %d bytes of %d", len(got), len(want))
		}
		if want := text[:100]; shortEnds && got != want {
			t.Errorf("with shortEnds: read %d bytes, want the first read's %d", len(got), len(want))
		}
	}
}
