package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

const (
	// maxTextOutput caps the text read_file returns: the selection is cut
	// at a line boundary before it passes 256 KiB, line-number prefixes
	// included, and a note says how to read on.
	maxTextOutput = 256 << 10
	// maxBase64File is the largest file read_file returns as base64 (its
	// encoding is a third larger). Larger files are refused: base64 cannot
	// be read in parts.
	maxBase64File = 10 << 20
	// sniffSize is how much of a file is checked for NUL bytes and invalid
	// utf-8 before it is read as text.
	sniffSize = 8 << 10
	// readBuffer is the most read_file reads a file through at once.
	readBuffer = 64 << 10
)

// textCap is how much text one read returns, and whose notes say how to
// read on: read_file's own, or those of read_multiple_files, which name
// the file in the read_file call that reads on.
type textCap struct {
	// bytes is the most text returned, line-number prefixes included.
	bytes int
	// readOn is empty for read_file; for read_multiple_files it is the
	// path as the model gave it, for the notes to name.
	readOn string
}

// readFileCap is read_file's cap: 256 KiB.
var readFileCap = textCap{bytes: maxTextOutput}

type readFileInput struct {
	Path        string `json:"path" jsonschema:"Path of the file to read."`
	Encoding    string `json:"encoding,omitempty" jsonschema:"How to return the content: utf-8 (the default) for text, base64 for binary files (up to 10 MiB)."`
	Offset      int    `json:"offset,omitempty" jsonschema:"1-based line to start reading at (utf-8 only). Default 1."`
	Limit       int    `json:"limit,omitempty" jsonschema:"Maximum number of lines to return (utf-8 only). Default: to the end of the file, up to 256 KiB of text."`
	Tail        int    `json:"tail,omitempty" jsonschema:"Read the last N lines of the file (utf-8 only), without reading the rest of it: the selection starts N lines before the end (the whole file when it has fewer), and limit, if given, takes its first lines (tail 100 with limit 10: lines 100 to 91 from the end). Not with offset. A newline that ends the file does not start another line."`
	LineNumbers bool   `json:"line_numbers,omitempty" jsonschema:"Prefix each line with its 1-based line number and a tab, like cat -n (utf-8 only). Default false. With tail the lines are numbered from the end, -1 the last: line -K is where tail K starts."`
}

var readFile = checked(sdk.NewTool(sdk.Info{
	Name:  "read_file",
	Title: "Read file",
	Description: "Read a file and return its contents. Text is returned as utf-8, at most 256 KiB per call: a longer file is cut at a line boundary with a note giving the offset to read on from. " +
		"Use offset and limit to read part of a long text file by lines, tail to read its last lines (cheap however large the file), line_numbers to number the lines, and encoding base64 for binary files.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in readFileInput) (string, error) {
	encoding, err := normalizeEncoding(in.Encoding)
	if err != nil {
		return "", err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", errors.New("offset and limit must not be negative")
	}
	if in.Tail < 0 {
		return "", errors.New("tail must not be negative: tail N reads the last N lines")
	}
	if in.Offset != 0 && in.Tail != 0 {
		return "", errors.New("offset and tail cannot be combined: offset counts lines from the start, tail from the end")
	}
	if encoding == "base64" && (in.Offset != 0 || in.Limit != 0 || in.Tail != 0 || in.LineNumbers) {
		return "", errors.New("offset, limit, tail and line_numbers apply to utf-8 text; read the whole file with base64")
	}
	if encoding == "utf-8" {
		text, _, err := readTextFile(ctx, w, in.Path, in, readFileCap)
		return text, err
	}
	f, size, p, err := openRegular(w, in.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if size > maxBase64File {
		return "", fmt.Errorf("%s is %d bytes: base64 reads files up to %d bytes (10 MiB)", textsafe.Name(p.Arg), size, maxBase64File)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBase64File+1))
	if err != nil {
		return "", pathErr(p, err)
	}
	if len(data) > maxBase64File {
		return "", fmt.Errorf("%s grew past %d bytes while it was read: base64 reads files up to 10 MiB", textsafe.Name(p.Arg), maxBase64File)
	}
	return base64.StdEncoding.EncodeToString(data), nil
})))

// openRegular places arg in w's roots, follows its symbolic links within
// them, and opens it for reading if it is a regular file: a directory,
// FIFO, socket or device is refused without blocking
// (workspace.OpenRegular). It returns the file, its size and its path.
func openRegular(w *workspace.Workspace, arg string) (*os.File, int64, workspace.Path, error) {
	_, p, err := w.ResolveFollow(arg, true)
	if err != nil {
		return nil, 0, p, err
	}
	f, size, err := workspace.OpenRegular(p)
	return f, size, p, err
}

