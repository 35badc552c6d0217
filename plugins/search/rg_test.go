package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The equality tests run search_text and ripgrep (search_files and fd) on
// the same fixture tree. ripgrep's and fd's outputs are committed in
// testdata as golden files, so the tests hold without them; when rg or fd
// is on PATH, the tests also run it live and compare. After a change to
// the fixture or the cases, regenerate the golden files with
//
//	go test ./plugins/search -run 'Ripgrep|Fd' -update

var update = flag.Bool("update", false, "rewrite the golden files from rg and fd")

// fixture is the tree the equality tests search. It has a .git directory,
// so that rg and fd take its .gitignore files as a repository's.
var fixture = map[string]string{
	".git/HEAD":   "ref: refs/heads/main TODO needle\n",
	".git/config": "[core] needle\n",
	".gitignore": "# build output\n*.log\n/build/\nsecret*.txt\n!secret-ok.txt\ndocs/**/draft.md\ntmp/\n" +
		"\\#hash.txt\nspace\\ .txt\nfoo?.md\n[xy]z.txt\n",
	".ignore":              "*.bak\n",
	".env":                 "SECRET=needle\n",
	".hidden/notes.txt":    "TODO hidden needle\n",
	"README.md":            "# Fixture\n\nTODO: write more.\nThe colour of the needle.\nA color.\n",
	"main.go":              "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello   world\") // TODO\n}\n",
	"a.txt":                "needle in a.txt\n",
	"a/b.txt":              "needle in a/b.txt\nsecond line\n",
	"a-b.txt":              "needle in a-b.txt\n",
	"app.log":              "needle in a log\n",
	"logs/deep/server.log": "needle deep in a log\n",
	"build/out.txt":        "needle built\n",
	"src/build/keep.txt":   "needle kept: /build/ is anchored\n",
	"secret.txt":           "needle secret\n",
	"secret-two.txt":       "needle secret two\n",
	"secret-ok.txt":        "needle secret but re-included\n",
	"docs/guide.md":        "Guide: func main is where it starts.\nHELLO World\n",
	"docs/draft.md":        "needle draft at the top\n",
	"docs/v1/draft.md":     "needle draft deeper\n",
	"docs/v1/final.md":     "needle final\n",
	"tmp/scratch.txt":      "needle scratch\n",
	"src/tmp":              "needle: a file named tmp is no directory\n",
	"#hash.txt":            "needle hash\n",
	"space .txt":           "needle space\n",
	"foo1.md":              "needle foo1\n",
	"foo12.md":             "needle foo12\n",
	"xz.txt":               "needle xz\n",
	"wz.txt":               "needle wz\n",
	"old.bak":              "needle backup\n",
	"src/.gitignore":       "generated.go\n!keep.log\n",
	"src/generated.go":     "package src // needle generated\n",
	"src/keep.log":         "needle: re-included below\n",
	"src/lib.go": "package src\n\nimport \"errors\"\n\n// ErrNope is an error.\nvar ErrNope = errors.New(\"nope\")\n\n" +
		"func handleThing() error { return ErrNope }\n\nfunc ServeHTTPHandler() {}\n\nfunc parse123(x int) int { return x * 1000 }\n",
	"src/util/strings.go":      "package util\n\n// Reverse reverses s.\nfunc Reverse(s string) string {\n\treturn s // TODO\n}\n",
	"src/util/strings_test.go": "package util\n\nimport \"testing\"\n\nfunc TestReverse(t *testing.T) {\n\t_ = errors.new\n}\n",
	"src/c/x.c":                "#include \"x.h\"\nint main(void) { return 0; }\n",
	"src/c/x.h":                "int helper(int);\n",
	"src/c/x.cpp":              "int cpp_main() { return 1; }\n",
	"bin.dat":                  "needle\x00binary\n",
	"crlf.txt":                 "needle one\r\nplain\r\nneedle two\r\n",
	"noeol.txt":                "first\nlast needle",
	"empty.txt":                "",
	"unicode.txt":              "École élève\nthe \u212aelvin sign\nKELVIN plain\nstraße STRASSE\nlong \u017fs\n",
	"context.txt":              "1 pin\n2\n3\n4 needle\n5\n6 needle\n7\n8\n9\n10\n11 needle\n12\n13\n14\n15\n16\n17 pin\n",
}

