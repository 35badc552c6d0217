package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk"
)

// The fuzz targets call the tools with arguments the fuzzer makes, on a
// fixed tree that holds what broke the tools once (FIFO ignore files, a
// file over the size limit, symbolic links out and in loops, names with
// control characters) next to directories outside the roots, and check
// what must hold whatever the call:
//
//   - nothing outside the roots is reported, by name or content;
//   - every path reported is inside a root;
//   - an error speaks in the tools' words, never with a system call's or
//     the Go runtime's;
//   - no call panics or hangs.
//
// Under plain go test they run their seeds. To fuzz, one at a time:
//
//	go test -run '^$' -fuzz '^FuzzSearchText$' -fuzztime 30s ./plugins/search/
//	go test -run '^$' -fuzz '^FuzzSearchFiles$' -fuzztime 30s ./plugins/search/

// outsideMarker is in every name and file outside the roots.
const outsideMarker = "OUTSIDE7f3a"

// fuzzTree is the tree the fuzz targets search: two roots, and outside
// them a sibling that shares the first root's prefix and a directory
// elsewhere.
type fuzzTree struct {
	roots []string
}

var (
	fuzzTreeOnce sync.Once
	fuzzTreeDir  string
	fuzzTreeVal  fuzzTree
)

func fuzzFixture(tb testing.TB) fuzzTree {
	tb.Helper()
	fuzzTreeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agenthost-search-fuzz-")
		if err != nil {
			tb.Fatal(err)
		}
		fuzzTreeDir = dir
		root, root2 := filepath.Join(dir, "root"), filepath.Join(dir, "root2")
		out, evil := filepath.Join(dir, "out"+outsideMarker), filepath.Join(dir, "root_evil")
		files := map[string]string{
			"root/a.txt":                       "needle one\nfoo\nbar\n",
			"root/sub/b.go":                    "func main() { needle }\n",
			"root/sub/deeper/c.txt":            "needle deeper\n\x1b[2J\r\n",
			"root/.hidden/h.txt":               "needle hidden\n",
			"root/.gitignore":                  "*.log\n!keep.log\n/ignored/\n",
			"root/x.log":                       "needle log\n",
			"root/keep.log":                    "needle keep\n",
			"root/ignored/i.txt":               "needle ignored\n",
			"root/evil\nname.txt":              "needle evil\n",
			"root/\x1b[31mred.txt":             "needle red\n",
			"root/bin.dat":                     "needle\x00binary\n",
			"root2/r2.txt":                     "needle second root\n",
			"out" + outsideMarker + "/s.txt":   "needle " + outsideMarker + "\n",
			"out" + outsideMarker + "/d/t.txt": "needle " + outsideMarker + "\n",
			"root_evil/e.txt":                  "needle " + outsideMarker + "\n",
		}
		for name, content := range files {
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		links := map[string]string{
			"root/out":       out,
			"root/out.txt":   filepath.Join(out, "s.txt"),
			"root/rel-out":   "../out" + outsideMarker + "/s.txt",
			"root/evil-link": evil,
			"root/loopa":     "loopb",
			"root/loopb":     "loopa",
			"root/sub/up":    "..",
			"root/in.txt":    "a.txt",
			"root/dangling":  filepath.Join(out, "missing"),
		}
		for name, target := range links {
			if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				tb.Fatal(err)
			}
		}
		for _, name := range []string{"root/sub/.gitignore", "root/sub/.ignore", "root/fifo"} {
			syscall.Mkfifo(filepath.Join(dir, filepath.FromSlash(name)), 0o644)
		}
		big := filepath.Join(root, "big.txt")
		if err := os.WriteFile(big, []byte("needle big\n"), 0o644); err == nil {
			os.Truncate(big, maxFileSize+1)
		}
		fuzzTreeVal = fuzzTree{roots: []string{root, root2}}
	})
	if fuzzTreeDir == "" {
		tb.Fatal("no fuzz tree")
	}
	return fuzzTreeVal
}

