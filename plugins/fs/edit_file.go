package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

// maxEditFile is the largest file edit_file edits.
const maxEditFile = 10 << 20

type editFileInput struct {
	Path       string `json:"path" jsonschema:"Path of the text file to edit."`
	OldString  string `json:"old_string" jsonschema:"The exact text to replace, whitespace and indentation included. It must occur exactly once in the file unless replace_all is true: include enough surrounding lines to make it unique."`
	NewString  string `json:"new_string" jsonschema:"The text to put in its place. It must differ from old_string."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_string. Default false."`
}

var editFile = checked(sdk.NewTool(sdk.Info{
	Name: "edit_file",
	Description: "Edit a text file by exact string replacement: old_string is replaced by new_string. old_string must occur exactly once unless replace_all is true; " +
		"when it is not found the answer shows the most similar lines, and when it occurs more than once the answer gives the line numbers. " +
		"The file is written atomically and keeps its permissions; the answer is a unified diff of the change. Files with CRLF line endings keep them.",
	Annotations: sdk.Annotations{Destructive: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in editFileInput) (string, error) {
	if in.OldString == "" {
		return "", errors.New("old_string is empty: give the exact text to replace (use write_file to create a file)")
	}
	if in.OldString == in.NewString {
		return "", errors.New("old_string and new_string are the same: there is nothing to change")
	}
	given, p, err := w.ResolveFollow(in.Path, true)
	if err != nil {
		return "", err
	}
	lk, err := lockRegular(ctx, p)
	if err != nil {
		return "", err
	}
	defer lk.Unlock()
	data, err := lk.Read(maxEditFile)
	if err != nil {
		return "", pathErr(p, err)
	}
	if len(data) > maxEditFile {
		return "", fmt.Errorf("%s is %d bytes or more: edit_file edits files up to %d bytes (10 MiB); use write_file", textsafe.Name(p.Arg), len(data), maxEditFile)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not utf-8 text (%d bytes): edit_file edits text files", textsafe.Name(p.Arg), len(data))
	}
	before := string(data)
	oldS, newS := in.OldString, in.NewString
	if usesCRLF(before) {
		// The model writes "\n"; the file has "\r\n" everywhere.
		oldS, newS = toCRLF(oldS), toCRLF(newS)
	}
	at := occurrences(before, oldS)
	switch {
	case len(at) == 0:
		return "", notFoundError(textsafe.Name(p.Arg), before, oldS)
	case len(at) > 1 && !in.ReplaceAll:
		return "", fmt.Errorf("old_string occurs %d times in %s, at lines %s: include more surrounding lines in old_string to pick one, or set replace_all to true to replace them all",
			len(at), p.Arg, lineList(before, at))
	}
	after, spans := replaceAt(before, oldS, newS, at)
	res, err := atomicfile.WriteFile(ctx, p.Root, p.Rel, []byte(after), atomicfile.Options{Base: lk})
	if err != nil {
		return "", workspace.WriteErr(p, err)
	}
	noun := "replacement"
	if len(at) > 1 {
		noun = "replacements"
	}
	name := textsafe.Name(given.Display())
	return fmt.Sprintf("Edited %s: %d %s%s\n%s", name, len(at), noun, linksNote(res), unifiedDiff(name, before, after, spans)), nil
})))

// lockRegular takes the edit lock of the regular file at p (see
// atomicfile.Lock), with errors that say plainly what is wrong.
func lockRegular(ctx context.Context, p workspace.Path) (*atomicfile.Locked, error) {
	lk, err := atomicfile.Lock(ctx, p.Root, p.Rel)
	if errors.Is(err, fs.ErrNotExist) && !workspace.IsEscape(err) {
		return nil, workspace.NotFoundError(p.Arg)
	}
	if err != nil {
		return nil, workspace.WriteErr(p, err)
	}
	info, err := lk.Info()
	if err != nil {
		lk.Unlock()
		return nil, pathErr(p, err)
	}
	switch {
	case info.IsDir():
		lk.Unlock()
		return nil, fmt.Errorf("%s is a directory, not a file", textsafe.Name(p.Arg))
	case !info.Mode().IsRegular():
		lk.Unlock()
		return nil, fmt.Errorf("%s is a %s, not a regular file", textsafe.Name(p.Arg), workspace.Kind(info.Mode()))
	}
	return lk, nil
}

// occurrences returns the offsets of the non-overlapping occurrences of s
// in text, left to right, as strings.Replace would replace them.
func occurrences(text, s string) []int {
	var at []int
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(s)
	}
}

// replaceAt replaces old by new at the offsets at, and returns the text
// with the spans that changed.
func replaceAt(text, old, new string, at []int) (string, []replacement) {
	var b strings.Builder
	spans := make([]replacement, 0, len(at))
	last := 0
	for _, i := range at {
		b.WriteString(text[last:i])
		start := b.Len()
		b.WriteString(new)
		spans = append(spans, replacement{Start: i, End: i + len(old), NewStart: start, NewEnd: b.Len()})
		last = i + len(old)
	}
	b.WriteString(text[last:])
	return b.String(), spans
}

// usesCRLF reports whether text ends its lines with "\r\n", all of them.
func usesCRLF(text string) bool {
	n := strings.Count(text, "\n")
	return n > 0 && strings.Count(text, "\r\n") == n
}

// toCRLF makes every line ending of s "\r\n".
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// lineList names the lines holding the offsets: "3, 7 and 12".
func lineList(text string, offsets []int) string {
	starts := lineStarts(text)
	const most = 20
	var nums []string
	for _, o := range offsets[:min(len(offsets), most)] {
		nums = append(nums, fmt.Sprint(lineOf(starts, o)+1))
	}
	if len(offsets) > most {
		return strings.Join(nums, ", ") + fmt.Sprintf(" and %d more", len(offsets)-most)
	}
	if len(nums) == 1 {
		return nums[0]
	}
	return strings.Join(nums[:len(nums)-1], ", ") + " and " + nums[len(nums)-1]
}

// notFoundError is edit_file's answer to an old_string that is not in the
// file: the most similar lines, numbered, to fix it by.
func notFoundError(arg, text, old string) error {
	if text == "" {
		return fmt.Errorf("old_string was not found in %s: the file is empty", arg)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	start, n, score := closestLines(lines, old, maxWindowWork)
	var shown strings.Builder
	for i := start; i < start+n; i++ {
		fmt.Fprintf(&shown, "%6d\t%s\n", i+1, lines[i])
	}
	where := fmt.Sprintf("line %d", start+1)
	if n > 1 {
		where = fmt.Sprintf("lines %d-%d", start+1, start+n)
	}
	if score == 1 {
		return fmt.Errorf("old_string was not found in %s, but %s match it apart from leading or trailing whitespace:\n%sCopy the whitespace and indentation exactly as the file has it",
			arg, where, shown.String())
	}
	return fmt.Errorf("old_string was not found in %s. The most similar text is at %s (%.0f%% alike):\n%sMake old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text",
		arg, where, score*100, shown.String())
}
