// Package plugintest builds plugin binaries from this tree for tests that
// need real plugin processes.
package plugintest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	batches  int
)

// PrebuiltEnv names a directory of binaries built for the whole test
// run (make test builds every main package of the tree there first, in
// one go build): a package whose binary is there, under the package
// directory's base name, is not built again by each test process.
const PrebuiltEnv = "AGENTHOST_TEST_BINARIES"

// Binaries returns the binaries of pkgs, package paths relative to the
// module root such as "./plugins/fs", building those not built yet in one
// go build, which links them in parallel. The binaries of one test process
// are shared, and so are those of the directory PrebuiltEnv names.
func Binaries(t testing.TB, pkgs ...string) map[string]string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	prebuilt := os.Getenv(PrebuiltEnv)
	var missing []string
	for _, pkg := range pkgs {
		if _, ok := built[pkg]; ok || slices.Contains(missing, pkg) {
			continue
		}
		if prebuilt != "" {
			bin := filepath.Join(prebuilt, filepath.Base(pkg))
			if info, err := os.Stat(bin); err == nil && info.Mode().IsRegular() {
				built[pkg] = bin
				continue
			}
		}
		missing = append(missing, pkg)
	}
	if len(missing) > 0 {
		if buildDir == "" {
			dir, err := os.MkdirTemp("", "agenthost-plugintest-")
			if err != nil {
				t.Fatal(err)
			}
			buildDir = dir
		}
		batches++
		out := filepath.Join(buildDir, strconv.Itoa(batches))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", append([]string{"build", "-o", out + string(filepath.Separator)}, missing...)...)
		cmd.Dir = Root()
		if output, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %v: %v\n%s", missing, err, output)
		}
		for _, pkg := range missing {
			built[pkg] = filepath.Join(out, filepath.Base(pkg))
		}
	}
	bins := make(map[string]string, len(pkgs))
	for _, pkg := range pkgs {
		bins[pkg] = built[pkg]
	}
	return bins
}

// Binary returns the binary of one package; see Binaries.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	return Binaries(t, pkg)[pkg]
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

// Copy puts a copy of the binary of pkg into dir under the file name
// name, with the given mode, and returns its path: unlike Install, never a
// hard link, so that its mode and owner may be changed.
func Copy(t testing.TB, dir, name, pkg string, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(Binary(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode passes through the umask.
	if err := os.Chmod(dst, mode); err != nil {
		t.Fatal(err)
	}
	return dst
}

// IsolateCache points the user cache directory (where the host caches
// plugin descriptions) at a fresh temporary directory for the rest of the
// test process, so tests neither read nor fill the user's own. Call it
// from TestMain before the tests run; Cleanup removes it.
func IsolateCache() {
	dir, err := os.MkdirTemp("", "agenthost-cache-")
	if err != nil {
		panic(err)
	}
	// Go's build cache lives under the user cache directory too: keep
	// the one the tests were built with, or every plugin build starts cold.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	mu.Lock()
	cacheDir = dir
	mu.Unlock()
}

var cacheDir string

// Cleanup removes the shared binaries; call it from TestMain after the
// tests ran.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if cacheDir != "" {
		os.RemoveAll(cacheDir)
	}
}

// Buffer is a bytes.Buffer that a logger or a process may write while a
// test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
