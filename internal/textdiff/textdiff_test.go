package textdiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// replaced replaces old by new in text, the first time or every time
// (as edit_file does), and returns the text after with the spans that
// changed.
func replaced(text, old, new string, all bool) (string, []Span) {
	var b strings.Builder
	var spans []Span
	last := 0
	for {
		j := strings.Index(text[last:], old)
		if j < 0 || !all && len(spans) == 1 {
			break
		}
		i := last + j
		b.WriteString(text[last:i])
		start := b.Len()
		b.WriteString(new)
		spans = append(spans, Span{Start: i, End: i + len(old), NewStart: start, NewEnd: b.Len()})
		last = i + len(old)
	}
	b.WriteString(text[last:])
	return b.String(), spans
}

// diffOf is the diff edit_file shows for replacing old by new in text.
func diffOf(text, old, new string, all bool) string {
	after, spans := replaced(text, old, new, all)
	return UnifiedSpans("f.txt", text, after, spans)
}

func TestUnifiedSpans(t *testing.T) {
	t.Parallel()
	const ten = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	const head = "--- a/f.txt\n+++ b/f.txt\n"
	tests := map[string]struct {
		text, old, new string
		all            bool
		want           string
	}{
		"one line in the middle": {ten, "5\n", "five\n", false,
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		"part of a line": {ten, "5", "55", false,
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+55\n 6\n 7\n 8\n"},
		"the first line": {ten, "1\n2", "one\n2", false,
			"@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n"},
		"the last line": {ten, "10", "ten", false,
			"@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten\n"},
		"lines added": {ten, "5\n", "5\n5a\n5b\n", false,
			"@@ -3,6 +3,8 @@\n 3\n 4\n 5\n+5a\n+5b\n 6\n 7\n 8\n"},
		"lines removed": {ten, "4\n5\n6\n", "", false,
			"@@ -1,9 +1,6 @@\n 1\n 2\n 3\n-4\n-5\n-6\n 7\n 8\n 9\n"},
		"a line joined to the next": {"a\nb\nc\n", "a\n", "", false,
			"@@ -1,3 +1,2 @@\n-a\n b\n c\n"},
		"a newline removed": {"a\nb\nc\n", "a\nb", "ab", false,
			"@@ -1,3 +1,2 @@\n-a\n-b\n+ab\n c\n"},
		"the newline at the end removed": {"a\nb\n", "b\n", "b", false,
			"@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		"a file without a final newline": {"a\nb", "b", "c", false,
			"@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		"everything removed": {"a\nb\n", "a\nb\n", "", false,
			"@@ -1,2 +0,0 @@\n-a\n-b\n"},
		"a one-line file": {"x\n", "x", "y", false,
			"@@ -1 +1 @@\n-x\n+y\n"},
		"changes far apart are two hunks": {ten + ten, "5\n", "five\n", true,
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n@@ -12,7 +12,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		"changes six lines apart are one hunk": {ten, "2", "two", true,
			"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"},
		"changes on every line": {ten, "\n", "\n\n", true,
			"@@ -1,10 +1,20 @@\n 1\n+\n 2\n+\n 3\n+\n 4\n+\n 5\n+\n 6\n+\n 7\n+\n 8\n+\n 9\n+\n 10\n+\n"},
		"several on one line": {"a a a\nb\n", "a", "x", true,
			"@@ -1,2 +1,2 @@\n-a a a\n+x x x\n b\n"},
		"a middle line of a block": {"a\nb\nc\nd\ne\n", "b\nc\nd", "b\nC\nd", false,
			"@@ -1,5 +1,5 @@\n a\n b\n-c\n+C\n d\n e\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := diffOf(tc.text, tc.old, tc.new, tc.all)
			if got != head+tc.want {
				t.Errorf("diff =\n%s\nwant:\n%s", got, head+tc.want)
			}
			checkDiffApplies(t, tc.text, tc.old, tc.new, tc.all)
		})
	}
	t.Run("two changes 7 lines apart are one hunk, 8 are two", func(t *testing.T) {
		t.Parallel()
		// Six unchanged lines between two changes: one hunk.
		text := "x\n1\n2\n3\n4\n5\n6\nx\n"
		if got := diffOf(text, "x", "y", true); strings.Count(got, "@@ -") != 1 {
			t.Errorf("six lines between: %s", got)
		}
		text = "x\n1\n2\n3\n4\n5\n6\n7\nx\n"
		if got := diffOf(text, "x", "y", true); strings.Count(got, "@@ -") != 2 {
			t.Errorf("seven lines between: %s", got)
		}
	})
}

// TestUnifiedSpansApplies checks random edits: the diff, applied to the
// text before, gives the text after, and every hunk header counts its
// lines right.
func TestUnifiedSpansApplies(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "", "a b", "\n"}
	for i := range 2000 {
		var text strings.Builder
		for range r.IntN(40) {
			text.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) > 0 {
				text.WriteByte('\n')
			}
		}
		s := text.String()
		if s == "" {
			continue
		}
		a := r.IntN(len(s))
		b := a + 1 + r.IntN(min(len(s)-a, 12))
		old := s[a:min(b, len(s))]
		var nw strings.Builder
		for range r.IntN(4) {
			nw.WriteString(words[r.IntN(len(words))])
			if r.IntN(2) > 0 {
				nw.WriteByte('\n')
			}
		}
		if nw.String() == old {
			continue
		}
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			checkDiffApplies(t, s, old, nw.String(), r.IntN(2) == 0)
		})
	}
}

