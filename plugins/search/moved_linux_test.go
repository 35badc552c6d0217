package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// racerEnv tells a test process started by racerProcess to be the racer:
// the root and the outside directory, separated by the list separator.
const racerEnv = "AGENTHOST_SEARCH_TEST_RACER"

// TestRacerHelper is no test of its own: started as a separate process by
// TestPluginSearchRacingMovedDirectory, it races the searches as another
// process on the machine would. It moves ROOT/d out to OUT/d, puts
// secrets in it while it is out (a new file in each subdirectory, and
// d/f1.txt replaced), takes them away again and moves d back, until it is
// killed (or for two minutes at most). Every 32 rounds it writes how many
// it made to OUT/rounds.
func TestRacerHelper(t *testing.T) {
	spec := os.Getenv(racerEnv)
	if spec == "" {
		t.Skip("run by TestPluginSearchRacingMovedDirectory")
	}
	root, out, _ := strings.Cut(spec, string(os.PathListSeparator))
	in, away := filepath.Join(root, "d"), filepath.Join(out, "d")
	subs, _ := filepath.Glob(filepath.Join(in, "sub*"))
	end := time.Now().Add(2 * time.Minute)
	for round := 1; time.Now().Before(end); round++ {
		if os.Rename(in, away) != nil {
			continue
		}
		for _, sub := range subs {
			os.WriteFile(filepath.Join(away, filepath.Base(sub), "secret.txt"), []byte("SECRET needle\n"), 0o644)
		}
		orig := filepath.Join(away, "f1.txt")
		os.Rename(orig, orig+".orig")
		os.WriteFile(orig, []byte("SECRET needle\n"), 0o644)
		time.Sleep(300 * time.Microsecond)
		os.Rename(orig+".orig", orig)
		for _, sub := range subs {
			os.Remove(filepath.Join(away, filepath.Base(sub), "secret.txt"))
		}
		os.Rename(away, in)
		if round%32 == 0 {
			os.WriteFile(filepath.Join(out, "rounds"), []byte(strconv.Itoa(round)), 0o644)
		}
		time.Sleep(300 * time.Microsecond)
	}
}

// TestPluginSearchRacingMovedDirectory: while another process moves a
// directory out of the workspace root and back, putting files in it and
// replacing one while it is out, neither search reports a file, or
// content, that was only ever outside.
func TestPluginSearchRacingMovedDirectory(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("d/f%d.txt", i)] = fmt.Sprintf("needle %d\n", i)
	}
	for s := range 4 {
		for i := range 20 {
			files[fmt.Sprintf("d/sub%d/g%d.txt", s, i)] = "needle\n"
		}
	}
	for i := range 10 {
		files[fmt.Sprintf("e%d/x.txt", i)] = "needle\n"
	}
	root := writeTree(t, files)
	out := t.TempDir()

	racer := exec.Command(os.Args[0], "-test.run=^TestRacerHelper$", "-test.count=1")
	racer.Env = append(os.Environ(), racerEnv+"="+root+string(os.PathListSeparator)+out)
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		racer.Process.Kill()
		racer.Wait()
	})

	p := startPlugin(t, root)
	const calls = 100
	leaks := 0
	for range calls {
		if got := p.call("search_text", map[string]any{"query": "needle", "max_results": 10000}); strings.Contains(got, "SECRET") {
			leaks++
			t.Logf("search_text:\n%s", got)
		}
		if got := p.call("search_files", map[string]any{"pattern": "**/*.txt", "max_results": 10000}); strings.Contains(got, "secret") {
			leaks++
			t.Logf("search_files:\n%s", got)
		}
	}
	if leaks > 0 {
		t.Errorf("%d of %d searches reported what was only outside the root", leaks, 2*calls)
	}
	rounds, _ := os.ReadFile(filepath.Join(out, "rounds"))
	if n, _ := strconv.Atoi(string(rounds)); n == 0 {
		t.Errorf("the racer made no round: the test raced nothing")
	}
}
