//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// BenchmarkOneShot checks every one-shot speed target in one run: what a
// command costs a user or a client that starts agenthost for one answer,
// next to the cheapest program that does the same. Every figure is a
// median of alternating runs (the variant, its baseline, the variant, its
// baseline, ...), so that the noise of a shared machine hits both sides;
// each sub-benchmark reports the median ("ms"), the baseline's median
// ("base-ms"), their ratio ("ratio") and the target ("target"), and the
// benchmark ends with the table of them all. Process figures run from exec
// to exit, stdout drained.
//
//   - version: agenthost --version against hello, a Go program printing
//     hello with fmt, built in the same run with the same toolchain. Target
//     1.5x.
//   - tools: agenthost tools with a warm description cache (primed once;
//     --cache-dir, --config -, --plugins with the four built-in plugins)
//     against hello. Target 1.5x.
//   - call_read_file: agenthost call read_file '{"path":"one.txt"}' on a
//     one-line file (--root a temporary directory) against hello. Target 3x.
//   - search_text_literal: agenthost call search_text
//     '{"query":"func main","max_results":10000}' with Go's source tree
//     ($(go env GOROOT)/src) as the root, against rg -n 'func main' . run in
//     that tree. Target 1.1x.
//   - search_files_glob: agenthost call search_files
//     '{"pattern":"**/*.go","max_results":10000}' against fd -e go (fdfind
//     on Debian) run in the same tree. Target 1.0x.
//   - search_text_regex: a regex with no literal to prefilter on,
//     [A-Z]{5,}_[A-Z]+, "regex":true and "max_results":10000, against rg -n.
//     Target 2x.
//   - mcp_tools_list: agenthost mcp over stdio, from launch to the answer to
//     the first tools/list (initialize, notifications/initialized,
//     tools/list; protocol version 2025-06-18), then killed, against hello.
//     Target 2x.
//   - mcp_read_file: the same to the answer to a first tools/call of
//     read_file, which starts the fs plugin. Target 4x.
//   - mcp_calls/*: one call over MCP stdio, agenthost mcp against the
//     official filesystem server (@modelcontextprotocol/server-filesystem on
//     Node, from tests/mcp-servers), both started once and driven by the same
//     minimal JSON-RPC client, the time from writing a request to reading its
//     answer, for every operation both servers have (below). Target 1.0x
//     each.
//
// The MCP call pairs work in the same workspace, with absolute paths; the
// first answers of each pair are checked to be the same work done (the
// same lines, content or effect):
//
//   - list_dir with names_only against list_directory, and list_dir against
//     list_directory_with_sizes, on a directory of 200 files: names and
//     kinds only on both sides (no stat per entry), then sizes on both.
//   - list_dir with depth 2 and names_only against directory_tree on a
//     tree of 10 directories of 20 files: every name and kind of the tree
//     as JSON on both sides (agenthost's structuredContent, checked to hold
//     the 200 files, besides its indented text; directory_tree has no
//     depth, and the tree is 2 deep, so depth 2 is all of it); then the
//     same with exclude ["**/*.txt"] against excludePatterns ["**/*.txt"],
//     which leave out the 100 .txt files on both sides (the reference
//     matches a pattern with * against the path from the listed
//     directory, so *.txt alone would exclude nothing a level down).
//   - read_file against read_text_file on a one-line file and on a file of
//     100 KiB (1,600 lines; under read_file's 256 KiB cap, so both answer
//     all of it), and with tail 10 on both on a file of 5,000 lines with
//     no final newline (so the reference's tail, which counts an empty last
//     line, answers the same 10 lines).
//   - read_multiple_files against read_multiple_files of 5 two-line
//     files.
//   - file_info of one path against get_file_info: a stat each, link not
//     followed on our side, followed on theirs (the path is a file);
//     agenthost's answer also names the owner and the group.
//   - search_files against search_files with the glob **/*.go on the
//     200-file tree (100 matches).
//   - mkdir against create_directory on an existing directory.
//   - write_file against write_file of 6 bytes over an existing file: both
//     write a temporary file and rename it over the old one, but
//     agenthost's also syncs the file and its directory and the
//     reference's does not (durable against not), and takes the file's
//     lock.
//   - edit_file with edits and dry_run against edit_file with edits and
//     dryRun, one edit of line 50 of a 100-line file: both read the file,
//     apply the edit and answer its diff, and write nothing, so the calls
//     repeat on one file.
//   - edit_file against edit_file with the same edit written, the calls
//     alternating between two edits (A to B, then B to A), each timed, on
//     a file of each server's own: both read the file, replace, answer a
//     diff and replace the file through a temporary file (agenthost's
//     synced and locked, as write_file's).
//   - move against move_file, renaming a file a.txt to b.txt and back in
//     turn, each server its own file: a refusal to replace an existing
//     destination on both sides.
//
// Making the searches equivalent: both sides search the same tree with the
// same pattern and skip the same files (hidden ones, binaries, and what
// ignore files exclude: rg reads .gitignore only inside a git repository,
// agenthost everywhere, but the tree's three .gitignore files exclude
// nothing either side would search). agenthost's answers are capped where
// rg's and fd's are not: max_results (default 200 lines for search_text,
// 500 paths for search_files, at most 10,000), 4 MiB of output, and 500
// characters per line. max_results is set to its maximum, 10,000, so the
// literal search (about 1,000 lines) and the glob (about 7,700 paths)
// answer as many lines as rg and fd print, which the warm-up checks and
// logs (the lines differ only in order, and rg's paths start with ./); the
// regex matches about 60,000 lines, so agenthost prints its first
// 10,000 and a note with the count of the rest (it still reads every file
// and counts every match) while rg prints all of them, about 7 MB.
//
// Every binary is built as make build builds it: go build with
// CGO_ENABLED=0 and -tags grpcnotrace, the go command's own settings (go env) but no GOFLAGS from
// the environment, so that a -race or -cover of the test run does not
// reach them. Where rg, fd, node or the npm server is missing, that part is
// skipped with the package to install; nothing is installed.
//
// With -benchtime 1x (make bench) a run makes 15 alternating pairs of
// each process comparison, 9 of each search of Go's tree and 200 of each
// MCP call (after 20 unmeasured), in about a minute and a half:
//
//	go test -run '^$' -bench '^BenchmarkOneShot$' -benchtime 1x ./cmd/agenthost/
func BenchmarkOneShot(b *testing.B) {
	s := newOneShot(b)
	defer s.printTable()

	hello := s.proc("", nil, s.hello)
	b.Run("version", func(b *testing.B) {
		s.compare(b, "agenthost --version", "hello", 1.5,
			s.proc("", s.env, s.exe, "--version"), hello, nil)
	})
	b.Run("tools", func(b *testing.B) {
		s.compare(b, "agenthost tools (warm cache)", "hello", 1.5,
			s.agenthost(s.work, "tools"), hello,
			func(b *testing.B, out, _ []byte) {
				if !bytes.Contains(out, []byte("read_file")) {
					b.Fatalf("agenthost tools listed no read_file:\n%s", out)
				}
			})
	})
	b.Run("call_read_file", func(b *testing.B) {
		s.compare(b, "agenthost call read_file one.txt", "hello", 3,
			s.agenthost(s.work, "call", "read_file", `{"path":"one.txt"}`), hello,
			func(b *testing.B, out, _ []byte) {
				if string(out) != "hello, world\n" {
					b.Fatalf("agenthost call read_file answered %q", out)
				}
			})
	})

	b.Run("search_text_literal", func(b *testing.B) {
		what, base := "call search_text 'func main'", "rg -n 'func main'"
		rg := s.need(b, what, base, 1.1, "rg")
		s.comparePairs(b, oneShotSearchPairs, what, base, 1.1,
			s.agenthost(s.tree, "call", "search_text", `{"query":"func main","max_results":10000}`),
			s.proc(s.tree, oneShotRgEnv(), rg, "-n", "func main", "."),
			sameLineCount)
	})
	b.Run("search_files_glob", func(b *testing.B) {
		what, base := "call search_files '**/*.go'", "fd -e go"
		fd := s.need(b, what, base, 1.0, "fd", "fdfind")
		s.comparePairs(b, oneShotSearchPairs, what, base, 1.0,
			s.agenthost(s.tree, "call", "search_files", `{"pattern":"**/*.go","max_results":10000}`),
			s.proc(s.tree, nil, fd, "-e", "go"),
			sameLineCount)
	})
	b.Run("search_text_regex", func(b *testing.B) {
		const re = `[A-Z]{5,}_[A-Z]+`
		what, base := "call search_text regex "+re, "rg -n '"+re+"'"
		rg := s.need(b, what, base, 2, "rg")
		s.comparePairs(b, oneShotSearchPairs, what, base, 2,
			s.agenthost(s.tree, "call", "search_text", `{"query":"`+re+`","regex":true,"max_results":10000}`),
			s.proc(s.tree, oneShotRgEnv(), rg, "-n", re, "."),
			func(b *testing.B, out, base []byte) {
				b.Logf("agenthost printed %d lines (max_results 10000, then a note), rg %d",
					oneShotLines(out), oneShotLines(base))
			})
	})

	b.Run("mcp_tools_list", func(b *testing.B) {
		s.compare(b, "mcp: launch to first tools/list answer", "hello", 2,
			s.mcpLaunch("tools/list", `{}`, `"read_file"`), hello, nil)
	})
	b.Run("mcp_read_file", func(b *testing.B) {
		s.compare(b, "mcp: launch to first read_file answer", "hello", 4,
			s.mcpLaunch("tools/call", `{"name":"read_file","arguments":{"path":"one.txt"}}`, `hello, world`), hello, nil)
	})

	b.Run("mcp_calls", s.mcpCalls)
}

