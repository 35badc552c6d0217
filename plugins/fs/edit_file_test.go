package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goSource = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n\treturn\n}\n"

func TestEditFile(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content string
		args    map[string]any // "path" is added
		want    string         // the answer
		after   string         // the file afterwards
	}{
		"once": {"a\nb\nc\n", map[string]any{"old_string": "b", "new_string": "B"},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			"a\nB\nc\n"},
		"replace_all": {"x = 1\ny = 1\nz = 2\n", map[string]any{"old_string": "1", "new_string": "10", "replace_all": true},
			"Edited f.txt: 2 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-x = 1\n+x = 10\n-y = 1\n+y = 10\n z = 2\n",
			"x = 10\ny = 10\nz = 2\n"},
		"replace_all with one occurrence": {"a\nb\n", map[string]any{"old_string": "a", "new_string": "A", "replace_all": true},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
			"A\nb\n"},
		"several lines": {goSource, map[string]any{"old_string": "\tfmt.Println(\"hello\")\n\treturn\n", "new_string": "\tfmt.Println(\"hello, world\")\n"},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -3,6 +3,5 @@\n import \"fmt\"\n \n func main() {\n-\tfmt.Println(\"hello\")\n-\treturn\n+\tfmt.Println(\"hello, world\")\n }\n",
			"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"},
		"deleting": {"keep\ndrop\nkeep too\n", map[string]any{"old_string": "drop\n", "new_string": ""},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n keep\n-drop\n keep too\n",
			"keep\nkeep too\n"},
		"CRLF endings kept": {"one\r\ntwo\r\nthree\r\n", map[string]any{"old_string": "one\ntwo", "new_string": "1\n2\nand a half"},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n-one\r\n-two\r\n+1\r\n+2\r\n+and a half\r\n three\r\n",
			"1\r\n2\r\nand a half\r\nthree\r\n"},
		"a list of one edit": {"a\nb\nc\n", map[string]any{"edits": []map[string]any{{"old_string": "b", "new_string": "B"}}},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			"a\nB\nc\n"},
		"two edits": {goSource, map[string]any{"edits": []map[string]any{{"old_string": "\"hello\"", "new_string": "\"hello, world\""}, {"old_string": "\treturn\n", "new_string": ""}}},
			"Edited f.txt: 2 edits, 2 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -3,6 +3,5 @@\n import \"fmt\"\n \n func main() {\n-\tfmt.Println(\"hello\")\n+\tfmt.Println(\"hello, world\")\n-\treturn\n }\n",
			"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"},
		"edits far apart, in either order": {numbered(20), map[string]any{"edits": []map[string]any{{"old_string": "line 18\n", "new_string": "line eighteen\n"}, {"old_string": "line 2\n", "new_string": ""}, {"old_string": "line 10", "new_string": "line 10\nline 10.5"}}},
			"Edited f.txt: 3 edits, 3 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,5 +1,4 @@\n line 1\n-line 2\n line 3\n line 4\n line 5\n" +
				"@@ -8,6 +7,7 @@\n line 8\n line 9\n line 10\n+line 10.5\n line 11\n line 12\n line 13\n" +
				"@@ -15,6 +15,6 @@\n line 15\n line 16\n line 17\n-line 18\n+line eighteen\n line 19\n line 20\n",
			strings.Replace(strings.Replace(strings.Replace(numbered(20), "line 18\n", "line eighteen\n", 1), "line 2\n", "", 1), "line 10\n", "line 10\nline 10.5\n", 1)},
		"an edit of what the one before wrote": {"a\nb\nc\n", map[string]any{"edits": []map[string]any{{"old_string": "b", "new_string": "x\ny"}, {"old_string": "y\nc", "new_string": "z"}}},
			"Edited f.txt: 2 edits, 2 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n-c\n+x\n+z\n",
			"a\nx\nz\n"},
		"replace_all in a list": {"x = 1\ny = 1\nz = 2\n", map[string]any{"edits": []map[string]any{{"old_string": "1", "new_string": "10", "replace_all": true}, {"old_string": "z", "new_string": "w"}}},
			"Edited f.txt: 2 edits, 3 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-x = 1\n+x = 10\n-y = 1\n+y = 10\n-z = 2\n+w = 2\n",
			"x = 10\ny = 10\nw = 2\n"},
		"CRLF endings kept by every edit": {"one\r\ntwo\r\nthree\r\n", map[string]any{"edits": []map[string]any{{"old_string": "one\ntwo", "new_string": "1\n2"}, {"old_string": "2\nthree\n", "new_string": "2\n3\n"}}},
			"Edited f.txt: 2 edits, 2 replacements\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\r\n-two\r\n-three\r\n+1\r\n+2\r\n+3\r\n",
			"1\r\n2\r\n3\r\n"},
		"a dry run": {"a\nb\nc\n", map[string]any{"old_string": "b", "new_string": "B", "dry_run": true},
			"Dry run, nothing was written: 1 replacement would be made in f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			"a\nb\nc\n"},
		"a dry run of several edits": {"a\nb\nc\n", map[string]any{"edits": []map[string]any{{"old_string": "a", "new_string": "A"}, {"old_string": "c", "new_string": "C"}}, "dry_run": true},
			"Dry run, nothing was written: 2 edits, 2 replacements would be made in f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n-c\n+C\n",
			"a\nb\nc\n"},
		"non-ASCII": {"héllo wörld\n", map[string]any{"old_string": "wörld", "new_string": "wêreld"},
			"Edited f.txt: 1 replacement\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-héllo wörld\n+héllo wêreld\n",
			"héllo wêreld\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, path := writeTestFile(t, "f.txt", tc.content)
			args := map[string]any{"path": "f.txt"}
			for k, v := range tc.args {
				args[k] = v
			}
			got, err := call(t, root, editFile, args)
			if err != nil || got != tc.want {
				t.Errorf("edit_file(%v) =\n%s\n%v\nwant:\n%s", tc.args, got, err, tc.want)
			}
			if data := readString(t, path); data != tc.after {
				t.Errorf("the file holds %q, want %q", data, tc.after)
			}
		})
	}

	t.Run("keeps the mode", func(t *testing.T) {
		t.Parallel()
		root, path := writeTestFile(t, "run.sh", "#!/bin/sh\necho old\n")
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		if _, err := call(t, root, editFile, map[string]any{"path": path, "old_string": "old", "new_string": "new"}); err != nil {
			t.Fatal(err)
		}
		assertFile(t, path, "#!/bin/sh\necho new\n", 0o750)
	})

	t.Run("through a link inside the root", func(t *testing.T) {
		t.Parallel()
		root, path := writeTestFile(t, "target.txt", "one two\n")
		mustSymlink(t, "target.txt", filepath.Join(root, "link"))
		got, err := call(t, root, editFile, map[string]any{"path": "link", "old_string": "two", "new_string": "2"})
		if want := "Edited link: 1 replacement\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-one two\n+one 2\n"; err != nil || got != want {
			t.Errorf("edit_file through a link = %q, %v; want %q", got, err, want)
		}
		assertFile(t, path, "one 2\n", 0o644)
		if target, err := os.Readlink(filepath.Join(root, "link")); err != nil || target != "target.txt" {
			t.Errorf("the link became %q, %v", target, err)
		}
	})
}

func TestEditFileErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "main.go"), goSource)
	mustWrite(t, filepath.Join(root, "dup.txt"), "x\ny\nx\nz\nx\n")
	mustWrite(t, filepath.Join(root, "many.txt"), strings.Repeat("same\n", 25))
	mustWrite(t, filepath.Join(root, "empty.txt"), "")
	mustWrite(t, filepath.Join(root, "bin"), "a\x00b")
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"not found: the closest lines": {map[string]any{"path": "main.go", "old_string": "fmt.Println(\"helo\")", "new_string": "x"},
			"old_string was not found in main.go. The most similar text is at line 6 (97% alike):\n     6\t\tfmt.Println(\"hello\")\n" +
				"Make old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text"},
		"not found: several closest lines": {map[string]any{"path": "main.go", "old_string": "func main() {\n\tfmt.Print(\"hello\")\n", "new_string": "x"},
			"old_string was not found in main.go. The most similar text is at lines 5-6 (94% alike):\n     5\tfunc main() {\n     6\t\tfmt.Println(\"hello\")\n" +
				"Make old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text"},
		"not found: only whitespace differs": {map[string]any{"path": "main.go", "old_string": "func main() {\n    fmt.Println(\"hello\")", "new_string": "x"},
			"old_string was not found in main.go, but lines 5-6 match it apart from leading or trailing whitespace:\n     5\tfunc main() {\n     6\t\tfmt.Println(\"hello\")\n" +
				"Copy the whitespace and indentation exactly as the file has it"},
		"not found in an empty file": {map[string]any{"path": "empty.txt", "old_string": "a", "new_string": "b"},
			"old_string was not found in empty.txt: the file is empty"},
		"several matches": {map[string]any{"path": "dup.txt", "old_string": "x", "new_string": "X"},
			"old_string occurs 3 times in dup.txt, at lines 1, 3 and 5: include more surrounding lines in old_string to pick one, or set replace_all to true to replace them all"},
		"many matches": {map[string]any{"path": "many.txt", "old_string": "same", "new_string": "other"},
			"old_string occurs 25 times in many.txt, at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 5 more: include more surrounding lines in old_string to pick one, or set replace_all to true to replace them all"},
		"empty old_string": {map[string]any{"path": "main.go", "old_string": "", "new_string": "x"},
			"old_string is empty: give the exact text to replace (use write_file to create a file)"},
		"nothing to change": {map[string]any{"path": "main.go", "old_string": "main", "new_string": "main"},
			"old_string and new_string are the same: there is nothing to change"},
		"a missing file": {map[string]any{"path": "nope.go", "old_string": "a", "new_string": "b"},
			"file not found: nope.go"},
		"a directory": {map[string]any{"path": ".", "old_string": "a", "new_string": "b"},
			". is a directory, not a file"},
		"a binary file": {map[string]any{"path": "bin", "old_string": "a", "new_string": "b"},
			"bin is not utf-8 text (3 bytes): edit_file edits text files"},
		"no new_string": {map[string]any{"path": "main.go", "old_string": "a"},
			"new_string is missing: give the text to put in place of old_string (an empty string deletes it)"},
		"no old_string": {map[string]any{"path": "main.go", "new_string": "a"},
			"old_string is missing: give the exact text to replace with new_string"},
		"nothing at all": {map[string]any{"path": "main.go"},
			"nothing to edit: give old_string and new_string, or edits for several changes"},
		"both one edit and a list": {map[string]any{"path": "main.go", "old_string": "a", "new_string": "b", "edits": []map[string]any{{"old_string": "c", "new_string": "d"}}},
			"give either old_string and new_string (one edit) or edits (a list), not both: put this edit in the list too"},
		"replace_all beside a list": {map[string]any{"path": "main.go", "replace_all": true, "edits": []map[string]any{{"old_string": "c", "new_string": "d"}}},
			"give either old_string and new_string (one edit) or edits (a list), not both: put this edit in the list too"},
		"an empty list": {map[string]any{"path": "main.go", "edits": []map[string]any{}},
			"edits is empty: give at least one {old_string, new_string}"},
		"an empty old_string in the list": {map[string]any{"path": "main.go", "edits": []map[string]any{{"old_string": "main", "new_string": "x"}, {"old_string": "", "new_string": "y"}}},
			"edit 2 of 2: old_string is empty: give the exact text to replace (use write_file to create a file); nothing was written"},
		"an edit without new_string": {map[string]any{"path": "main.go", "edits": []map[string]any{{"old_string": "main"}}},
			`invalid arguments: edits[]: required: missing properties: ["new_string"]`},
		"an unknown key in an edit": {map[string]any{"path": "main.go", "edits": []map[string]any{{"oldText": "main", "old_string": "main", "new_string": "x"}}},
			`invalid arguments: edits[]: unexpected additional properties ["oldText"]`},
		"the first of two edits fails": {map[string]any{"path": "main.go", "edits": []map[string]any{{"old_string": "func mian() {", "new_string": "x"}, {"old_string": "main", "new_string": "x"}}},
			"edit 1 of 2 failed, so nothing was written: old_string was not found in main.go. The most similar text is at line 5 (75% alike):\n     5\tfunc main() {\n" +
				"Make old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text"},
		"the second of two edits fails": {map[string]any{"path": "main.go", "dry_run": true, "edits": []map[string]any{{"old_string": "\"hello\"", "new_string": "\"hi\""}, {"old_string": "fmt.Println(\"hello\")", "new_string": "x"}}},
			"edit 2 of 2 failed, so nothing was written (it applies to the text as edit 1 left it): old_string was not found in main.go. The most similar text is at line 6 (80% alike):\n     6\t\tfmt.Println(\"hi\")\n" +
				"Make old_string match the file exactly, whitespace and indentation included; read_file with line_numbers shows the current text"},
		"the third edit is ambiguous": {map[string]any{"path": "dup.txt", "edits": []map[string]any{{"old_string": "y", "new_string": "x"}, {"old_string": "z", "new_string": "Z"}, {"old_string": "x\n", "new_string": "X\n"}}},
			"edit 3 of 3 failed, so nothing was written (it applies to the text as edits 1-2 left it): old_string occurs 4 times in dup.txt, at lines 1, 2, 3 and 5: include more surrounding lines in old_string to pick one, or set replace_all to true to replace them all"},
		"edits that undo each other": {map[string]any{"path": "dup.txt", "edits": []map[string]any{{"old_string": "y", "new_string": "Y"}, {"old_string": "Y", "new_string": "y"}}},
			"the edits leave dup.txt as it was: there is nothing to change, and nothing was written"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := call(t, root, editFile, tc.args)
			wantErr(t, fmt.Sprintf("edit_file(%v)", tc.args), got, err, tc.want)
		})
	}
	checkFiles(t, root, map[string]string{"main.go": goSource, "dup.txt": "x\ny\nx\nz\nx\n"})
}