// readTextFile reads the text of the file arg names, the lines in
// selects, as read_file does: confined to w's roots (openRegular),
// refused unless it is utf-8 text, and cut at a line boundary to fit
// tc. It reports whether the cap cut the text, which then ends with a
// note saying how to read on.
func readTextFile(ctx context.Context, w *workspace.Workspace, arg string, in readFileInput, tc textCap) (string, bool, error) {
	f, size, p, err := openRegular(w, arg)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return readText(ctx, f, textsafe.Name(p.Arg), size, in, tc)
}

func normalizeEncoding(e string) (string, error) {
	switch strings.ToLower(e) {
	case "", "utf-8", "utf8":
		return "utf-8", nil
	case "base64":
		return "base64", nil
	}
	return "", fmt.Errorf("unsupported encoding %q: use \"utf-8\" or \"base64\"", e)
}

// readText returns the lines of f that in selects, with no more than
// tc.bytes read into memory beyond one buffer. With in.Tail it
// finds where the selection starts by reading back from the end of the
// file (tailStart), so the lines before it are never read. It reports
// whether the cap cut the selection, which then ends with a note saying
// how to read on.
func readText(ctx context.Context, f io.ReaderAt, arg string, size int64, in readFileInput, tc textCap) (string, bool, error) {
	notText := func() error {
		how := "read it with encoding base64"
		if tc.readOn != "" {
			how = "read it with read_file and encoding base64"
		}
		return fmt.Errorf("%s is not utf-8 text (%d bytes): %s", arg, size, how)
	}
	// The selection: from start, first its line number (negative with
	// tail: counted from the end), at most limit lines (0: no limit).
	start, first, limit := int64(0), max(in.Offset, 1), in.Limit
	// A tail reads the file as it was measured; otherwise to its end.
	end := int64(math.MaxInt64)
	if in.Tail > 0 {
		var lines int
		var err error
		start, lines, err = tailStart(ctx, f, size, in.Tail)
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", arg, err)
		}
		first, end = -lines, size
		if limit == 0 || limit > lines {
			limit = lines
		}
		if lines == 0 {
			return "", false, nil
		}
	}
	// The buffer holds the whole of a small selection, and never less
	// than the head that is sniffed.
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), int(min(max(size-start+1, sniffSize), readBuffer)))
	var head []byte
	if start == 0 {
		head, _ = br.Peek(sniffSize)
	} else {
		// The file's head is sniffed wherever the selection starts: a
		// file is text or not whatever part of it is read.
		head = make([]byte, min(size, sniffSize))
		n, err := f.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, fmt.Errorf("%s: %s", arg, workspace.Reason(err))
		}
		head = head[:n]
	}
	if looksBinary(head) {
		return "", false, notText()
	}
	for line := 1; line < first; line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		_, n, err := readLine(br, nil, -1)
		if err != nil {
			return "", false, fmt.Errorf("%s: %s", arg, workspace.Reason(err))
		}
		if n == 0 {
			return "", false, fmt.Errorf("offset %d is past the end of the file (%d lines)", in.Offset, line-1)
		}
	}
	var out bytes.Buffer
	var scratch []byte
	shown, shownBytes := 0, int64(0)
	var note string
	for limit == 0 || shown < limit {
		number := first + shown
		prefix := ""
		if in.LineNumbers {
			prefix = fmt.Sprintf("%6d\t", number)
		}
		room := tc.bytes - out.Len() - len(prefix)
		var n int
		var err error
		scratch, n, err = readLine(br, scratch[:0], max(room, 0))
		if err != nil {
			return "", false, fmt.Errorf("%s: %s", arg, workspace.Reason(err))
		}
		if n == 0 {
			if shown == 0 && in.Offset > 0 {
				return "", false, fmt.Errorf("offset %d is past the end of the file (%d lines)", in.Offset, number-1)
			}
			break
		}
		if n > room {
			if shown == 0 {
				// One line longer than the cap: show its head.
				cut := validPrefix(scratch[:max(room, 0)])
				if !isText(cut) {
					return "", false, notText()
				}
				out.WriteString(prefix)
				out.Write(cut)
				note = tc.longLineNote(number, len(cut), in, limit)
			} else {
				note = tc.cappedNote(first, number, shownBytes, size, in, limit, shown)
			}
			break
		}
		if !isText(scratch) {
			return "", false, notText()
		}
		out.WriteString(prefix)
		out.Write(scratch)
		shown++
		shownBytes += int64(n)
	}
	if note != "" {
		if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
			out.WriteByte('\n')
		}
		out.WriteString(note)
	}
	return out.String(), note != "", nil
}