// fuzzCall runs tool with the raw JSON arguments on the fuzz tree and
// checks the invariants; inputs are the strings the call was made of,
// which an answer may echo.
func fuzzCall(t *testing.T, tool sdk.Tool, args string, inputs ...string) {
	tree := fuzzFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := tool.Execute(sdk.WithRoots(ctx, tree.roots), []byte(args))
	if ctx.Err() != nil {
		t.Fatalf("%s(%s) did not answer within 20s", tool.Name(), args)
	}
	echoes := func(s string) bool {
		for _, in := range inputs {
			if strings.Contains(in, s) || strings.Contains(strconv.Quote(in), s) {
				return true
			}
		}
		return false
	}
	if err != nil {
		msg := err.Error()
		for _, raw := range []string{"openat", "statat", "fstatat", "lstat ", "readdirent", "getdents", "escapes from parent", "Go struct", "reflect", "errno", "syscall", "panic", "goroutine", "runtime error"} {
			if strings.Contains(msg, raw) && !echoes(raw) {
				t.Fatalf("%s(%s): error in raw words (%q): %s", tool.Name(), args, raw, msg)
			}
		}
		if strings.Contains(msg, outsideMarker) && !echoes(outsideMarker) {
			t.Fatalf("%s(%s): error names what is outside: %s", tool.Name(), args, msg)
		}
		return
	}
	for i, line := range strings.Split(out, "\n") {
		if i == 0 && (strings.HasPrefix(line, "No matches for ") || strings.HasPrefix(line, "No files matching ")) {
			continue // it echoes the query or pattern
		}
		if strings.Contains(line, outsideMarker) {
			t.Fatalf("%s(%s) reported what is outside the roots:\n%s", tool.Name(), args, out)
		}
		if strings.HasPrefix(line, "(") || strings.HasPrefix(line, "... ") || line == "--" || line == "" {
			continue
		}
		path := reportedPath(t, tool.Name(), line)
		if !insideRoots(tree.roots, path) {
			t.Fatalf("%s(%s) reported %q (from %q), not inside the roots:\n%s", tool.Name(), args, path, line, out)
		}
	}
}

var textLine = regexp.MustCompile(`^(.*?)[:-](\d+)[:-]`)

// reportedPath is the path an output line reports.
func reportedPath(t *testing.T, tool, line string) string {
	t.Helper()
	if tool == "search_text" {
		if strings.HasPrefix(line, `"`) {
			// A quoted name: up to its closing quote.
			for i := 1; i < len(line); i++ {
				if line[i] == '\\' {
					i++
					continue
				}
				if line[i] == '"' {
					line = line[:i+1]
					break
				}
			}
		} else if m := textLine.FindStringSubmatch(line); m != nil {
			line = m[1]
		}
	}
	if strings.HasPrefix(line, `"`) {
		s, err := strconv.Unquote(line)
		if err != nil {
			t.Fatalf("%s reported %q, which does not unquote: %v", tool, line, err)
		}
		line = s
	}
	return strings.TrimSuffix(line, "/")
}

// insideRoots reports whether path (relative to a root, as the tools
// report paths, or absolute) names something inside one of the roots,
// reached from it without leaving it.
func insideRoots(roots []string, path string) bool {
	for _, root := range roots {
		abs := path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, path)
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return false
		}
		_, err = r.Lstat(rel)
		r.Close()
		if err == nil {
			return true
		}
	}
	return false
}

// jsonField is an argument as the fuzzer gives it: JSON text, put into
// the arguments as it is (a number, or anything else), or left out when
// empty.
func jsonField(name, raw string) string {
	if raw == "" {
		return ""
	}
	return fmt.Sprintf(",%q:%s", name, raw)
}