func TestClosestLines(t *testing.T) {
	t.Parallel()
	lines := strings.Split(strings.TrimSuffix(goSource, "\n"), "\n")
	start, n, score := closestLines(lines, "return\n}", maxWindowWork)
	if start != 6 || n != 2 || score != 1 {
		t.Errorf("closestLines = %d, %d, %v; want 6, 2, 1", start, n, score)
	}
	// Longer than the file: the whole file.
	if start, n, _ := closestLines([]string{"a"}, "a\nb\nc", maxWindowWork); start != 0 || n != 1 {
		t.Errorf("closestLines of a longer text = %d, %d", start, n)
	}
	// A large file is searched by the longest line of the text.
	big := make([]string, 2000)
	for i := range big {
		big[i] = fmt.Sprintf("line %d of filler", i)
	}
	big[1234] = "the needle we are looking for"
	want := "x\nthe needle we are lookin for" + strings.Repeat("\ny", 18)
	for _, work := range []int{maxWindowWork, 1000} {
		start, n, _ = closestLines(big, want, work)
		if start != 1233 || n != 20 {
			t.Errorf("closestLines with work %d = %d, %d; want 1233, 20", work, start, n)
		}
	}
}

// numbered is n lines "line 1\n" to "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// Composed spans describe the text the edits made: outside them it is
// the text they started from, whatever the edits, however they overlap.
func TestComposeSpans(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		before := make([]byte, 1+rng.IntN(40))
		for i := range before {
			before[i] = "ab\n"[rng.IntN(3)]
		}
		text := string(before)
		cur := text
		var spans []replacement
		var steps []string
		for range 1 + rng.IntN(5) {
			if cur == "" {
				break
			}
			// Replace a piece of the current text, or every occurrence
			// of it, by something of another length.
			i := rng.IntN(len(cur))
			j := i + 1 + rng.IntN(min(3, len(cur)-i))
			old := cur[i:j]
			newS := strings.Repeat("xy\n"[rng.IntN(3):][:1], rng.IntN(4))
			at := occurrences(cur, old, math.MaxInt)
			if rng.IntN(2) == 0 {
				at = []int{i}
			}
			next, step := replaceAt(cur, old, newS, at)
			steps = append(steps, fmt.Sprintf("%q->%q at %v", old, newS, at))
			spans = composeSpans(spans, step)
			cur = next
		}
		// Rebuild the result from the text and the spans.
		var b strings.Builder
		last, lastNew := 0, 0
		for k, s := range spans {
			if s.Start < last || s.End < s.Start || s.NewStart < lastNew || s.NewEnd < s.NewStart || (k > 0 && s.Start-last != s.NewStart-lastNew) {
				t.Fatalf("round %d, %q with %v: spans %+v out of order", round, text, steps, spans)
			}
			b.WriteString(text[last:s.Start])
			b.WriteString(cur[s.NewStart:s.NewEnd])
			last, lastNew = s.End, s.NewEnd
		}
		b.WriteString(text[last:])
		if b.String() != cur || len(text)-last != len(cur)-lastNew {
			t.Fatalf("round %d, %q with %v: the spans %+v rebuild %q, want %q", round, text, steps, spans, b.String(), cur)
		}
		// And the diff of the two is made from them without a panic.
		unifiedDiff("f", text, cur, spans)
	}
}
