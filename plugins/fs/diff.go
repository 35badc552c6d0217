package main

import "github.com/agenthost/agenthost/internal/textdiff"

// The diff edit_file answers is internal/textdiff's, which the host's
// approval preview shares.

// replacement is one replaced span: before[Start:End] became
// after[NewStart:NewEnd].
type replacement = textdiff.Span

// unifiedDiff returns the unified diff (--- a/NAME, +++ b/NAME, hunks with
// three lines of context) of before and after, which differ only in the
// replaced spans, given in order.
func unifiedDiff(name, before, after string, spans []replacement) string {
	return textdiff.UnifiedSpans(name, before, after, spans)
}

// lineStarts returns the byte offset of each line of text, and of the
// empty line after a final newline.
func lineStarts(text string) []int { return textdiff.LineStarts(text) }

// lineOf returns the 0-based index of the line holding byte offset x.
func lineOf(starts []int, x int) int { return textdiff.LineOf(starts, x) }
