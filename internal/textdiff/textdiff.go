// Package textdiff writes unified diffs of texts, line by line, as diff -u
// does: the diff of two whole texts (Unified), and the diff of an edit
// whose replaced spans are known (UnifiedSpans), which compares only the
// lines around them and so costs little however long the text.
package textdiff

import (
	"fmt"
	"sort"
	"strings"
)

// Context is the number of unchanged lines around each change in a hunk,
// as diff -u.
const Context = 3

// maxLCSCells bounds the table of the line diff inside one changed region;
// larger regions are shown as all removed, then all added.
const maxLCSCells = 1 << 20

// Span is one replaced span: before[Start:End] became
// after[NewStart:NewEnd].
type Span struct {
	Start, End       int
	NewStart, NewEnd int
}

// op is one line of a diff: ' ' kept, '-' removed, '+' added. line keeps
// its newline, if it has one.
type op struct {
	kind byte
	line string
}

// Unified returns the unified diff (--- a/NAME, +++ b/NAME, hunks with
// three lines of context) that turns before into after, or "" when they
// are the same. Empty text has no lines: the diff of a new file adds all
// of its lines.
func Unified(name, before, after string) string {
	if before == after {
		return ""
	}
	n := min(len(before), len(after))
	p := 0
	for p < n && before[p] == after[p] {
		p++
	}
	s := 0
	for s < n-p && before[len(before)-1-s] == after[len(after)-1-s] {
		s++
	}
	return UnifiedSpans(name, before, after, []Span{{Start: p, End: len(before) - s, NewStart: p, NewEnd: len(after) - s}})
}

// UnifiedSpans returns the unified diff of before and after, which differ
// only in the replaced spans, given in order. Only the lines around those
// spans are compared.
func UnifiedSpans(name, before, after string, spans []Span) string {
	ops := diffOps(before, after, spans)
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	writeHunks(&b, ops)
	return b.String()
}

// diffOps returns the line operations that turn before into after.
func diffOps(before, after string, spans []Span) []op {
	a, b := SplitLines(before), SplitLines(after)
	aStarts, bStarts := LineStarts(before), LineStarts(after)
	var ops []op
	ai := 0 // lines of a written so far
	for i := 0; i < len(spans); {
		// A region: from the line holding the span's start to the line
		// holding its end. The text before the first line and after the
		// last is the same on both sides.
		a0, a1 := LineOf(aStarts, spans[i].Start), LineOf(aStarts, spans[i].End)+1
		b0, b1 := LineOf(bStarts, spans[i].NewStart), LineOf(bStarts, spans[i].NewEnd)+1
		i++
		for i < len(spans) && LineOf(aStarts, spans[i].Start) < a1 {
			a1 = LineOf(aStarts, spans[i].End) + 1
			b1 = LineOf(bStarts, spans[i].NewEnd) + 1
			i++
		}
		a1, b1 = min(a1, len(a)), min(b1, len(b))
		for ; ai < a0; ai++ {
			ops = append(ops, op{' ', a[ai]})
		}
		ops = append(ops, lineDiff(a[a0:a1], b[b0:b1])...)
		ai = a1
	}
	for ; ai < len(a); ai++ {
		ops = append(ops, op{' ', a[ai]})
	}
	return ops
}

// lineDiff diffs two short runs of lines: common lines at either end are
// kept, and the middle is a longest-common-subsequence diff when it is
// small enough.
func lineDiff(a, b []string) []op {
	var head, tail []op
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, op{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append(tail, op{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	ops := head
	if (len(a)+1)*(len(b)+1) <= maxLCSCells {
		ops = append(ops, lcsDiff(a, b)...)
	} else {
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
	}
	for i := len(tail) - 1; i >= 0; i-- {
		ops = append(ops, tail[i])
	}
	return ops
}

// lcsDiff is the classic dynamic-programming line diff; removals come
// before additions where both are possible.
func lcsDiff(a, b []string) []op {
	n, m := len(a), len(b)
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	return ops
}

// writeHunks writes the hunks of ops: each run of changes with its
// context, runs closer than twice the context joined into one hunk.
func writeHunks(b *strings.Builder, ops []op) {
	// oldAt[i] and newAt[i] count the lines of each side before ops[i].
	oldAt, newAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, o := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if o.kind != '+' {
			oldAt[i+1]++
		}
		if o.kind != '-' {
			newAt[i+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start, last := max(k-Context, 0), k
		for j := k + 1; j < len(ops); j++ {
			if ops[j].kind == ' ' {
				if j-last > 2*Context {
					break
				}
				continue
			}
			last = j
		}
		stop := min(last+1+Context, len(ops))
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldAt[start], oldAt[stop]-oldAt[start]), hunkRange(newAt[start], newAt[stop]-newAt[start]))
		for _, o := range ops[start:stop] {
			b.WriteByte(o.kind)
			if line, ok := strings.CutSuffix(o.line, "\n"); ok {
				b.WriteString(line)
				b.WriteByte('\n')
			} else {
				b.WriteString(o.line)
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = stop
	}
}

// hunkRange is one side of a hunk header: the 1-based first line and the
// count, which is left out when it is 1; an empty side names the line
// before it.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, count)
}

// SplitLines splits text into lines that keep their newlines; the last
// line may have none. Empty text has no lines.
func SplitLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// LineStarts returns the byte offset of each line of text, and of the
// empty line after a final newline.
func LineStarts(text string) []int {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// LineOf returns the 0-based index of the line holding byte offset x; the
// end of a text that ends with a newline is on the empty line after it.
func LineOf(starts []int, x int) int {
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > x })
	return max(i-1, 0)
}
