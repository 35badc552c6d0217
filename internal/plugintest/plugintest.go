// Package plugintest builds plugin binaries from this tree for tests that
// need real plugin processes.
package plugintest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Root is the module's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	mu       sync.Mutex
	buildDir string
	built    = map[string]string{} // package → binary
)

// Binary returns the path of the binary of pkg, a package path relative to
// the module root such as "./plugins/fs", building it the first time. The
// binaries of one test process are shared.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "agenthost-plugintest-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg)+"-"+strconv.Itoa(len(built)))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = bin
	return bin
}

// Install puts the binary of pkg into dir under the file name name, and
// returns its path.
func Install(t testing.TB, dir, name, pkg string) string {
	t.Helper()
	src := Binary(t, pkg)
	dst := filepath.Join(dir, name)
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Cleanup removes the shared binaries; call it from TestMain after the
// tests ran.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}
