package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

// maxEditFile is the largest file edit_file edits, and makes: a list of
// edits that would grow the text past it (a replace_all that doubles it,
// again and again) is refused before it is applied.
const maxEditFile = 10 << 20

// maxReplacements bounds the replacements of one call, which each cost
// the diff a span.
const maxReplacements = 100_000

type editFileInput struct {
	Path       string     `json:"path" jsonschema:"Path of the text file to edit."`
	OldString  *string    `json:"old_string,omitempty" jsonschema:"One edit: the exact text to replace, whitespace and indentation included. It must occur exactly once in the file unless replace_all is true: include enough surrounding lines to make it unique. Give it with new_string, or give edits instead."`
	NewString  *string    `json:"new_string,omitempty" jsonschema:"One edit: the text to put in place of old_string (empty to delete it). It must differ from old_string."`
	ReplaceAll bool       `json:"replace_all,omitempty" jsonschema:"One edit: replace every occurrence of old_string. Default false."`
	Edits      []editSpec `json:"edits,omitempty" jsonschema:"Several edits, instead of old_string and new_string: applied in order, each to the text the edits before it left, and written together or not at all."`
	DryRun     bool       `json:"dry_run,omitempty" jsonschema:"Check the edits and return the diff they would make, without writing the file. Default false."`
}

// editSpec is one edit of a list.
type editSpec struct {
	OldString  string `json:"old_string" jsonschema:"The exact text to replace, whitespace and indentation included, as the edits before this one left it. It must occur exactly once unless replace_all is true."`
	NewString  string `json:"new_string" jsonschema:"The text to put in its place (empty to delete it). It must differ from old_string."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_string. Default false."`
}

