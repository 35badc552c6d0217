package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestREADMEProgramsCompile builds every Go program in README.md and in
// the pages of docs/, so that what a newcomer copies works. The files of
// the walkthrough's own module (the blocks after
// <!-- outsider: file greet/NAME --> in docs/writing-tools.md) are vetted
// together, tests included; a block that is not a whole file (a function
// shown alone) is left out.
func TestREADMEProgramsCompile(t *testing.T) {
	t.Parallel()
	root := plugintest.Root()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	// The programs each page must hold at least: README's embedding example
	// and its tool, the embedding page's registry and agent, the
	// walkthrough's plugin and the weather plugin.
	want := map[string]int{"README.md": 2, "docs/embedding.md": 2, "docs/writing-tools.md": 2, "docs/permissions.md": 1}

	// A directory starting with "_" is inside the module but outside ./...
	dir, err := os.MkdirTemp(root, "_readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	blockRE := regexp.MustCompile("(?s)(?:<!-- outsider: file ([^ ]+) -->\n)?```go\n(.*?)```")
	isFile := regexp.MustCompile(`(?m)\A(//.*\n)*package `)
	var pkgs []string
	from := map[string]string{} // package directory → the page it came from
	for p, page := range pages {
		rel, _ := filepath.Rel(root, page)
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for i, b := range blockRE.FindAllSubmatch(text, -1) {
			name, src := string(b[1]), b[2]
			if !isFile.Match(src) {
				continue
			}
			pkg := filepath.Join(dir, fmt.Sprintf("p%d_%d", p, i))
			file := "main.go"
			if name != "" {
				pkg, file = filepath.Join(dir, filepath.Dir(name)), filepath.Base(name)
			}
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg, file), src, 0o644); err != nil {
				t.Fatal(err)
			}
			found[pkg] = true
			from[pkg] = rel
			if !slices.Contains(pkgs, pkg) {
				pkgs = append(pkgs, pkg)
			}
		}
		if n := len(found); n < want[filepath.ToSlash(rel)] {
			t.Errorf("%s has %d Go programs, want %d or more", rel, n, want[filepath.ToSlash(rel)])
		}
	}
	for _, pkg := range pkgs {
		rel, _ := filepath.Rel(root, pkg)
		cmd := exec.Command("go", "vet", "./"+rel)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("a Go program of %s (%s) does not build: %v\n%s", from[pkg], rel, err, out)
		}
	}
}
