package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linearLast is what an ignoreMatcher computes, the plain way: the last
// rule that matches, tried one by one.
func linearLast(rules []ignoreRule, sub, name string, isDir bool) int {
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		subject := name
		if r.anchored {
			subject = sub
		}
		if wildmatch(r.pattern, subject) {
			return i
		}
	}
	return -1
}

// checkMatcher fails the test where the compiled rules of content decide
// on sub differently from the rules tried one by one.
func checkMatcher(t *testing.T, content, sub string, isDir bool) {
	t.Helper()
	rules := parseIgnore([]byte(content))
	name := sub[strings.LastIndexByte(sub, '/')+1:]
	got := compileIgnore(rules).last(sub, name, isDir)
	want := linearLast(rules, sub, name, isDir)
	if got != want {
		t.Fatalf("rules %q on %q (dir %v): compiled rule %d, one by one %d", content, sub, isDir, got, want)
	}
}

// ignorePieces make up random rules and paths that meet often.
var ignorePieces = []string{"a", "b", "ab", "abc", "log", "build", "x.log", "tmp", "gen", "é", ".", "-", "1", "12"}

func randomPattern(r *rand.Rand) string {
	var sb strings.Builder
	if r.IntN(5) == 0 {
		sb.WriteByte('!')
	}
	if r.IntN(4) == 0 {
		sb.WriteByte('/')
	}
	for n := 1 + r.IntN(4); n > 0; n-- {
		switch r.IntN(9) {
		case 0:
			sb.WriteByte('*')
		case 1:
			sb.WriteByte('?')
		case 2:
			sb.WriteString("[ab]")
		case 3:
			sb.WriteString("**/")
		case 4:
			sb.WriteByte('/')
		case 5:
			sb.WriteString(`\*`)
		default:
			sb.WriteString(ignorePieces[r.IntN(len(ignorePieces))])
		}
	}
	if r.IntN(4) == 0 {
		sb.WriteByte('/')
	}
	return sb.String()
}

func randomPath(r *rand.Rand) string {
	var segs []string
	for n := 1 + r.IntN(3); n > 0; n-- {
		var seg strings.Builder
		for m := 1 + r.IntN(3); m > 0; m-- {
			seg.WriteString(ignorePieces[r.IntN(len(ignorePieces))])
		}
		segs = append(segs, seg.String())
	}
	return strings.Join(segs, "/")
}

// TestIgnoreMatcherEqualsOneByOne: the compiled rules decide as the rules
// tried one by one, on random rule sets of every kind (names, paths,
// suffixes, prefixes, globs, negations, directories only), small ones
// and ones large enough to be indexed.
func TestIgnoreMatcherEqualsOneByOne(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var lines []string
		for n := r.IntN(3 * indexedGlobs); n >= 0; n-- {
			lines = append(lines, randomPattern(r))
		}
		content := strings.Join(lines, "\n")
		for range 20 {
			checkMatcher(t, content, randomPath(r), r.IntN(2) == 0)
		}
	}
}

// FuzzIgnoreMatcher: whatever the rules and the path, the compiled rules
// decide as the rules tried one by one.
//
//	go test -run '^$' -fuzz FuzzIgnoreMatcher -fuzztime 30s ./plugins/search/
func FuzzIgnoreMatcher(f *testing.F) {
	f.Add("*.log\n!important.log\n/top.txt\nbuild/\ndocs/**/tmp\n", "docs/a/tmp", true)
	f.Add("a*\n*b\nab\n/x/ab\n[ab]c*\n**/gen1/*.pb\n", "x/ab", false)
	f.Add("\\*x\n?abc\nabc?\n*abc*\n", "zabc", false)
	f.Add(strings.Repeat("p*\n*.q\n/r/s\nt\n", 10)+"**/u/*.v\n[Dd]ata*.bin\n", "dir/u/w.v", false)
	f.Fuzz(func(t *testing.T, content, sub string, isDir bool) {
		if sub == "" || strings.HasPrefix(sub, "/") || strings.HasSuffix(sub, "/") || strings.Contains(sub, "//") {
			return // not a path a walk makes
		}
		checkMatcher(t, content, sub, isDir)
	})
}

// manyIgnorePatterns is a .gitignore of n patterns of every kind: names,
// extensions, prefixes, anchored paths, directories only, ** globs,
// negations and classes.
func manyIgnorePatterns(n int) string {
	var sb strings.Builder
	for i := range n {
		switch i % 8 {
		case 0:
			fmt.Fprintf(&sb, "cache-%d\n", i)
		case 1:
			fmt.Fprintf(&sb, "*.ext%d\n", i)
		case 2:
			fmt.Fprintf(&sb, "tmp%d*\n", i)
		case 3:
			fmt.Fprintf(&sb, "/build/out%d\n", i)
		case 4:
			fmt.Fprintf(&sb, "logs%d/\n", i)
		case 5:
			fmt.Fprintf(&sb, "**/gen%d/*.pb\n", i)
		case 6:
			fmt.Fprintf(&sb, "!keep%d.txt\n", i)
		case 7:
			fmt.Fprintf(&sb, "[Dd]ata%d*.bin\n", i)
		}
	}
	return sb.String()
}

// manyIgnoredPaths are n file paths in directories of 50, some of them
// matched by manyIgnorePatterns.
func manyIgnoredPaths(n int) []string {
	names := []string{"cache-8", "x.ext9", "tmp10abc", "keep14.txt", "data15x.bin", "plain.go", "main.c", "README"}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("d%02d/%s", i/50, names[i%len(names)])
		if i%len(names) == 5 {
			paths[i] = fmt.Sprintf("d%02d/f%03d.go", i/50, i)
		}
	}
	return paths
}

func TestIgnoreMatcherManyPatterns(t *testing.T) {
	t.Parallel()
	content := manyIgnorePatterns(2000)
	for _, p := range manyIgnoredPaths(300) {
		checkMatcher(t, content, p, false)
		checkMatcher(t, content, p, true)
	}
}

// BenchmarkIgnoreManyPatterns decides on 1,500 paths against a .gitignore
// of 30,000 patterns, compiled and one by one ("ns/path" is per path).
func BenchmarkIgnoreManyPatterns(b *testing.B) {
	rules := parseIgnore([]byte(manyIgnorePatterns(30000)))
	paths := manyIgnoredPaths(1500)
	b.Run("compiled", func(b *testing.B) {
		m := compileIgnore(rules)
		for b.Loop() {
			for _, p := range paths {
				m.last(p, p[strings.LastIndexByte(p, '/')+1:], false)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				linearLast(rules, p, p[strings.LastIndexByte(p, '/')+1:], false)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
	})
}

// BenchmarkSearchFilesManyIgnorePatterns lists a tree of 1,500 files
// under a .gitignore of 30,000 patterns, reading and compiling it each
// time, as a call does.
func BenchmarkSearchFilesManyIgnorePatterns(b *testing.B) {
	files := map[string]string{".gitignore": manyIgnorePatterns(30000)}
	for _, p := range manyIgnoredPaths(1500) {
		files[p] = "hello\n"
	}
	root := writeTree(b, files)
	if _, err := os.Stat(filepath.Join(root, ".gitignore")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := callIn(b.Context(), b, searchFiles, []string{root}, map[string]any{"pattern": "**/*", "max_results": 3}); err != nil {
			b.Fatal(err)
		}
	}
}
