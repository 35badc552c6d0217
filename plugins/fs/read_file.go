package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
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

type readFileInput struct {
	Path        string `json:"path" jsonschema:"Path of the file to read."`
	Encoding    string `json:"encoding,omitempty" jsonschema:"How to return the content: utf-8 (the default) for text, base64 for binary files (up to 10 MiB)."`
	Offset      int    `json:"offset,omitempty" jsonschema:"1-based line to start reading at (utf-8 only). Default 1."`
	Limit       int    `json:"limit,omitempty" jsonschema:"Maximum number of lines to return (utf-8 only). Default: to the end of the file, up to 256 KiB of text."`
	LineNumbers bool   `json:"line_numbers,omitempty" jsonschema:"Prefix each line with its 1-based line number and a tab, like cat -n (utf-8 only). Default false."`
}

var readFile = checked(sdk.NewTool(sdk.Info{
	Name: "read_file",
	Description: "Read a file and return its contents. Text is returned as utf-8, at most 256 KiB per call: a longer file is cut at a line boundary with a note giving the offset to read on from. " +
		"Use offset and limit to read part of a long text file by lines, line_numbers to number the lines, and encoding base64 for binary files.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in readFileInput) (string, error) {
	encoding, err := normalizeEncoding(in.Encoding)
	if err != nil {
		return "", err
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", errors.New("offset and limit must not be negative")
	}
	if encoding == "base64" && (in.Offset != 0 || in.Limit != 0 || in.LineNumbers) {
		return "", errors.New("offset, limit and line_numbers apply to utf-8 text; read the whole file with base64")
	}
	_, p, err := w.ResolveFollow(in.Path, true)
	if err != nil {
		return "", err
	}
	f, size, err := workspace.OpenRegular(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if encoding == "base64" {
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
	}
	return readText(ctx, f, textsafe.Name(p.Arg), size, in)
})))

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
// maxTextOutput bytes read into memory beyond one buffer.
func readText(ctx context.Context, f *os.File, arg string, size int64, in readFileInput) (string, error) {
	notText := func() error {
		return fmt.Errorf("%s is not utf-8 text (%d bytes): read it with encoding base64", arg, size)
	}
	// The buffer holds the whole of a small file, and never less than
	// the head that is sniffed.
	br := bufio.NewReaderSize(f, int(min(max(size+1, sniffSize), readBuffer)))
	head, _ := br.Peek(sniffSize)
	if looksBinary(head) {
		return "", notText()
	}
	offset := max(in.Offset, 1)
	for line := 1; line < offset; line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		_, n, err := readLine(br, nil, -1)
		if err != nil {
			return "", fmt.Errorf("%s: %s", arg, workspace.Reason(err))
		}
		if n == 0 {
			return "", fmt.Errorf("offset %d is past the end of the file (%d lines)", in.Offset, line-1)
		}
	}
	var out bytes.Buffer
	var scratch []byte
	shown, shownBytes := 0, int64(0)
	var note string
	for in.Limit == 0 || shown < in.Limit {
		number := offset + shown
		prefix := ""
		if in.LineNumbers {
			prefix = fmt.Sprintf("%6d\t", number)
		}
		room := maxTextOutput - out.Len() - len(prefix)
		var n int
		var err error
		scratch, n, err = readLine(br, scratch[:0], max(room, 0))
		if err != nil {
			return "", fmt.Errorf("%s: %s", arg, workspace.Reason(err))
		}
		if n == 0 {
			if shown == 0 && in.Offset > 0 {
				return "", fmt.Errorf("offset %d is past the end of the file (%d lines)", in.Offset, number-1)
			}
			break
		}
		if n > room {
			if shown == 0 {
				// One line longer than the cap: show its head.
				cut := validPrefix(scratch[:max(room, 0)])
				if !isText(cut) {
					return "", notText()
				}
				out.WriteString(prefix)
				out.Write(cut)
				note = fmt.Sprintf("[Line %d alone is longer than the 256 KiB that read_file returns: its first %d bytes are shown. The next line is at offset %d.]", number, len(cut), number+1)
			} else {
				note = fmt.Sprintf("[Output capped at 256 KiB: showed lines %d-%d (%d bytes) of a %d-byte file. To read on, call read_file with offset %d.]", offset, number-1, shownBytes, size, number)
			}
			break
		}
		if !isText(scratch) {
			return "", notText()
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
	return out.String(), nil
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