const (
	// oneShotPairs is how many alternating pairs a process comparison
	// makes per iteration; oneShotSearchPairs, one that searches Go's
	// source tree (about a second a pair).
	oneShotPairs       = 15
	oneShotSearchPairs = 9
	// oneShotCalls is how many alternating pairs an MCP call comparison
	// makes per iteration, after oneShotWarmCalls unmeasured ones.
	oneShotCalls     = 200
	oneShotWarmCalls = 20
	// oneShotProtocol is the MCP protocol version the client speaks.
	oneShotProtocol = "2025-06-18"
	// oneShotTailFileLines is the length of the file whose last lines the
	// tail calls read; oneShotBigFile, the size of the larger file read
	// whole.
	oneShotTailFileLines = 5000
	oneShotBigFile       = 100 << 10
	// oneShotEditFrom and oneShotEditTo are line 50 of the edited file
	// before and after an edit; the real edits alternate between them.
	oneShotEditFrom = "\tvalue := compute(1) // the line the edits change"
	oneShotEditTo   = "\tvalue := compute(2) // the line the edits change"
)

// oneShot is what the comparisons share: the binaries, the workspace and
// the figures so far.
type oneShot struct {
	b       *testing.B
	exe     string   // agenthost
	plugins string   // the four built-in plugins
	cache   string   // a warm description cache
	env     []string // agenthost's environment
	hello   string   // the hello-world binary
	work    string   // the workspace of the file tools
	tree    string   // Go's source tree, "" when there is none
	rows    []oneShotRow
}