// checkDiffApplies applies the diff of an edit to the text before it and
// compares the result with the text after it.
func checkDiffApplies(t *testing.T, text, old, new string, all bool) {
	t.Helper()
	after, spans := replaced(text, old, new, all)
	diff := UnifiedSpans("f.txt", text, after, spans)
	got, err := applyDiff(text, diff)
	if err != nil {
		t.Fatalf("the diff of %q, %q -> %q does not apply: %v\n%s", text, old, new, err, diff)
	}
	if got != after {
		t.Fatalf("the diff of %q, %q -> %q gives %q, want %q\n%s", text, old, new, got, after, diff)
	}
}

// applyDiff applies a unified diff (as UnifiedSpans writes it) to text,
// checking every context and removed line and every header count.
func applyDiff(text, diff string) (string, error) {
	src := SplitLines(text)
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) < 2 || lines[0] != "--- a/f.txt\n" || lines[1] != "+++ b/f.txt\n" {
		return "", fmt.Errorf("bad header")
	}
	lines = lines[2 : len(lines)-1] // the last is "" after the final newline
	var out []string
	next := 0 // next line of src to copy
	for i := 0; i < len(lines); {
		var os, oc, ns, nc int
		h := lines[i]
		if _, err := fmt.Sscanf(strings.NewReplacer(",", " ").Replace(h), "@@ -%d %d +%d %d @@\n", &os, &oc, &ns, &nc); err != nil {
			// Counts of 1 are left out.
			oc, nc = -1, -1
			parts := strings.Fields(h)
			if len(parts) != 4 {
				return "", fmt.Errorf("bad hunk header %q", h)
			}
			parse := func(s string) (int, int) {
				start, count, ok := strings.Cut(s[1:], ",")
				a, _ := strconv.Atoi(start)
				if !ok {
					return a, 1
				}
				c, _ := strconv.Atoi(count)
				return a, c
			}
			os, oc = parse(parts[1])
			ns, nc = parse(parts[2])
		}
		i++
		first := os - 1
		if oc == 0 {
			first = os
		}
		if first < next {
			return "", fmt.Errorf("hunk %q overlaps the one before", h)
		}
		out = append(out, src[next:first]...)
		if len(out) != max(ns-1, 0) && !(nc == 0 && len(out) == ns) {
			return "", fmt.Errorf("hunk %q: the new side starts at line %d", h, len(out)+1)
		}
		next = first
		seenOld, seenNew := 0, 0
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			i++
			body := l[1:]
			if i < len(lines) && lines[i] == "\\ No newline at end of file\n" {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if next >= len(src) || src[next] != body {
					return "", fmt.Errorf("hunk %q: line %d is %q, the diff says %q", h, next+1, src[min(next, len(src)-1)], body)
				}
				next++
				seenOld++
				if l[0] == ' ' {
					out = append(out, body)
					seenNew++
				}
			case '+':
				out = append(out, body)
				seenNew++
			default:
				return "", fmt.Errorf("bad diff line %q", l)
			}
		}
		if seenOld != oc || seenNew != nc {
			return "", fmt.Errorf("hunk %q has %d old and %d new lines", h, seenOld, seenNew)
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, ""), nil
}