func quoteJSON(s string) string {
	// strconv.Quote is close to JSON, but not for every control
	// character or invalid UTF-8; the decoder sees what JSON makes.
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func FuzzSearchText(f *testing.F) {
	for _, seed := range []struct {
		query, path, include, context, max string
		regex, fold, hidden                bool
	}{
		{"needle", "", "", "", "", false, false, false},
		{"needle", "sub", "", "", "", false, false, false},                 // FIFO ignore files
		{"needle", "sub/deeper", "", "1", "", false, false, true},          // FIFOs above the start
		{"needle", "big.txt", "", "", "", false, false, false},             // over the size limit
		{"needle", "", "", "", "9223372036854775807", false, false, false}, // max_results 2^63-1
		{"needle", "", "", "", "1e30", false, false, false},
		{"needle", "", "", "9223372036854775807", "", false, false, false},
		{"needle", "", "", "-1e300", "-1", false, false, false},
		{`foo\nbar`, "", "", "", "", true, false, false}, // a regex across lines
		{`foo\sbar`, "", "", "", "", true, true, false},
		{"needle", "out", "", "", "", false, false, false},
		{"needle", "out/s.txt", "", "", "", false, false, false},
		{"needle", "../out" + outsideMarker, "", "", "", false, false, false},
		{"needle", "loopa", "", "", "", false, false, false},
		{"needle", "loopa/x", "", "", "", false, false, false},
		{"needle", "a.txt/x", "", "", "", false, false, false},
		{"needle", "evil-link", "", "", "", false, false, false},
		{"needle", "evil\nname.txt", "", "", "", false, false, false},
		{"needle", "fifo", "", "", "", false, false, false},
		{"needle", "sub/up/sub", "*.go", "", "", false, false, false},
		{"(", "", "", "", "", true, false, false},
		{"needle", "", "[", "", "", false, false, false},
		{"NEEDLE", "", "**/*.txt", "2", "1", false, true, true},
	} {
		f.Add(seed.query, seed.path, seed.include, seed.context, seed.max, seed.regex, seed.fold, seed.hidden)
	}
	fuzzFixture(f)
	f.Fuzz(func(t *testing.T, query, path, include, context, max string, regex, fold, hidden bool) {
		args := `{"query":` + quoteJSON(query)
		if path != "" {
			args += `,"paths":[` + quoteJSON(path) + `]`
		}
		if include != "" {
			args += `,"include":` + quoteJSON(include)
		}
		args += jsonField("context", context) + jsonField("max_results", max)
		args += fmt.Sprintf(`,"regex":%v,"case_insensitive":%v,"include_hidden":%v}`, regex, fold, hidden)
		fuzzCall(t, searchText, args, query, path, include, context, max)
	})
}

func FuzzSearchFiles(f *testing.F) {
	for _, seed := range []struct {
		pattern, path, max string
		hidden             bool
	}{
		{"**/*", "", "", false},
		{"**/*.txt", "sub", "", true}, // FIFO ignore files
		{"*", "sub/deeper", "", false},
		{"**", "", "9223372036854775807", true}, // max_results 2^63-1
		{"**", "", "1e30", false},
		{"*", "", "-1e30", false},
		{"*", "out", "", false},
		{"out/*", "", "", false},
		{"*", "../out" + outsideMarker, "", false},
		{"../*", "", "", false},
		{"/etc/*", "", "", false},
		{"*", "loopa", "", false},
		{"*", "a.txt/x", "", false},
		{"*", "evil-link", "", false},
		{"evil-link/*", "", "", false},
		{"**/*", "evil\nname.txt", "", false},
		{"sub/up/**", "", "", false},
		{"{a,b", "", "", false},
		{"[", "", "", false},
		{".hidden/**", "", "2", false},
	} {
		f.Add(seed.pattern, seed.path, seed.max, seed.hidden)
	}
	fuzzFixture(f)
	f.Fuzz(func(t *testing.T, pattern, path, max string, hidden bool) {
		args := `{"pattern":` + quoteJSON(pattern)
		if path != "" {
			args += `,"path":` + quoteJSON(path)
		}
		args += jsonField("max_results", max)
		args += fmt.Sprintf(`,"include_hidden":%v}`, hidden)
		fuzzCall(t, searchFiles, args, pattern, path, max)
	})
}