// oneShotRow is one line of the table.
type oneShotRow struct {
	what, base      string
	median, baseMed time.Duration
	target          float64
	skipped         string
}

func newOneShot(b *testing.B) *oneShot {
	s := &oneShot{b: b, env: agenthostEnv()}
	bin := b.TempDir()
	pkgs := []string{"./cmd/agenthost"}
	for _, pkg := range builtinPlugins {
		pkgs = append(pkgs, pkg)
	}
	oneShotBuild(b, plugintest.Root(), bin, pkgs...)
	s.exe = filepath.Join(bin, "agenthost")
	s.plugins = filepath.Join(bin, "plugins")
	if err := os.Mkdir(s.plugins, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, pkg := range builtinPlugins {
		if err := os.Rename(filepath.Join(bin, filepath.Base(pkg)), filepath.Join(s.plugins, host.PluginPrefix+name)); err != nil {
			b.Fatal(err)
		}
	}

	src := b.TempDir()
	hello := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n"
	if err := os.WriteFile(filepath.Join(src, "hello.go"), []byte(hello), 0o644); err != nil {
		b.Fatal(err)
	}
	oneShotBuild(b, src, bin, "hello.go")
	s.hello = filepath.Join(bin, "hello")

	s.work = b.TempDir()
	s.makeWorkspace()
	s.cache = b.TempDir()
	if out, err := s.agenthostCmd(s.work, "tools").CombinedOutput(); err != nil {
		b.Fatalf("priming the description cache: %v\n%s", err, out)
	}

	out, err := oneShotGo("", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	tree := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(filepath.Join(tree, "fmt")); err == nil {
		s.tree = tree
	}
	return s
}

// oneShotRgEnv is rg's environment: without a configuration file of the
// user's.
func oneShotRgEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "RIPGREP_CONFIG_PATH=")
	})
}

// oneShotGo is a go command with make build's environment: CGO_ENABLED=0
// and no GOFLAGS from the environment (the go env file still applies).
func oneShotGo(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "CGO_ENABLED=")
	}), "CGO_ENABLED=0")
	return cmd
}

// oneShotBuild builds pkgs, from dir, into out in one go build, as make
// build builds them.
func oneShotBuild(b *testing.B, dir, out string, pkgs ...string) {
	b.Helper()
	cmd := oneShotGo(dir, append([]string{"build", "-tags", "grpcnotrace", "-o", out + string(filepath.Separator)}, pkgs...)...)
	if output, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("CGO_ENABLED=0 go build -tags grpcnotrace %v: %v\n%s", pkgs, err, output)
	}
}

// makeWorkspace fills the workspace: one.txt, dir200 (200 files), tree
// (10 directories of 10 .go and 10 .txt files each), out/made, and what
// the MCP calls read and change: lines.txt (5,000 lines, no newline at
// its end), big.txt (100 KiB of 64-byte lines), multi (five small files),
// edit (a file of Go for each server and one for dry runs, 100 lines
// each) and move (a.txt for each server).
func (s *oneShot) makeWorkspace() {
	write := func(name, content string) {
		path := filepath.Join(s.work, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			s.b.Fatal(err)
		}
	}
	write("one.txt", "hello, world\n")
	for i := range 200 {
		write(fmt.Sprintf("dir200/file-%03d.txt", i), strings.Repeat("x", i)+"\n")
	}
	for d := range 10 {
		for f := range 10 {
			write(fmt.Sprintf("tree/d%02d/f%02d.go", d, f), "package d\n")
			write(fmt.Sprintf("tree/d%02d/f%02d.txt", d, f), "text\n")
		}
	}
	if err := os.MkdirAll(filepath.Join(s.work, "out", "made"), 0o755); err != nil {
		s.b.Fatal(err)
	}
	var lines strings.Builder
	for i := range oneShotTailFileLines {
		if i > 0 {
			lines.WriteByte('\n')
		}
		fmt.Fprintf(&lines, "line %05d of a file read from its end", i+1)
	}
	write("lines.txt", lines.String())
	var big strings.Builder
	for i := range oneShotBigFile / 64 {
		fmt.Fprintf(&big, "%-63s\n", fmt.Sprintf("line %05d of a 100 KiB file", i+1))
	}
	write("big.txt", big.String())
	for i := range 5 {
		write(fmt.Sprintf("multi/m%d.txt", i+1), fmt.Sprintf("file %d\nof five\n", i+1))
	}
	for _, name := range []string{"edit/ours.go", "edit/theirs.go", "edit/dry.go"} {
		write(name, oneShotEditFile(oneShotEditFrom))
	}
	write("move/ours/a.txt", "moved\n")
	write("move/theirs/a.txt", "moved\n")
}