// longLineNote is the note under the head of a line longer than the cap,
// line number, of which shown bytes are shown.
func (tc textCap) longLineNote(number, shown int, in readFileInput, limit int) string {
	if tc.readOn != "" {
		return multiLongLineNote(tc, number, shown)
	}
	if in.Tail == 0 {
		return fmt.Sprintf("[Line %d alone is longer than the 256 KiB that read_file returns: its first %d bytes are shown. The next line is at offset %d.]", number, shown, number+1)
	}
	head := fmt.Sprintf("[Line %d (counted from the end) alone is longer than the 256 KiB that read_file returns: its first %d bytes are shown.", number, shown)
	if number == -1 || limit == 1 {
		return head + "]"
	}
	return head + " To read on, call read_file with " + tailArgs(-number-1, in, limit-1) + ".]"
}

// cappedNote is the note under a selection cut by the cap: lines first
// to next-1 were shown, shown lines of shownBytes bytes.
func (tc textCap) cappedNote(first, next int, shownBytes, size int64, in readFileInput, limit, shown int) string {
	if tc.readOn != "" {
		return multiCappedNote(tc, first, next, shownBytes, size)
	}
	if in.Tail == 0 {
		return fmt.Sprintf("[Output capped at 256 KiB: showed lines %d-%d (%d bytes) of a %d-byte file. To read on, call read_file with offset %d.]", first, next-1, shownBytes, size, next)
	}
	return fmt.Sprintf("[Output capped at 256 KiB: showed lines %d to %d counted from the end (%d lines, %d bytes) of a %d-byte file. To read on, call read_file with %s.]",
		first, next-1, shown, shownBytes, size, tailArgs(-next, in, limit-shown))
}

// tailArgs are the arguments that read on from the line n from the end,
// rest lines at most when the call had a limit.
func tailArgs(n int, in readFileInput, rest int) string {
	if in.Limit == 0 || rest >= n {
		return fmt.Sprintf("tail %d", n)
	}
	return fmt.Sprintf("tail %d and limit %d", n, rest)
}

// tailStart finds where the last n lines of r, size bytes long, start,
// reading back from the end in blocks of readBuffer bytes until it has
// passed n line ends. It returns the offset of the first of those lines
// and how many lines there are from it to the end: n, or fewer when the
// file holds fewer (then the offset is 0). A newline that ends the file
// ends its last line and does not start another.
func tailStart(ctx context.Context, r io.ReaderAt, size int64, n int) (start int64, lines int, err error) {
	if size == 0 {
		return 0, 0, nil
	}
	buf := make([]byte, min(size, readBuffer))
	found := 0
	for pos := size; pos > 0; {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		lo := max(pos-readBuffer, 0)
		b := buf[:pos-lo]
		if _, err := r.ReadAt(b, lo); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, errors.New("the file shrank while it was read; read it again")
			}
			return 0, 0, errors.New(workspace.Reason(err))
		}
		for j := len(b); ; {
			i := bytes.LastIndexByte(b[:j], '\n')
			if i < 0 {
				break
			}
			j = i
			if lo+int64(i) == size-1 {
				continue // the newline that ends the file
			}
			if found++; found == n {
				return lo + int64(i) + 1, n, nil
			}
		}
		pos = lo
	}
	// Fewer than n lines: the first has no newline before it.
	return 0, found + 1, nil
}

// readLine reads the next line of br, its newline included, appending
// it to dst. It returns the line's length, 0 at the end of the input. With
// keep >= 0 it stops once it has more than keep bytes, and then returns
// keep+1 bytes and n = keep+1: a cut line, the rest unread. With keep < 0
// it reads the whole line however long, keeping nothing.
func readLine(br *bufio.Reader, dst []byte, keep int) ([]byte, int, error) {
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if keep >= 0 {
			take := min(keep+1-len(dst), len(chunk))
			dst = append(dst, chunk[:take]...)
			if len(dst) > keep {
				return dst, len(dst), nil
			}
		}
		n += len(chunk)
		switch {
		case err == nil, errors.Is(err, io.EOF):
			return dst, n, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return dst, n, err
		}
	}
}

// looksBinary reports whether the head of a file is not text (a rune cut
// by the end of head is allowed).
func looksBinary(head []byte) bool {
	return !isText(validPrefix(head))
}

// isText reports whether b is text: utf-8 without NUL bytes.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// validPrefix drops an incomplete utf-8 sequence at the end of b: at most
// the last three bytes, when they start a rune that b cuts.
func validPrefix(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