// rgCase is a search_text call and the rg arguments that mean the same.
type rgCase struct {
	args map[string]any
	rg   []string
}

// rg's -g globs override the ignore files, search_text's include only
// filters: the cases give rg a file type instead where it matters.
var rgCases = map[string]rgCase{
	"literal":                 {map[string]any{"query": "needle"}, []string{"-F", "needle"}},
	"literal with spaces":     {map[string]any{"query": "func main"}, []string{"-F", "func main"}},
	"literal regex chars":     {map[string]any{"query": "main()"}, []string{"-F", "main()"}},
	"regex word":              {map[string]any{"query": `func \w+\(`, "regex": true}, []string{`func \w+\(`}},
	"regex handler":           {map[string]any{"query": `func \w+Handler`, "regex": true}, []string{`func \w+Handler`}},
	"regex anchored":          {map[string]any{"query": `^import`, "regex": true}, []string{`^import`}},
	"regex end anchor":        {map[string]any{"query": `colou?r`, "regex": true}, []string{`colou?r`}},
	"regex digits":            {map[string]any{"query": `[0-9]{3,}`, "regex": true}, []string{`[0-9]{3,}`}},
	"regex alternation":       {map[string]any{"query": `TODO|needle draft`, "regex": true}, []string{`TODO|needle draft`}},
	"regex spaces":            {map[string]any{"query": `hello\s+world`, "regex": true}, []string{`hello\s+world`}},
	"regex line end":          {map[string]any{"query": `needle$`, "regex": true}, []string{`needle$`}},
	"case-insensitive":        {map[string]any{"query": "errors.new", "case_insensitive": true}, []string{"-i", "-F", "errors.new"}},
	"case-insensitive hello":  {map[string]any{"query": "hello world", "case_insensitive": true}, []string{"-i", "-F", "hello world"}},
	"case-insensitive kelvin": {map[string]any{"query": "kelvin", "case_insensitive": true}, []string{"-i", "-F", "kelvin"}},
	"case-insensitive long s": {map[string]any{"query": "STRASSE", "case_insensitive": true}, []string{"-i", "-F", "STRASSE"}},
	"case-insensitive accent": {map[string]any{"query": "école", "case_insensitive": true}, []string{"-i", "-F", "école"}},
	"case-insensitive regex":  {map[string]any{"query": `todo:?\s`, "regex": true, "case_insensitive": true}, []string{"-i", `todo:?\s`}},
	"include by name":         {map[string]any{"query": "package", "include": "*.go"}, []string{"--type-add", "inc:*.go", "-t", "inc", "-F", "package"}},
	"include braces":          {map[string]any{"query": "int", "include": "*.{c,h}"}, []string{"--type-add", "inc:*.{c,h}", "-t", "inc", "-F", "int"}},
	"include path":            {map[string]any{"query": "func", "include": "src/**/*.go"}, []string{"-g", "src/**/*.go", "-F", "func"}},
	"context 1":               {map[string]any{"query": "needle", "context": 1}, []string{"-C", "1", "-F", "needle"}},
	"context 2 regex":         {map[string]any{"query": "needle|pin", "regex": true, "context": 2}, []string{"-C", "2", "needle|pin"}},
	"hidden":                  {map[string]any{"query": "needle", "include_hidden": true}, []string{"--hidden", "-g", "!.git", "-F", "needle"}},
}