// oneShotEditFile is the file the edits change: 100 lines of Go, line 50
// the one edited.
func oneShotEditFile(line50 string) string {
	var sb strings.Builder
	sb.WriteString("package edit\n\nfunc f() int {\n")
	for i := 4; i <= 99; i++ {
		if i == 50 {
			sb.WriteString(line50 + "\n")
			continue
		}
		fmt.Fprintf(&sb, "\t_ = %d // line %d\n", i, i)
	}
	sb.WriteString("}\n")
	return sb.String()
}

// agenthostCmd is agenthost with the built-in plugins, the warm cache, no
// configuration file and root as its workspace.
func (s *oneShot) agenthostCmd(root string, args ...string) *exec.Cmd {
	cmd := exec.Command(s.exe, append([]string{"--config", "-", "--plugins", s.plugins, "--cache-dir", s.cache, "--root", root}, args...)...)
	cmd.Env = s.env
	return cmd
}

// oneShotVariant runs once and returns how long it took and its output.
type oneShotVariant func(b *testing.B) (time.Duration, []byte)

// proc is a variant running a whole process in dir, from exec to exit.
func (s *oneShot) proc(dir string, env []string, name string, args ...string) oneShotVariant {
	var stdout, stderr bytes.Buffer
	return func(b *testing.B) (time.Duration, []byte) {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
		}
		return d, stdout.Bytes()
	}
}

// agenthost is a variant running agenthost as agenthostCmd does.
func (s *oneShot) agenthost(root string, args ...string) oneShotVariant {
	cmd := s.agenthostCmd(root, args...)
	return s.proc("", cmd.Env, cmd.Path, cmd.Args[1:]...)
}

// need returns the path of the first of programs on PATH, or records the
// comparison as skipped and skips it.
func (s *oneShot) need(b *testing.B, what, base string, target float64, programs ...string) string {
	b.Helper()
	if s.tree == "" {
		s.skip(b, why("no Go source tree (go env GOROOT)/src"), oneShotRow{what: what, base: base, target: target})
	}
	for _, p := range programs {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	pkg := map[string]string{"rg": "ripgrep", "fd": "fd-find"}[programs[0]]
	s.skip(b, why(programs[0]+" is not installed: install the Debian package "+pkg), oneShotRow{what: what, base: base, target: target})
	return ""
}

type why string

// skip records rows as skipped and skips b.
func (s *oneShot) skip(b *testing.B, reason why, rows ...oneShotRow) {
	b.Helper()
	for _, r := range rows {
		r.skipped = string(reason)
		s.rows = append(s.rows, r)
	}
	b.Skip(string(reason) + " (make bench installs nothing)")
}

// sameLineCount checks that agenthost printed as many lines as the
// baseline program, and logs the count.
func sameLineCount(b *testing.B, out, base []byte) {
	b.Helper()
	if n, m := oneShotLines(out), oneShotLines(base); n != m {
		b.Fatalf("agenthost printed %d lines, the baseline %d: the searches differ", n, m)
	}
	b.Logf("both printed %d lines", oneShotLines(out))
}

// oneShotLines counts the lines of out, the last one with or without its
// newline.
func oneShotLines(out []byte) int {
	n := bytes.Count(out, []byte("\n"))
	if len(out) > 0 && out[len(out)-1] != '\n' {
		n++
	}
	return n
}

// compare runs a and base alternately, oneShotPairs pairs per iteration
// after one unmeasured run of each (which check, when not nil, checks),
// and reports the medians.
func (s *oneShot) compare(b *testing.B, what, baseName string, target float64, a, base oneShotVariant, check func(b *testing.B, out, base []byte)) {
	s.comparePairs(b, oneShotPairs, what, baseName, target, a, base, check)
}

// comparePairs is compare with pairs pairs per iteration.
func (s *oneShot) comparePairs(b *testing.B, pairs int, what, baseName string, target float64, a, base oneShotVariant, check func(b *testing.B, out, base []byte)) {
	_, out := a(b)
	out = bytes.Clone(out)
	_, baseOut := base(b)
	if check != nil {
		check(b, out, baseOut)
	}
	var at, bt []time.Duration
	for b.Loop() {
		for range pairs {
			d, _ := a(b)
			at = append(at, d)
			d, _ = base(b)
			bt = append(bt, d)
		}
	}
	s.report(b, oneShotRow{what: what, base: baseName, target: target, median: oneShotMedian(at), baseMed: oneShotMedian(bt)})
}

// report reports a row's figures as metrics and adds it to the table.
func (s *oneShot) report(b *testing.B, r oneShotRow) {
	ratio := float64(r.median) / float64(r.baseMed)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(oneShotMs(r.median), "ms")
	b.ReportMetric(oneShotMs(r.baseMed), "base-ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(r.target, "target")
	s.rows = append(s.rows, r)
}

func oneShotMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func oneShotMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// printTable prints every row: what | median | baseline median | ratio |
// target.
func (s *oneShot) printTable() {
	if len(s.rows) == 0 {
		return
	}
	ms := func(d time.Duration) string {
		if d < time.Millisecond {
			return fmt.Sprintf("%.3f ms", oneShotMs(d))
		}
		return fmt.Sprintf("%.2f ms", oneShotMs(d))
	}
	lines := [][]string{{"what", "median", "baseline median", "ratio", "target"}}
	for _, r := range s.rows {
		what := r.what + " vs " + r.base
		target := fmt.Sprintf("<= %g", r.target)
		if r.skipped != "" {
			lines = append(lines, []string{what, "-", "-", "-", target + " (skipped: " + r.skipped + ")"})
			continue
		}
		ratio := float64(r.median) / float64(r.baseMed)
		if ratio > r.target {
			target += " MISSED"
		} else {
			target += " met"
		}
		lines = append(lines, []string{what, ms(r.median), ms(r.baseMed), fmt.Sprintf("%.2f", ratio), target})
	}
	widths := make([]int, len(lines[0]))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], len(c))
		}
	}
	var sb strings.Builder
	sb.WriteString("\nBenchmarkOneShot: medians of alternating runs; ratio = median / baseline median\n")
	for _, l := range lines {
		for i, c := range l {
			if i > 0 {
				sb.WriteString(" | ")
			}
			if i == len(l)-1 {
				sb.WriteString(c)
			} else {
				fmt.Fprintf(&sb, "%-*s", widths[i], c)
			}
		}
		sb.WriteByte('\n')
	}
	fmt.Print(sb.String())
}

