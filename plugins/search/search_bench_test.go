//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The benchmarks search Go's own source tree ($(go env GOROOT)/src), in
// process, and run ripgrep (rg) and fd on the same tree in the same run,
// alternately. Each reports the medians of both sides, wall-clock ("ms",
// "ms-rg") and CPU ("cpu-ms", "cpu-ms-rg"), and the ratios of ours to
// theirs ("x-rg", "cpu-x-rg"; below 1 is faster). Without rg or fd on
// PATH a benchmark reports our side only. Get them from the Debian
// packages ripgrep and fd-find (fd is installed as fdfind).
//
//	go test -run '^$' -bench . -benchtime 3x ./plugins/search/

// benchTree is the tree the benchmarks search.
func benchTree(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("no Go source tree: %v", err)
	}
	return dir
}

// benchRuns is how many times each side runs for its median.
const benchRuns = 9

func BenchmarkSearchTextLiteral(b *testing.B) {
	benchText(b, map[string]any{"query": "func main"}, "-n", "-F", "func main")
}

func BenchmarkSearchTextRegex(b *testing.B) {
	benchText(b, map[string]any{"query": `func \w+Handler`, "regex": true}, "-n", `func \w+Handler`)
}

// BenchmarkSearchTextRegexUnderscore: a regex whose only literal is one
// common byte, "_", which the bytes its neighbours require make worth
// looking for.
func BenchmarkSearchTextRegexUnderscore(b *testing.B) {
	benchText(b, map[string]any{"query": `[A-Z]{5,}_[A-Z]+`, "regex": true}, "-n", `[A-Z]{5,}_[A-Z]+`)
}

// BenchmarkSearchTextRegexNoLiteral: a regex without a literal, looked
// for by the run of five upper-case letters it requires.
func BenchmarkSearchTextRegexNoLiteral(b *testing.B) {
	benchText(b, map[string]any{"query": `[A-Z]{5,}[0-9]+`, "regex": true}, "-n", `[A-Z]{5,}[0-9]+`)
}

func BenchmarkSearchTextCaseInsensitive(b *testing.B) {
	benchText(b, map[string]any{"query": "errors.new", "case_insensitive": true}, "-n", "-i", "-F", "errors.new")
}

func BenchmarkSearchFilesGlob(b *testing.B) {
	tree := benchTree(b)
	ours := func() {
		out, err := callIn(b.Context(), b, searchFiles, []string{tree}, map[string]any{"pattern": "**/*.go"})
		if err != nil || len(out) == 0 {
			b.Fatalf("search_files: %v", err)
		}
	}
	fd := lookFd()
	var theirs func() time.Duration
	if fd != "" {
		theirs = func() time.Duration { return runTool(b, tree, fd, "--glob", "*.go", "--type", "f") }
	}
	benchAgainst(b, ours, theirs, "fd")
}

func benchText(b *testing.B, args map[string]any, rgArgs ...string) {
	tree := benchTree(b)
	ours := func() {
		out, err := callIn(b.Context(), b, searchText, []string{tree}, args)
		if err != nil || len(out) == 0 {
			b.Fatalf("search_text: %v", err)
		}
	}
	rg, _ := exec.LookPath("rg")
	var theirs func() time.Duration
	if rg != "" {
		theirs = func() time.Duration { return runTool(b, tree, rg, rgArgs...) }
	}
	benchAgainst(b, ours, theirs, "rg")
}

// benchAgainst times ours and theirs alternately and reports the medians
// of both, wall-clock ("ms") and CPU (user and system, "cpu-ms"), and the
// ratios of ours to theirs ("x-rg", "cpu-x-rg"). On a shared machine the
// CPU times are the steadier figures.
func benchAgainst(b *testing.B, ours func(), theirs func() time.Duration, name string) {
	ours() // warm the page cache
	if theirs != nil {
		theirs()
	}
	var wall, cpu, otherWall, otherCPU []time.Duration
	for b.Loop() {
		for range benchRuns {
			c0 := cpuTime()
			t0 := time.Now()
			ours()
			wall = append(wall, time.Since(t0))
			cpu = append(cpu, cpuTime()-c0)
			if theirs != nil {
				t0 = time.Now()
				otherCPU = append(otherCPU, theirs())
				otherWall = append(otherWall, time.Since(t0))
			}
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(wall)), "ms")
	b.ReportMetric(ms(median(cpu)), "cpu-ms")
	if theirs == nil {
		b.Logf("%s is not on PATH: no comparison (Debian: apt-get install ripgrep fd-find)", name)
		return
	}
	b.ReportMetric(ms(median(otherWall)), "ms-"+name)
	b.ReportMetric(ms(median(otherCPU)), "cpu-ms-"+name)
	b.ReportMetric(float64(median(wall))/float64(median(otherWall)), "x-"+name)
	b.ReportMetric(float64(median(cpu))/float64(median(otherCPU)), "cpu-x-"+name)
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// runTool runs a command in dir and returns the CPU time it used.
func runTool(tb testing.TB, dir, name string, args ...string) time.Duration {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || len(out) == 0 {
		tb.Fatalf("%s %v: %v", name, args, err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
