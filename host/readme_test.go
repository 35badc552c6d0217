package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestREADMEProgramsCompile builds every Go program in README.md, so that
// what a newcomer copies works. The files of the walkthrough's own module
// (the blocks after <!-- outsider: file greet/NAME -->) are vetted together,
// tests included; a block that is not a whole file (a function shown
// alone) is left out.
func TestREADMEProgramsCompile(t *testing.T) {
	t.Parallel()
	root := plugintest.Root()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)(?:<!-- outsider: file ([^ ]+) -->\n)?```go\n(.*?)```").FindAllSubmatch(readme, -1)
	// A directory starting with "_" is inside the module but outside ./...
	dir, err := os.MkdirTemp(root, "_readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	isFile := regexp.MustCompile(`(?m)\A(//.*\n)*package `)
	var pkgs []string
	for i, b := range blocks {
		name, src := string(b[1]), b[2]
		if !isFile.Match(src) {
			continue
		}
		pkg := filepath.Join(dir, string(rune('a'+i)))
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
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	if len(pkgs) < 3 {
		t.Fatalf("README.md has %d Go programs, want the embedding one, the walkthrough's plugin and the weather plugin", len(pkgs))
	}
	for _, pkg := range pkgs {
		rel, _ := filepath.Rel(root, pkg)
		cmd := exec.Command("go", "vet", "./"+rel)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README program %s does not build: %v\n%s", rel, err, out)
		}
	}
}