// mcpLaunch is a variant that launches agenthost mcp over stdio, makes
// the request method with params after initialize and
// notifications/initialized, and times launch to its answer, which must
// contain want; then it kills the server.
func (s *oneShot) mcpLaunch(method, params, want string) oneShotVariant {
	return func(b *testing.B) (time.Duration, []byte) {
		cmd := s.agenthostCmd(s.work, "mcp")
		start := time.Now()
		c := startOneShotClient(b, cmd)
		defer c.kill()
		c.initialize()
		at, result := c.roundTrip(method, params)
		d := at.Sub(start)
		if !bytes.Contains(result, []byte(want)) {
			b.Fatalf("agenthost mcp: %s answered without %s: %s", method, want, result)
		}
		return d, result
	}
}

// oneShotPair is an operation both MCP servers have: a tool of each and
// the arguments of each for equivalent work.
type oneShotPair struct {
	name         string // the sub-benchmark
	what, base   string // the table's words for each side
	ours, theirs string // tool names
	// args are agenthost's arguments (JSON), theirsArgs the reference's
	// (nil: the same). With more than one, the calls take them in turn,
	// so that calls that change files undo each other.
	args, theirsArgs []string
	// check checks the answers to the first call of each;
	// checkStructured, agenthost's structuredContent then.
	check           func(b *testing.B, ours, theirs string)
	checkStructured func(b *testing.B, ours json.RawMessage)
}

// argsAt returns the arguments of call i of each side.
func (p oneShotPair) argsAt(i int) (ours, theirs string) {
	ours = p.args[i%len(p.args)]
	if p.theirsArgs == nil {
		return ours, ours
	}
	return ours, p.theirsArgs[i%len(p.theirsArgs)]
}