func TestUnified(t *testing.T) {
	t.Parallel()
	const head = "--- a/f.txt\n+++ b/f.txt\n"
	tests := map[string]struct {
		before, after, want string
	}{
		"the same":                {"a\nb\n", "a\nb\n", ""},
		"both empty":              {"", "", ""},
		"a new file":              {"", "one\ntwo\n", head + "@@ -0,0 +1,2 @@\n+one\n+two\n"},
		"a new file, no eol":      {"", "one", head + "@@ -0,0 +1 @@\n+one\n\\ No newline at end of file\n"},
		"emptied":                 {"one\ntwo\n", "", head + "@@ -1,2 +0,0 @@\n-one\n-two\n"},
		"one line changed":        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", head + "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		"a line added at the end": {"a\nb\n", "a\nb\nc\n", head + "@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		"a repeated line added":   {"a\na\n", "a\na\na\n", head + "@@ -1,2 +1,3 @@\n a\n a\n+a\n"},
		"the final newline added": {"a\nb", "a\nb\n", head + "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		"changes far apart": {"x\n1\n2\n3\n4\n5\n6\n7\n8\nx\n", "y\n1\n2\n3\n4\n5\n6\n7\n8\ny\n",
			head + "@@ -1,4 +1,4 @@\n-x\n+y\n 1\n 2\n 3\n@@ -7,4 +7,4 @@\n 6\n 7\n 8\n-x\n+y\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := Unified("f.txt", tc.before, tc.after)
			if got != tc.want {
				t.Errorf("diff =\n%s\nwant:\n%s", got, tc.want)
			}
			if got == "" {
				return
			}
			if applied, err := applyDiff(tc.before, got); err != nil || applied != tc.after {
				t.Errorf("the diff applied gives %q (%v), want %q", applied, err, tc.after)
			}
		})
	}
}

// TestUnifiedApplies checks random pairs of texts: the diff of the two,
// applied to the first, gives the second.
func TestUnifiedApplies(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"a", "b", "c", "", "a b"}
	text := func() string {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(4) > 0 {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	for i := range 2000 {
		before, after := text(), text()
		if r.IntN(3) == 0 && before != "" {
			// A small change of the same text.
			k := r.IntN(len(before))
			after = before[:k] + words[r.IntN(len(words))] + before[k+r.IntN(len(before)-k+1):]
		}
		diff := Unified("f.txt", before, after)
		if (diff == "") != (before == after) {
			t.Fatalf("%d: the diff of %q and %q is %q", i, before, after, diff)
		}
		if diff == "" {
			continue
		}
		got, err := applyDiff(before, diff)
		if err != nil || got != after {
			t.Fatalf("%d: the diff of %q and %q gives %q (%v)\n%s", i, before, after, got, err, diff)
		}
	}
}

// TestUnifiedLarge: a region too large for the LCS table is shown as
// removed, then added, and still applies.
func TestUnifiedLarge(t *testing.T) {
	t.Parallel()
	var a, b strings.Builder
	for i := range 1100 {
		fmt.Fprintf(&a, "old %d\n", i)
		fmt.Fprintf(&b, "new %d\n", i)
	}
	diff := Unified("f.txt", "keep\n"+a.String()+"keep\n", "keep\n"+b.String()+"keep\n")
	if !strings.HasPrefix(diff, "--- a/f.txt\n+++ b/f.txt\n@@ -1,1102 +1,1102 @@\n keep\n-old 0\n-old 1\n") {
		t.Errorf("diff starts %q", diff[:min(len(diff), 100)])
	}
	if got, err := applyDiff("keep\n"+a.String()+"keep\n", diff); err != nil || got != "keep\n"+b.String()+"keep\n" {
		t.Errorf("the diff does not apply: %v", err)
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	if got := SplitLines("a\nb"); strings.Join(got, "|") != "a\n|b" {
		t.Errorf("SplitLines = %q", got)
	}
	if got := SplitLines(""); len(got) != 0 {
		t.Errorf("SplitLines of empty text = %q", got)
	}
	starts := LineStarts("ab\ncd\n")
	if fmt.Sprint(starts) != "[0 3 6]" {
		t.Errorf("LineStarts = %v", starts)
	}
	for x, want := range map[int]int{0: 0, 2: 0, 3: 1, 5: 1, 6: 2} {
		if got := LineOf(starts, x); got != want {
			t.Errorf("LineOf(%d) = %d, want %d", x, got, want)
		}
	}
}