var editFile = checked(sdk.NewTool(sdk.Info{
	Name:  "edit_file",
	Title: "Edit file",
	Description: "Edit a text file by exact string replacement: old_string is replaced by new_string. old_string must occur exactly once unless replace_all is true; " +
		"when it is not found the answer shows the most similar lines, and when it occurs more than once the answer gives the line numbers. " +
		"For several changes in one call give edits, a list of {old_string, new_string, replace_all} applied in order, each to the result of the one before: " +
		"if any edit fails the answer names it and the file is left as it was. With dry_run the answer shows the diff and nothing is written. " +
		"The file is written atomically and keeps its permissions; the answer is a unified diff of the change. Files with CRLF line endings keep them.",
	Annotations: sdk.Annotations{Destructive: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in editFileInput) (string, error) {
	edits, err := editList(in)
	if err != nil {
		return "", err
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
	after, spans, count, err := applyEdits(before, edits, textsafe.Name(p.Arg))
	if err != nil {
		return "", err
	}
	name := textsafe.Name(given.Display())
	diff := unifiedDiff(name, before, after, spans)
	if in.DryRun {
		return fmt.Sprintf("Dry run, nothing was written: %s would be made in %s\n%s", editCount(len(edits), count), name, diff), nil
	}
	res, err := atomicfile.WriteFile(ctx, p.Root, p.Rel, []byte(after), atomicfile.Options{Base: lk})
	if err != nil {
		return "", workspace.WriteErr(p, err)
	}
	return fmt.Sprintf("Edited %s: %s%s\n%s", name, editCount(len(edits), count), linksNote(res), diff), nil
})))

// editList returns the edits a call asks for: its one edit (old_string,
// new_string, replace_all) or its list (edits), never both.
func editList(in editFileInput) ([]editSpec, error) {
	single := in.OldString != nil || in.NewString != nil || in.ReplaceAll
	switch {
	case in.Edits != nil && single:
		return nil, errors.New("give either old_string and new_string (one edit) or edits (a list), not both: put this edit in the list too")
	case in.Edits != nil && len(in.Edits) == 0:
		return nil, errors.New("edits is empty: give at least one {old_string, new_string}")
	case in.Edits != nil:
		for i, e := range in.Edits {
			if err := checkEdit(e); err != nil {
				return nil, fmt.Errorf("edit %d of %d: %w; nothing was written", i+1, len(in.Edits), err)
			}
		}
		return in.Edits, nil
	case in.OldString == nil && in.NewString == nil:
		return nil, errors.New("nothing to edit: give old_string and new_string, or edits for several changes")
	case in.OldString == nil:
		return nil, errors.New("old_string is missing: give the exact text to replace with new_string")
	case in.NewString == nil:
		return nil, errors.New("new_string is missing: give the text to put in place of old_string (an empty string deletes it)")
	}
	e := editSpec{OldString: *in.OldString, NewString: *in.NewString, ReplaceAll: in.ReplaceAll}
	if err := checkEdit(e); err != nil {
		return nil, err
	}
	return []editSpec{e}, nil
}

// checkEdit refuses an edit that cannot change anything.
func checkEdit(e editSpec) error {
	if e.OldString == "" {
		return errors.New("old_string is empty: give the exact text to replace (use write_file to create a file)")
	}
	if e.OldString == e.NewString {
		return errors.New("old_string and new_string are the same: there is nothing to change")
	}
	return nil
}

// applyEdits applies edits to text in order, each to the text the ones
// before it left, and returns the result, the spans where it differs
// from text and the number of replacements made. An edit that fails
// fails them all, with an error that names it when there are several;
// arg names the file in errors.
func applyEdits(text string, edits []editSpec, arg string) (string, []replacement, int, error) {
	crlf := usesCRLF(text)
	cur := text
	var spans []replacement
	count := 0
	for i, e := range edits {
		oldS, newS := e.OldString, e.NewString
		if crlf {
			// The model writes "\n"; the file has "\r\n" everywhere.
			oldS, newS = toCRLF(oldS), toCRLF(newS)
		}
		at := occurrences(cur, oldS, maxReplacements-count+1)
		var err error
		switch {
		case len(at) == 0:
			err = notFoundError(arg, cur, oldS)
		case len(at) > 1 && !e.ReplaceAll:
			err = fmt.Errorf("old_string occurs %d times in %s, at lines %s: include more surrounding lines in old_string to pick one, or set replace_all to true to replace them all",
				len(at), arg, lineList(cur, at))
		case count+len(at) > maxReplacements:
			err = fmt.Errorf("the edits make more than %d replacements in %s, edit_file's limit for one call: replace fewer at a time, or write the file with write_file", maxReplacements, arg)
		case len(cur)+len(at)*(len(newS)-len(oldS)) > maxEditFile:
			err = fmt.Errorf("the edit would make %s %d bytes, more than the %d bytes (10 MiB) edit_file makes; nothing was written", arg, len(cur)+len(at)*(len(newS)-len(oldS)), maxEditFile)
		}
		if err != nil {
			return "", nil, 0, editError(i, len(edits), err)
		}
		next, step := replaceAt(cur, oldS, newS, at)
		spans = composeSpans(spans, step)
		cur = next
		count += len(at)
	}
	if cur == text {
		return "", nil, 0, fmt.Errorf("the edits leave %s as it was: there is nothing to change, and nothing was written", arg)
	}
	return cur, spans, count, nil
}

// editError is the error of edit i (0-based) of n: err itself when it
// is the only one, else err naming the edit, saying that line numbers
// count in the text the edits before it left, and that nothing was
// written.
func editError(i, n int, err error) error {
	switch {
	case n == 1:
		return err
	case i == 0:
		return fmt.Errorf("edit 1 of %d failed, so nothing was written: %w", n, err)
	case i == 1:
		return fmt.Errorf("edit 2 of %d failed, so nothing was written (it applies to the text as edit 1 left it): %w", n, err)
	}
	return fmt.Errorf("edit %d of %d failed, so nothing was written (it applies to the text as edits 1-%d left it): %w", i+1, n, i, err)
}

// editCount says what the edits did: "1 replacement", "3 replacements",
// or with several edits "2 edits, 3 replacements".
func editCount(edits, replacements int) string {
	s := fmt.Sprintf("%d replacement", replacements)
	if replacements != 1 {
		s += "s"
	}
	if edits > 1 {
		s = fmt.Sprintf("%d edits, %s", edits, s)
	}
	return s
}

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
func occurrences(text, s string, limit int) []int {
	var at []int
	for i := 0; len(at) < limit; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(s)
	}
	return at
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

// composeSpans returns the spans where c differs from a, given the spans
// where b differs from a (prev: Start, End in a; NewStart, NewEnd in b)
// and those where c differs from b (next: Start, End in b; NewStart,
// NewEnd in c), each list in order and without overlaps. Spans of the
// two that overlap or touch in b become one; so the diff of a and c
// compares only the lines around the edits, however many there were.
func composeSpans(prev, next []replacement) []replacement {
	type interval struct{ lo, hi int }
	in := make([]interval, 0, len(prev)+len(next))
	for _, s := range prev {
		in = append(in, interval{s.NewStart, s.NewEnd})
	}
	for _, s := range next {
		in = append(in, interval{s.Start, s.End})
	}
	slices.SortFunc(in, func(x, y interval) int { return cmp.Or(cmp.Compare(x.lo, y.lo), cmp.Compare(x.hi, y.hi)) })
	// toA maps offsets of b to a through prev, toC to c through next;
	// each is asked of offsets in increasing order.
	toA := shifter{spans: prev, from: func(s replacement) (int, int) { return s.NewStart, s.NewEnd }, growth: func(s replacement) int { return (s.End - s.Start) - (s.NewEnd - s.NewStart) }}
	toC := shifter{spans: next, from: func(s replacement) (int, int) { return s.Start, s.End }, growth: func(s replacement) int { return (s.NewEnd - s.NewStart) - (s.End - s.Start) }}
	var out []replacement
	for i := 0; i < len(in); {
		lo, hi := in[i].lo, in[i].hi
		for i++; i < len(in) && in[i].lo <= hi; i++ {
			hi = max(hi, in[i].hi)
		}
		start, newStart := toA.left(lo), toC.left(lo)
		out = append(out, replacement{Start: start, End: toA.right(hi), NewStart: newStart, NewEnd: toC.right(hi)})
	}
	return out
}

// shifter maps offsets of a text to another text that differs from it in
// spans, for offsets outside them and the bounds of merged spans, asked
// in increasing order.
type shifter struct {
	spans  []replacement
	from   func(replacement) (lo, hi int) // a span's bounds in the text mapped from
	growth func(replacement) int          // how much longer the span is in the other text
	done   int                            // spans passed
	shift  int                            // the growth of those
}

// left maps x as the start of a merged span: the spans that end by x are
// passed, but not an empty one at x, which the merged span holds.
func (s *shifter) left(x int) int {
	for s.done < len(s.spans) {
		lo, hi := s.from(s.spans[s.done])
		if hi > x || lo == x {
			break
		}
		s.shift += s.growth(s.spans[s.done])
		s.done++
	}
	return x + s.shift
}

// right maps x as the end of a merged span: every span that ends by x is
// passed.
func (s *shifter) right(x int) int {
	for s.done < len(s.spans) {
		if _, hi := s.from(s.spans[s.done]); hi > x {
			break
		}
		s.shift += s.growth(s.spans[s.done])
		s.done++
	}
	return x + s.shift
}
