package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// editRace edits every line of one file at once, each line by its own
// call, spread over the plugins given, and returns how many calls said
// they succeeded, how many answered that the file changed under them,
// and how many edits that were reported done are not in the file.
func editRace(t *testing.T, plugins []*fsPlugin, path string, lines int) (ok, changed, lost int) {
	t.Helper()
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	results := make([]string, lines)
	var wg sync.WaitGroup
	for i := range lines {
		p := plugins[i%len(plugins)]
		wg.Go(func() {
			results[i] = p.call("edit_file", map[string]any{
				"path":       path,
				"old_string": fmt.Sprintf("line %03d\n", i),
				"new_string": fmt.Sprintf("LINE %03d edited\n", i),
			})
		})
	}
	wg.Wait()
	final := readString(t, path)
	for i, res := range results {
		done := strings.Contains(final, fmt.Sprintf("LINE %03d edited\n", i))
		switch {
		case strings.HasPrefix(res, "Edited "):
			ok++
			if !done {
				lost++
			}
		case strings.Contains(res, "changed while"):
			changed++
			if done {
				t.Errorf("edit %d answered %q but is in the file", i, res)
			}
		default:
			t.Errorf("edit %d: %s", i, res)
		}
	}
	return ok, changed, lost
}

// Parallel edits of different lines of one file in one plugin process
// either land or answer that the file changed: none is lost.
func TestParallelEditsOnePlugin(t *testing.T) {
	t.Parallel()
	root := raceDir(t)
	p := startPlugin(t, []string{root})
	ok, changed, lost := editRace(t, []*fsPlugin{p}, filepath.Join(root, "f.txt"), 160)
	t.Logf("160 parallel edits in one plugin: %d reported done, %d answered the file changed, %d lost", ok, changed, lost)
	if lost > 0 {
		t.Errorf("%d of %d edits reported done are not in the file", lost, ok)
	}
}

// The same across two plugin processes, as two agenthost processes would
// run them.
func TestParallelEditsTwoPlugins(t *testing.T) {
	t.Parallel()
	root := raceDir(t)
	a, b := startPlugin(t, []string{root}), startPlugin(t, []string{root})
	ok, changed, lost := editRace(t, []*fsPlugin{a, b}, filepath.Join(root, "f.txt"), 80)
	t.Logf("80 parallel edits over two plugins: %d reported done, %d answered the file changed, %d lost", ok, changed, lost)
	if lost > 0 {
		t.Errorf("%d of %d edits reported done are not in the file", lost, ok)
	}
}

// write_file racing edit_file: the writes and the edits take turns, so a
// write that reported success is never undone by an edit that read the
// file before it.
func TestWriteRacingEdits(t *testing.T) {
	t.Parallel()
	root := raceDir(t)
	a, b := startPlugin(t, []string{root}), startPlugin(t, []string{root})
	path := filepath.Join(root, "f.txt")
	const lines = 20
	lost := 0
	for round := range 40 {
		var orig strings.Builder
		for i := range lines {
			fmt.Fprintf(&orig, "line %03d\n", i)
		}
		if err := os.WriteFile(path, []byte(orig.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		marker := fmt.Sprintf("written in round %d\n", round)
		var wg sync.WaitGroup
		var wrote string
		wg.Go(func() {
			wrote = a.call("write_file", map[string]any{"path": path, "content": marker + orig.String()})
		})
		for i := range lines {
			p := []*fsPlugin{a, b}[i%2]
			wg.Go(func() {
				p.call("edit_file", map[string]any{
					"path":       path,
					"old_string": fmt.Sprintf("line %03d\n", i),
					"new_string": fmt.Sprintf("LINE %03d edited\n", i),
				})
			})
		}
		wg.Wait()
		if !strings.HasPrefix(wrote, "Wrote ") {
			t.Fatalf("round %d: write_file: %s", round, wrote)
		}
		if final := readString(t, path); !strings.HasPrefix(final, marker) {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("in %d of 40 rounds write_file reported success, but an edit put back the content it read before", lost)
	}
}
