package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

// maxReadPaths is the most files one read_multiple_files call reads.
const maxReadPaths = 100

type readMultipleFilesInput struct {
	Paths       []string `json:"paths" jsonschema:"Paths of the text files to read, 1 to 100, in the order their contents are wanted."`
	LineNumbers bool     `json:"line_numbers,omitempty" jsonschema:"Prefix each line with its 1-based line number and a tab, like cat -n. Default false."`
}

var readMultipleFiles = checked(sdk.NewTool(sdk.Info{
	Name:  "read_multiple_files",
	Title: "Read multiple files",
	Description: "Read several text files in one call, in the order given: each file's content follows a header line \"==> PATH <==\", PATH as given. " +
		"Each file is read as read_file reads it (utf-8 text; binary files, directories and FIFOs are refused), and a file that fails shows its error under its header instead: " +
		"the call fails only when every file fails. The answer holds at most 256 KiB of text in all: a file that does not fit is cut at a line boundary with a note giving the read_file call that reads on, " +
		"and the files after it are left out, named in a last note. Use line_numbers to number the lines.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in readMultipleFilesInput) (string, error) {
	switch n := len(in.Paths); {
	case n == 0:
		return "", errors.New("paths is empty: give 1 to 100 paths")
	case n > maxReadPaths:
		return "", fmt.Errorf("%d paths is too many: give at most %d per call", n, maxReadPaths)
	}
	var out strings.Builder
	var errs []error
	var cut, leftOut []string
	for _, arg := range in.Paths {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		name := textsafe.Name(arg)
		header := "==> " + name + " <==\n"
		if out.Len() > 0 {
			header = "\n" + header
		}
		room := maxTextOutput - out.Len() - len(header)
		if room <= 0 || len(cut) > 0 {
			leftOut = append(leftOut, name)
			continue
		}
		out.WriteString(header)
		text, capped, err := readTextFile(ctx, w, arg, readFileInput{LineNumbers: in.LineNumbers}, textCap{bytes: room, readOn: arg})
		switch {
		case capped:
			cut = append(cut, name)
		case err == nil:
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "", err
		default:
			errs = append(errs, err)
			text = "error: " + err.Error()
		}
		out.WriteString(text)
		if text != "" && !strings.HasSuffix(text, "\n") {
			out.WriteByte('\n')
		}
	}
	if len(errs) == len(in.Paths) {
		return "", errors.Join(errs...)
	}
	if len(cut) > 0 || len(leftOut) > 0 {
		out.WriteString("\n" + capNote(cut, leftOut))
	}
	return out.String(), nil
})))

// capNote is the last note of an answer that the cap cut: which file was
// cut and which were left out.
func capNote(cut, leftOut []string) string {
	var b strings.Builder
	b.WriteString("[Output capped at 256 KiB in all:")
	if len(cut) > 0 {
		fmt.Fprintf(&b, " %s was cut short (its note says how to read on).", cut[0])
	}
	if len(leftOut) > 0 {
		verb := "was"
		if len(leftOut) > 1 {
			verb = "were"
		}
		fmt.Fprintf(&b, " %s %s left out: read %s with read_file, or with another read_multiple_files call.", nameList(leftOut), verb, pronoun(len(leftOut)))
	}
	b.WriteString("]\n")
	return b.String()
}

// nameList joins names: "a", "a and b", "a, b and c".
func nameList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// pronoun is "it" for one file, "them" for more.
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// multiLongLineNote is read_multiple_files' note under the head of a
// line longer than the room its file had, of which shown bytes are
// shown.
func multiLongLineNote(tc textCap, number, shown int) string {
	return fmt.Sprintf("[Line %d is longer than the %d bytes left of the 256 KiB that read_multiple_files returns in all: its first %d bytes are shown. To read on, call read_file with path %q and offset %d.]",
		number, tc.bytes, shown, tc.readOn, number)
}

// multiCappedNote is read_multiple_files' note under a file cut by the
// cap: lines first to next-1 were shown, of shownBytes bytes.
func multiCappedNote(tc textCap, first, next int, shownBytes, size int64) string {
	return fmt.Sprintf("[Output capped at 256 KiB in all: showed lines %d-%d (%d bytes) of a %d-byte file. To read on, call read_file with path %q and offset %d.]",
		first, next-1, shownBytes, size, tc.readOn, next)
}