// oneShotJSON is v as JSON.
func oneShotJSON(b *testing.B, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// mcpPairs are the operations mcpCalls compares, in the workspace that
// makeWorkspace made.
func (s *oneShot) mcpPairs(b *testing.B) []oneShotPair {
	path := func(name string) string { return filepath.Join(s.work, name) }
	args := func(kv ...any) string {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return oneShotJSON(b, m)
	}
	// countLines checks that both answers have want lines holding sub.
	countLines := func(sub string, want int) func(b *testing.B, ours, theirs string) {
		return func(b *testing.B, ours, theirs string) {
			count := func(text string) int {
				n := 0
				for l := range strings.Lines(text) {
					if strings.Contains(l, sub) {
						n++
					}
				}
				return n
			}
			if n, m := count(ours), count(theirs); n != want || m != want {
				b.Fatalf("agenthost answered %d lines with %s, the reference %d; want %d\nagenthost:\n%s\nreference:\n%s",
					n, sub, m, want, oneShotCut(ours), oneShotCut(theirs))
			}
		}
	}
	// both checks that each answer holds every one of subs.
	both := func(subs ...string) func(b *testing.B, ours, theirs string) {
		return func(b *testing.B, ours, theirs string) {
			for _, sub := range subs {
				if !strings.Contains(ours, sub) || !strings.Contains(theirs, sub) {
					b.Fatalf("want both answers to hold %q\nagenthost:\n%s\nreference:\n%s", sub, oneShotCut(ours), oneShotCut(theirs))
				}
			}
		}
	}
	// sameText checks that both answers are want, a final newline aside.
	sameText := func(want string) func(b *testing.B, ours, theirs string) {
		want = strings.TrimSuffix(want, "\n")
		return func(b *testing.B, ours, theirs string) {
			if strings.TrimSuffix(ours, "\n") != want || strings.TrimSuffix(theirs, "\n") != want {
				b.Fatalf("want both answers to be the %d bytes expected; agenthost answered %d, the reference %d\nagenthost:\n%s\nreference:\n%s",
					len(want), len(ours), len(theirs), oneShotCut(ours), oneShotCut(theirs))
			}
		}
	}
	// content checks that the named files hold want.
	content := func(b *testing.B, want string, names ...string) {
		for _, name := range names {
			data, err := os.ReadFile(path(name))
			if err != nil || string(data) != want {
				b.Fatalf("after the first call %s holds %q (%v), want %q", name, oneShotCut(string(data)), err, oneShotCut(want))
			}
		}
	}
	// treeFiles checks that agenthost's structured listing holds want
	// files a level down, in directories, as directory_tree's JSON does.
	treeFiles := func(want int) func(b *testing.B, structured json.RawMessage) {
		return func(b *testing.B, structured json.RawMessage) {
			var listing struct {
				Entries []struct {
					Type     string `json:"type"`
					Children []struct {
						Type string `json:"type"`
					} `json:"children"`
				} `json:"entries"`
			}
			if err := json.Unmarshal(structured, &listing); err != nil {
				b.Fatalf("agenthost's structuredContent: %v: %s", err, oneShotCut(string(structured)))
			}
			n := 0
			for _, e := range listing.Entries {
				for _, c := range e.Children {
					if e.Type == "directory" && c.Type == "file" {
						n++
					}
				}
			}
			if n != want {
				b.Fatalf("agenthost's structuredContent lists %d files in the directories, want %d: %s", n, want, oneShotCut(string(structured)))
			}
		}
	}
	readAll := func(name string) string {
		data, err := os.ReadFile(path(name))
		if err != nil {
			b.Fatal(err)
		}
		return string(data)
	}

	lines := readAll("lines.txt")
	tail := lines[strings.LastIndex(lines, "line 04991"):]
	var multi, multiNames []string
	for i := range 5 {
		multi = append(multi, path(fmt.Sprintf("multi/m%d.txt", i+1)))
		multiNames = append(multiNames, fmt.Sprintf("file %d\nof five", i+1))
	}
	ourEdit := func(name, from, to string, dry bool) string {
		return args("path", path(name), "edits", []map[string]string{{"old_string": from, "new_string": to}}, "dry_run", dry)
	}
	theirsEdit := func(name, from, to string, dry bool) string {
		return args("path", path(name), "edits", []map[string]string{{"oldText": from, "newText": to}}, "dryRun", dry)
	}
	moveArgs := func(side, from, to string) string {
		return args("source", path("move/"+side+"/"+from), "destination", path("move/"+side+"/"+to))
	}
	one := func(v string) []string { return []string{v} }

	return []oneShotPair{
		{name: "list_dir", what: "list_dir names_only (200 entries)", base: "list_directory",
			ours: "list_dir", theirs: "list_directory",
			args: one(args("path", path("dir200"), "names_only", true)), theirsArgs: one(args("path", path("dir200"))),
			check: countLines("file-", 200)},
		{name: "list_dir_sizes", what: "list_dir (200 entries, sizes)", base: "list_directory_with_sizes",
			ours: "list_dir", theirs: "list_directory_with_sizes",
			args: one(args("path", path("dir200"))), check: countLines("file-", 200)},
		{name: "list_dir_tree", what: "list_dir depth 2 names_only (210 entries)", base: "directory_tree",
			ours: "list_dir", theirs: "directory_tree",
			args: one(args("path", path("tree"), "depth", 2, "names_only", true)), theirsArgs: one(args("path", path("tree"))),
			check: countLines("f0", 200), checkStructured: treeFiles(200)},
		{name: "list_dir_tree_exclude", what: "list_dir depth 2 names_only exclude **/*.txt (110 entries)", base: "directory_tree excludePatterns **/*.txt",
			ours: "list_dir", theirs: "directory_tree",
			args:       one(args("path", path("tree"), "depth", 2, "names_only", true, "exclude", []string{"**/*.txt"})),
			theirsArgs: one(args("path", path("tree"), "excludePatterns", []string{"**/*.txt"})),
			check: func(b *testing.B, ours, theirs string) {
				countLines(".go", 100)(b, ours, theirs)
				countLines(".txt", 0)(b, ours, theirs)
			},
			checkStructured: treeFiles(100)},
		{name: "read_file", what: "read_file (1 line)", base: "read_text_file",
			ours: "read_file", theirs: "read_text_file",
			args: one(args("path", path("one.txt"))), check: sameText("hello, world\n")},
		{name: "read_file_100k", what: "read_file (100 KiB)", base: "read_text_file",
			ours: "read_file", theirs: "read_text_file",
			args: one(args("path", path("big.txt"))), check: sameText(readAll("big.txt"))},
		{name: "read_file_tail", what: "read_file tail 10 (5,000 lines)", base: "read_text_file tail 10",
			ours: "read_file", theirs: "read_text_file",
			args: one(args("path", path("lines.txt"), "tail", 10)), check: sameText(tail)},
		{name: "read_multiple_files", what: "read_multiple_files (5 small files)", base: "read_multiple_files",
			ours: "read_multiple_files", theirs: "read_multiple_files",
			args: one(args("paths", multi)), check: both(multiNames...)},
		{name: "file_info", what: "file_info (1 path)", base: "get_file_info",
			ours: "file_info", theirs: "get_file_info",
			args: one(args("paths", []string{path("big.txt")})), theirsArgs: one(args("path", path("big.txt"))),
			check: func(b *testing.B, ours, theirs string) {
				size := strconv.Itoa(oneShotBigFile)
				if !strings.Contains(ours, size+" bytes") || !strings.Contains(theirs, "size: "+size) {
					b.Fatalf("want both answers to give the size %s\nagenthost:\n%s\nreference:\n%s", size, ours, theirs)
				}
			}},
		{name: "search_files", what: "search_files **/*.go (200 files)", base: "search_files",
			ours: "search_files", theirs: "search_files",
			args: one(args("path", path("tree"), "pattern", "**/*.go")), check: countLines(".go", 100)},
		{name: "mkdir", what: "mkdir (existing)", base: "create_directory",
			ours: "mkdir", theirs: "create_directory",
			args: one(args("path", path("out/made")))},
		{name: "write_file", what: "write_file (6 bytes)", base: "write_file",
			ours: "write_file", theirs: "write_file",
			args: one(args("path", path("out/written.txt"), "content", "hello\n"))},
		{name: "edit_file", what: "edit_file (1 edit, 100 lines)", base: "edit_file",
			ours: "edit_file", theirs: "edit_file",
			args: []string{
				ourEdit("edit/ours.go", oneShotEditFrom, oneShotEditTo, false),
				ourEdit("edit/ours.go", oneShotEditTo, oneShotEditFrom, false),
			},
			theirsArgs: []string{
				theirsEdit("edit/theirs.go", oneShotEditFrom, oneShotEditTo, false),
				theirsEdit("edit/theirs.go", oneShotEditTo, oneShotEditFrom, false),
			},
			check: func(b *testing.B, ours, theirs string) {
				both("-"+oneShotEditFrom, "+"+oneShotEditTo)(b, ours, theirs)
				content(b, oneShotEditFile(oneShotEditTo), "edit/ours.go", "edit/theirs.go")
			}},
		{name: "edit_file_dry_run", what: "edit_file dry_run (1 edit, 100 lines)", base: "edit_file dryRun",
			ours: "edit_file", theirs: "edit_file",
			args:       one(ourEdit("edit/dry.go", oneShotEditFrom, oneShotEditTo, true)),
			theirsArgs: one(theirsEdit("edit/dry.go", oneShotEditFrom, oneShotEditTo, true)),
			check: func(b *testing.B, ours, theirs string) {
				both("-"+oneShotEditFrom, "+"+oneShotEditTo)(b, ours, theirs)
				content(b, oneShotEditFile(oneShotEditFrom), "edit/dry.go")
			}},
		{name: "move", what: "move (a file, renamed)", base: "move_file",
			ours: "move", theirs: "move_file",
			args:       []string{moveArgs("ours", "a.txt", "b.txt"), moveArgs("ours", "b.txt", "a.txt")},
			theirsArgs: []string{moveArgs("theirs", "a.txt", "b.txt"), moveArgs("theirs", "b.txt", "a.txt")},
			check: func(b *testing.B, _, _ string) {
				content(b, "moved\n", "move/ours/b.txt", "move/theirs/b.txt")
				for _, side := range []string{"ours", "theirs"} {
					if _, err := os.Lstat(path("move/" + side + "/a.txt")); !errors.Is(err, fs.ErrNotExist) {
						b.Fatalf("after the first move move/%s/a.txt is still there (%v)", side, err)
					}
				}
			}},
	}
}

// mcpCalls compares calls of agenthost mcp's tools with the official
// filesystem server's, both started once.
func (s *oneShot) mcpCalls(b *testing.B) {
	pairs := s.mcpPairs(b)
	rows := func() []oneShotRow {
		var rs []oneShotRow
		for _, p := range pairs {
			rs = append(rs, p.row())
		}
		return rs
	}

	node, err := exec.LookPath("node")
	if err != nil {
		s.skip(b, "node is not installed: install the Debian package nodejs (20 or newer)", rows()...)
	}
	if out, err := exec.Command(node, "--version").Output(); err != nil {
		s.skip(b, why(fmt.Sprintf("%s --version: %v", node, err)), rows()...)
	} else if v, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "."); atoiOr0(v) < 20 {
		s.skip(b, why(fmt.Sprintf("node is %s: the reference server needs Node.js 20 or newer (Debian package nodejs)", bytes.TrimSpace(out))), rows()...)
	}
	entry := filepath.Join(mcptest.Dir(b), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		s.skip(b, "the npm package @modelcontextprotocol/server-filesystem is not installed: npm ci in tests/mcp-servers (make test does it)", rows()...)
	}

	ours := startOneShotClient(b, s.agenthostCmd(s.work, "mcp"))
	defer ours.kill()
	ours.initialize()
	ref := exec.Command(node, entry, s.work)
	ref.Dir = s.work
	theirs := startOneShotClient(b, ref)
	defer theirs.kill()
	theirs.initialize()

	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			ours.b, theirs.b = b, b
			n := 0
			call := func() (time.Duration, time.Duration) {
				oa, ta := p.argsAt(n)
				n++
				d, a := ours.callTool(p.ours, oa)
				e, t := theirs.callTool(p.theirs, ta)
				if n == 1 && p.check != nil {
					p.check(b, a, t)
				}
				if n == 1 && p.checkStructured != nil {
					p.checkStructured(b, ours.structured)
				}
				return d, e
			}
			for range oneShotWarmCalls {
				call()
			}
			var at, tt []time.Duration
			for b.Loop() {
				for range oneShotCalls {
					d, e := call()
					at = append(at, d)
					tt = append(tt, e)
				}
			}
			r := p.row()
			r.median, r.baseMed = oneShotMedian(at), oneShotMedian(tt)
			s.report(b, r)
		})
	}
}

