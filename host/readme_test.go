package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestREADMEProgramsCompile builds every Go program in README.md, so that
// what a newcomer copies works.
func TestREADMEProgramsCompile(t *testing.T) {
	t.Parallel()
	root := plugintest.Root()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go programs, want the embedding one and the plugin one", len(blocks))
	}
	// A directory starting with "_" is inside the module but outside ./...
	dir, err := os.MkdirTemp(root, "_readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i, b := range blocks {
		pkg := filepath.Join(dir, string(rune('a'+i)))
		if err := os.Mkdir(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), b[1], 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "vet", "./"+filepath.Base(dir)+"/"+filepath.Base(pkg))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README program %d does not build: %v\n%s\n%s", i+1, err, out, b[1])
		}
	}
}
