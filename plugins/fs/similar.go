package main

import (
	"slices"
	"strings"
)

// maxWindowWork bounds closestLines' full comparison (file lines × lines
// of the searched text) for edit_file; beyond it the search compares one
// anchor line.
const maxWindowWork = 1 << 20

// closestLines finds the run of lines of text most like the lines of
// want: the window, as long as want, whose lines are on average most
// alike (Dice coefficient of character bigrams, leading and trailing
// whitespace ignored). It returns the window's first line (0-based), its
// length and its score from 0 to 1; a score of 1 means the lines differ
// from want at most in leading and trailing whitespace. When the lines
// times the window's length pass maxWork, the window is placed by the
// longest line of want alone.
func closestLines(lines []string, want string, maxWork int) (start, n int, score float64) {
	wantLines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(want, "\r\n", "\n"), "\n"), "\n")
	n = min(len(wantLines), len(lines))
	if n == 0 {
		return 0, 0, 0
	}
	wantGrams := make([]bigrams, len(wantLines))
	for i, l := range wantLines {
		wantGrams[i] = bigramsOf(l)
	}
	grams := make([]bigrams, len(lines))
	for i, l := range lines {
		grams[i] = bigramsOf(l)
	}
	if len(lines)*n <= maxWork {
		best, bestAt := -1.0, 0
		for i := 0; i+n <= len(lines); i++ {
			sum := 0.0
			for j := range n {
				sum += dice(wantGrams[j], grams[i+j])
			}
			if s := sum / float64(n); s > best {
				best, bestAt = s, i
			}
		}
		return bestAt, n, best
	}
	// Too much to compare window by window: place the window by the
	// longest line of want alone, then score the window found.
	anchor := 0
	for j, g := range wantGrams {
		if len(g.text) > len(wantGrams[anchor].text) {
			anchor = j
		}
	}
	best, bestAt := -1.0, 0
	for i := range lines {
		if s := dice(wantGrams[anchor], grams[i]); s > best {
			best, bestAt = s, i
		}
	}
	start = min(max(bestAt-anchor, 0), len(lines)-n)
	sum := 0.0
	for j := range n {
		sum += dice(wantGrams[j], grams[start+j])
	}
	return start, n, sum / float64(n)
}

// bigrams are the character pairs of a trimmed line, each two runes
// packed in a uint64, sorted.
type bigrams struct {
	text  string
	pairs []uint64
}

func bigramsOf(line string) bigrams {
	t := strings.TrimSpace(line)
	b := bigrams{text: t}
	var prev rune = -1
	for _, r := range t {
		if prev >= 0 {
			b.pairs = append(b.pairs, uint64(prev)<<32|uint64(r))
		}
		prev = r
	}
	slices.Sort(b.pairs)
	return b
}

// dice is the Dice coefficient of two lines' bigrams: 1 for equal lines,
// 0 for lines with no pair in common.
func dice(a, b bigrams) float64 {
	if a.text == b.text {
		return 1
	}
	if len(a.pairs) == 0 || len(b.pairs) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a.pairs) && j < len(b.pairs); {
		switch {
		case a.pairs[i] == b.pairs[j]:
			common++
			i++
			j++
		case a.pairs[i] < b.pairs[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a.pairs)+len(b.pairs))
}