// row is the pair's line of the table, without figures.
func (p oneShotPair) row() oneShotRow {
	return oneShotRow{what: "mcp " + p.what, base: "reference " + p.base, target: 1}
}

// oneShotCut is text cut to what a failure message shows.
func oneShotCut(text string) string {
	if len(text) > 1000 {
		return text[:1000] + "..."
	}
	return text
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// oneShotClient is a minimal MCP client over stdio: newline-delimited
// JSON-RPC on the server's stdin and stdout, one request at a time.
type oneShotClient struct {
	b      *testing.B // fails on errors
	cmd    *exec.Cmd
	in     *os.File // the server's stdin
	out    *os.File // the server's stdout
	r      *bufio.Reader
	stderr *plugintest.Buffer
	id     int
	// structured is the structuredContent of the last tool call.
	structured json.RawMessage
}

// startOneShotClient starts cmd with its stdin and stdout on pipes.
func startOneShotClient(b *testing.B, cmd *exec.Cmd) *oneShotClient {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	c := &oneShotClient{b: b, cmd: cmd, in: inW, out: outR, stderr: &plugintest.Buffer{}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		b.Fatalf("starting %s: %v", cmd.Path, err)
	}
	c.r = bufio.NewReaderSize(outR, 1<<16)
	return c
}

// kill kills the server and waits for it.
func (c *oneShotClient) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
	c.in.Close()
	c.out.Close()
}