func TestSearchTextEqualsRipgrep(t *testing.T) {
	t.Parallel()
	root := writeTree(t, fixture)
	rg, _ := exec.LookPath("rg")
	for name, tc := range rgCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"max_results": 10000}
			for k, v := range tc.args {
				args[k] = v
			}
			got := mustCall(t, searchText, root, args)
			if strings.HasPrefix(got, "No matches") {
				got = ""
			}
			golden := filepath.Join("testdata", "rg", strings.ReplaceAll(name, " ", "_")+".txt")
			if rg != "" {
				cmd := []string{"-n", "--sort", "path", "--no-heading", "--color", "never"}
				live := runForGolden(t, root, rg, append(append(cmd, tc.rg...), "--", "."))
				if *update {
					writeGolden(t, golden, live)
				}
				if got != live {
					t.Errorf("search_text(%v) differs from rg %v\n--- search_text:\n%s\n--- rg:\n%s", tc.args, tc.rg, got, live)
				}
			}
			want := readGolden(t, golden)
			if got != want {
				t.Errorf("search_text(%v) differs from %s\n--- search_text:\n%s\n--- golden:\n%s", tc.args, golden, got, want)
			}
		})
	}
}

// fdCases are search_files patterns and fd globs that mean the same: fd
// matches its glob against names.
var fdCases = map[string]struct {
	pattern string
	fd      []string
}{
	"go files":     {"**/*.go", []string{"--glob", "*.go"}},
	"markdown":     {"**/*.md", []string{"--glob", "*.md"}},
	"drafts":       {"**/draft.md", []string{"--glob", "draft.md"}},
	"braces":       {"**/*.{c,h}", []string{"--glob", "*.{c,h}"}},
	"class":        {"**/[ax]*.txt", []string{"--glob", "[ax]*.txt"}},
	"everything":   {"**", []string{"--glob", "*"}},
	"directories":  {"**/v1", []string{"--glob", "v1"}},
	"all hidden":   {"**", []string{"--hidden", "--glob", "*"}},
	"single char":  {"**/x.?", []string{"--glob", "x.?"}},
	"no such file": {"**/*.rs", []string{"--glob", "*.rs"}},
}

func TestSearchFilesEqualsFd(t *testing.T) {
	t.Parallel()
	root := writeTree(t, fixture)
	fd := lookFd()
	for name, tc := range fdCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"pattern": tc.pattern, "max_results": 10000}
			if slices.Contains(tc.fd, "--hidden") {
				args["include_hidden"] = true
			}
			got := mustCall(t, searchFiles, root, args)
			if strings.HasPrefix(got, "No files") {
				got = ""
			}
			golden := filepath.Join("testdata", "fd", strings.ReplaceAll(name, " ", "_")+".txt")
			if fd != "" {
				live := runForGolden(t, root, fd, append([]string{"--color", "never", "--exclude", ".git"}, tc.fd...))
				live = sortedLines(live)
				if *update {
					writeGolden(t, golden, live)
				}
				if got != live {
					t.Errorf("search_files(%q) differs from fd %v\n--- search_files:\n%s\n--- fd:\n%s", tc.pattern, tc.fd, got, live)
				}
			}
			if want := readGolden(t, golden); got != want {
				t.Errorf("search_files(%q) differs from %s\n--- search_files:\n%s\n--- golden:\n%s", tc.pattern, golden, got, want)
			}
		})
	}
}

// runForGolden runs a tool in dir and returns its output in search_text's
// form: no "./" before paths, no "\r" at line ends, no final newline.
func runForGolden(t *testing.T, dir, name string, args []string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("%s %v: %v", name, args, err)
		}
	}
	var lines []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\r")
		lines = append(lines, strings.TrimPrefix(line, "./"))
	}
	return strings.Join(lines, "\n")
}

func sortedLines(s string) string {
	if s == "" {
		return s
	}
	lines := strings.Split(s, "\n")
	slices.SortFunc(lines, func(a, b string) int {
		return comparePaths(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
	})
	return strings.Join(lines, "\n")
}

func readGolden(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with rg and fd on PATH and -update to write it)", err)
	}
	return string(bytes.TrimSuffix(data, []byte("\n")))
}

func writeGolden(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		content += "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
