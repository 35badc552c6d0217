package main

import (
	"fmt"
	"sort"
	"strings"
)

// diffContext is the number of unchanged lines around each change in a
// hunk, as diff -u.
const diffContext = 3

// maxLCSCells bounds the table of the line diff inside one changed region;
// larger regions are shown as all removed, then all added.
const maxLCSCells = 1 << 20

// replacement is one replaced span: before[Start:End] became
// after[NewStart:NewEnd].
type replacement struct {
	Start, End       int
	NewStart, NewEnd int
}

// diffOp is one line of a diff: ' ' kept, '-' removed, '+' added. Line
// keeps its newline, if it has one.
type diffOp struct {
	kind byte
	line string
}

// unifiedDiff returns the unified diff (--- a/NAME, +++ b/NAME, hunks with
// three lines of context) of before and after, which differ only in the
// replaced spans, given in order. Only the lines around those spans are
// compared, so the diff costs little however long the file.
func unifiedDiff(name string, before, after string, spans []replacement) string {
	ops := diffOps(before, after, spans)
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	writeHunks(&b, ops)
	return b.String()
}

// diffOps returns the line operations that turn before into after.
func diffOps(before, after string, spans []replacement) []diffOp {
	a, b := splitLines(before), splitLines(after)
	aStarts, bStarts := lineStarts(before), lineStarts(after)
	var ops []diffOp
	ai := 0 // lines of a written so far
	for i := 0; i < len(spans); {
		// A region: from the line holding the span's start to the line
		// holding its end. The text before the first line and after the
		// last is the same on both sides.
		a0, a1 := lineOf(aStarts, spans[i].Start), lineOf(aStarts, spans[i].End)+1
		b0, b1 := lineOf(bStarts, spans[i].NewStart), lineOf(bStarts, spans[i].NewEnd)+1
		i++
		for i < len(spans) && lineOf(aStarts, spans[i].Start) < a1 {
			a1 = lineOf(aStarts, spans[i].End) + 1
			b1 = lineOf(bStarts, spans[i].NewEnd) + 1
			i++
		}
		a1, b1 = min(a1, len(a)), min(b1, len(b))
		for ; ai < a0; ai++ {
			ops = append(ops, diffOp{' ', a[ai]})
		}
		ops = append(ops, lineDiff(a[a0:a1], b[b0:b1])...)
		ai = a1
	}
	for ; ai < len(a); ai++ {
		ops = append(ops, diffOp{' ', a[ai]})
	}
	return ops
}

// lineDiff diffs two short runs of lines: common lines at either end are
// kept, and the middle is a longest-common-subsequence diff when it is
// small enough.
func lineDiff(a, b []string) []diffOp {
	var head, tail []diffOp
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, diffOp{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append(tail, diffOp{' ', a[len(a)-1]})
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	ops := head
	if (len(a)+1)*(len(b)+1) <= maxLCSCells {
		ops = append(ops, lcsDiff(a, b)...)
	} else {
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
	}
	for i := len(tail) - 1; i >= 0; i-- {
		ops = append(ops, tail[i])
	}
	return ops
}

// lcsDiff is the classic dynamic-programming line diff; removals come
// before additions where both are possible.
func lcsDiff(a, b []string) []diffOp {
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
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	return ops
}

// writeHunks writes the hunks of ops: each run of changes with its
// context, runs closer than twice the context joined into one hunk.
func writeHunks(b *strings.Builder, ops []diffOp) {
	// oldAt[i] and newAt[i] count the lines of each side before ops[i].
	oldAt, newAt := make([]int, len(ops)+1), make([]int, len(ops)+1)
	for i, op := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if op.kind != '+' {
			oldAt[i+1]++
		}
		if op.kind != '-' {
			newAt[i+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start, last := max(k-diffContext, 0), k
		for j := k + 1; j < len(ops); j++ {
			if ops[j].kind == ' ' {
				if j-last > 2*diffContext {
					break
				}
				continue
			}
			last = j
		}
		stop := min(last+1+diffContext, len(ops))
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldAt[start], oldAt[stop]-oldAt[start]), hunkRange(newAt[start], newAt[stop]-newAt[start]))
		for _, op := range ops[start:stop] {
			b.WriteByte(op.kind)
			if line, ok := strings.CutSuffix(op.line, "\n"); ok {
				b.WriteString(line)
				b.WriteByte('\n')
			} else {
				b.WriteString(op.line)
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

// splitLines splits text into lines that keep their newlines; the last
// line may have none. Empty text has no lines.
func splitLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineStarts returns the byte offset of each line of text, and of the
// empty line after a final newline.
func lineStarts(text string) []int {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the 0-based index of the line holding byte offset x; the
// end of a text that ends with a newline is on the empty line after it.
func lineOf(starts []int, x int) int {
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > x })
	return max(i-1, 0)
}