// initialize opens the session.
func (c *oneShotClient) initialize() {
	c.roundTrip("initialize", `{"protocolVersion":"`+oneShotProtocol+`","capabilities":{},"clientInfo":{"name":"oneshot-bench","version":"1.0.0"}}`)
	c.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

func (c *oneShotClient) write(line []byte) {
	if _, err := c.in.Write(line); err != nil {
		c.b.Fatalf("%s: writing %s: %v\n%s", c.cmd.Path, line, err, c.stderr.String())
	}
}

// oneShotMessage is a JSON-RPC message read from the server.
type oneShotMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// roundTrip sends a request and returns when its answer was read, and
// the answer's result. The answer is decoded only after it has been read
// whole, so the time does not include decoding it.
func (c *oneShotClient) roundTrip(method, params string) (time.Time, json.RawMessage) {
	c.id++
	id := strconv.Itoa(c.id)
	req := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + "}\n")
	c.out.SetReadDeadline(time.Now().Add(time.Minute))
	c.write(req)
	for {
		line, err := c.r.ReadBytes('\n')
		at := time.Now()
		if err != nil {
			c.b.Fatalf("%s: reading the answer to %s: %v\n%s", c.cmd.Path, method, err, c.stderr.String())
		}
		var m oneShotMessage
		if err := json.Unmarshal(line, &m); err != nil {
			c.b.Fatalf("%s: answer to %s: %v: %s", c.cmd.Path, method, err, line)
		}
		switch {
		case m.Method != "" && m.ID != nil: // a request of the server's
			c.write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"method not found"}}` + "\n"))
		case string(m.ID) == id:
			if m.Error != nil {
				c.b.Fatalf("%s: %s: error %d: %s", c.cmd.Path, method, m.Error.Code, m.Error.Message)
			}
			return at, m.Result
		}
	}
}

// callTool calls a tool and returns how long the call took and its text;
// a tool error fails the benchmark.
func (c *oneShotClient) callTool(name, args string) (time.Duration, string) {
	start := time.Now()
	at, raw := c.roundTrip("tools/call", `{"name":"`+name+`","arguments":`+args+`}`)
	d := at.Sub(start)
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		c.b.Fatalf("%s: %s: %v: %s", c.cmd.Path, name, err, raw)
	}
	c.structured = result.StructuredContent
	var text strings.Builder
	for _, part := range result.Content {
		text.WriteString(part.Text)
	}
	if result.IsError {
		c.b.Fatalf("%s: %s %s failed: %s", c.cmd.Path, name, args, text.String())
	}
	return d, text.String()
}
