package host_test

// The mcpServers blocks of the reference servers' READMEs, pasted
// unchanged but for the directories they name, with the built-ins
// loaded: every tool of every server works, those whose names the
// built-ins hold under the server's name as a prefix.
//
// The blocks run `npx -y @modelcontextprotocol/server-NAME`. No test may
// use the network, so npx here is a shim, first in PATH, that runs the
// package from npx's cache as npx does once it has fetched it: the
// launcher's cache agenthost gives the server (launchers/NAME in its
// cache directory, where npm_config_cache points) holds the packages of
// tests/mcp-servers, copied there before the server starts, and the shim
// execs node on the package's bin there. The rest is as a user has it:
// the server in its sandbox with what agenthost grants a launcher.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// blockPackages are the packages the shim runs, each by its bin.
var blockPackages = []string{
	"@modelcontextprotocol/server-filesystem",
	"@modelcontextprotocol/server-memory",
	"@modelcontextprotocol/server-everything",
}

// npxShim puts a directory holding the npx shim first in PATH, for the
// test, and returns where the servers' launcher caches go: the cache
// directory to give the registry (Options.CacheDir).
func npxShim(t *testing.T) (cacheDir string) {
	t.Helper()
	node := mcptest.Node(t)
	modules := filepath.Join(mcptest.Dir(t), "node_modules")
	var cases strings.Builder
	for _, pkg := range blockPackages {
		data, err := os.ReadFile(filepath.Join(modules, pkg, "package.json"))
		if err != nil {
			t.Fatalf("%s is not installed (npm ci in tests/mcp-servers): %v", pkg, err)
		}
		var manifest struct {
			Bin map[string]string `json:"bin"`
		}
		if err := json.Unmarshal(data, &manifest); err != nil || len(manifest.Bin) != 1 {
			t.Fatalf("%s: want one bin, got %v (%v)", pkg, manifest.Bin, err)
		}
		for _, bin := range manifest.Bin {
			fmt.Fprintf(&cases, "%s) bin=%s ;;\n", pkg, bin)
		}
	}
	dir := t.TempDir()
	shim := `#!/bin/sh
# npx with a warm cache: the package, fetched already, in npx's cache.
while [ "$1" = -y ] || [ "$1" = --yes ]; do shift; done
pkg=$1
shift
case "$pkg" in
` + cases.String() + `*) echo "npx (test shim): $pkg is not in the cache, and there is no network" >&2; exit 1 ;;
esac
exec ` + node + ` "$npm_config_cache/_npx/warm/node_modules/$pkg/$bin" "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return t.TempDir()
}

// warmNPX fills npx's caches of the servers named names as npx would
// have left them: the packages of tests/mcp-servers, linked (hard links,
// or copies across file systems), the servers' own packages copied, so
// that what a server writes beside its script (server-memory's
// memory.jsonl) stays in its cache.
func warmNPX(t *testing.T, cacheDir string, names ...string) {
	t.Helper()
	src := filepath.Join(mcptest.Dir(t), "node_modules")
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			dst := filepath.Join(cacheDir, "launchers", name, "npm_config_cache", "_npx", "warm")
			if err := os.MkdirAll(dst, 0o700); err != nil {
				errs[i] = err
				return
			}
			if err := exec.Command("cp", "-al", src, dst).Run(); err != nil {
				if out, err := exec.Command("cp", "-R", src, dst).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("copying %s: %v: %s", src, err, out)
					return
				}
			}
			for _, pkg := range blockPackages {
				own := filepath.Join(dst, "node_modules", pkg)
				if err := os.RemoveAll(own); err != nil {
					errs[i] = err
					return
				}
				if out, err := exec.Command("cp", "-R", filepath.Join(src, pkg), own).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("copying %s: %v: %s", pkg, err, out)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("filling npx's cache of %s: %v", names[i], err)
		}
	}
}

// pasteBlock reads block as the configuration file it is pasted into.
func pasteBlock(t *testing.T, block string) []host.MCPServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agenthost.json")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f.MCPServers()
}

// callEach calls each tool of calls once, and checks what its answer
// holds; it fails on an error.
func callEach(t *testing.T, reg *host.ToolRegistry, calls []toolCall) {
	t.Helper()
	for _, c := range calls {
		got := reg.Execute(t.Context(), c.tool, []byte(c.args))
		if host.IsError(got) || !strings.Contains(got, c.want) {
			t.Errorf("%s(%s) = %.400q, want it to hold %q", c.tool, c.args, got, c.want)
		}
	}
}

type toolCall struct{ tool, args, want string }

// mustHaveCalled checks that calls call every tool the server serves.
func mustHaveCalled(t *testing.T, reg *host.ToolRegistry, server string, calls []toolCall) {
	t.Helper()
	rep := report(t, reg, server)
	for _, tool := range rep.Tools {
		if !slices.ContainsFunc(calls, func(c toolCall) bool { return c.tool == tool }) {
			t.Errorf("the test calls no %s of %s", tool, server)
		}
	}
}

// filesystemCalls call each tool of server-filesystem once, in dir (where
// notes.txt, old.txt and dot.png are) and other (where b.txt is);
// allowed is a directory list_allowed_directories lists.
func filesystemCalls(dir, other, allowed string) []toolCall {
	q := func(p string) string { b, _ := json.Marshal(p); return string(b) }
	notes, moved := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "moved.txt")
	return []toolCall{
		{"list_allowed_directories", `{}`, allowed},
		{"read_text_file", `{"path":` + q(notes) + `}`, "swordfish"},
		{"filesystem_read_file", `{"path":` + q(notes) + `,"head":1}`, "swordfish"},
		{"read_media_file", `{"path":` + q(filepath.Join(dir, "dot.png")) + `}`, "image/png"},
		{"filesystem_read_multiple_files", `{"paths":[` + q(notes) + `,` + q(filepath.Join(other, "b.txt")) + `]}`, "other"},
		{"filesystem_write_file", `{"path":` + q(filepath.Join(dir, "new.txt")) + `,"content":"written\n"}`, "Successfully wrote"},
		{"filesystem_edit_file", `{"path":` + q(notes) + `,"edits":[{"oldText":"marlin","newText":"tuna"}]}`, "+tuna"},
		{"create_directory", `{"path":` + q(filepath.Join(dir, "sub", "deep")) + `}`, "Successfully created"},
		{"list_directory", `{"path":` + q(dir) + `}`, "[FILE] new.txt"},
		{"list_directory_with_sizes", `{"path":` + q(dir) + `}`, "notes.txt"},
		{"directory_tree", `{"path":` + q(dir) + `}`, `"deep"`},
		{"move_file", `{"source":` + q(filepath.Join(dir, "old.txt")) + `,"destination":` + q(moved) + `}`, "Successfully moved"},
		{"filesystem_search_files", `{"path":` + q(dir) + `,"pattern":"**/*.txt"}`, moved},
		{"get_file_info", `{"path":` + q(moved) + `}`, "size"},
	}
}

// filesystemFiles writes the files filesystemCalls reads in dir and
// other.
func filesystemFiles(t *testing.T, dir, other string) {
	t.Helper()
	// The smallest PNG there is, for read_media_file.
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\r\n-\xb4\x00\x00\x00\x00IEND\xaeB`\x82"
	for path, data := range map[string]string{
		filepath.Join(dir, "notes.txt"): "swordfish\nmarlin\n",
		filepath.Join(dir, "old.txt"):   "to be moved\n",
		filepath.Join(dir, "dot.png"):   png,
		filepath.Join(other, "b.txt"):   "other\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestREADMEBlocksRunUnchanged: the README blocks of server-filesystem
// (directories as arguments), server-memory and server-everything, in
// one configuration beside the built-ins fs and search.
func TestREADMEBlocksRunUnchanged(t *testing.T) {
	// Not parallel: PATH leads to the npx shim.
	cacheDir := npxShim(t)
	warmNPX(t, cacheDir, "filesystem", "memory", "everything")
	// The directories the filesystem block names, outside the workspace:
	// the server is to serve them, and writes there.
	desktop, other, work := t.TempDir(), t.TempDir(), t.TempDir()
	filesystemFiles(t, desktop, other)
	block := fmt.Sprintf(`{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        %q,
        %q
      ]
    },
    "memory": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-memory"
      ]
    },
    "everything": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-everything"
      ]
    }
  }
}
`, desktop, other)
	var logs plugintest.Buffer
	reg := load(t, pluginDir(t, "fs", "search"), &host.Options{
		Roots:      []string{work},
		CacheDir:   cacheDir,
		MCPServers: pasteBlock(t, block),
		Logger:     hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	})
	for _, name := range []string{"filesystem", "memory", "everything"} {
		if rep := report(t, reg, name); rep.Err != nil || len(rep.Refused) > 0 {
			t.Fatalf("%s: %v, refused %q", name, rep.Err, rep.Refused)
		}
	}

	// The five tools whose names the built-ins hold, under the server's
	// name, said in one line for the server.
	rep := report(t, reg, "filesystem")
	wantRenamed := []string{
		"read_file as filesystem_read_file", "read_multiple_files as filesystem_read_multiple_files",
		"write_file as filesystem_write_file", "edit_file as filesystem_edit_file", "search_files as filesystem_search_files",
	}
	if !slices.Equal(rep.Renamed, wantRenamed) || len(rep.Tools) != 14 {
		t.Errorf("filesystem: %d tools %q, renamed %q, want 14 and %q", len(rep.Tools), rep.Tools, rep.Renamed, wantRenamed)
	}
	if n := strings.Count(logs.String(), "registered with its name as a prefix"); n != 1 || strings.Contains(logs.String(), "refusing tool") {
		t.Errorf("the log says so %d times, want once:\n%s", n, logs.String())
	}
	// The next command, its tools from the cache, says nothing at the
	// default level: the line is at info level.
	var warm plugintest.Buffer
	plugins := pluginDir(t, "fs", "search")
	again := load(t, plugins, &host.Options{Roots: []string{work}, CacheDir: cacheDir, MCPServers: pasteBlock(t, block),
		Logger: hclog.New(&hclog.LoggerOptions{Output: &warm, Level: hclog.Warn})})
	if rep := report(t, again, "filesystem"); !rep.Cached || !slices.Equal(rep.Renamed, wantRenamed) || warm.String() != "" {
		t.Errorf("from the cache: cached %v, renamed %q, log %q", rep.Cached, rep.Renamed, warm.String())
	}
	again.Close()
	if err := os.WriteFile(filepath.Join(work, "here.txt"), []byte("the workspace's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := call(t, reg, "read_file", `{"path":"here.txt"}`); !strings.Contains(got, "the workspace's") {
		t.Errorf("the built-in read_file = %q", got)
	}

	notes := filepath.Join(desktop, "notes.txt")
	fsCalls := filesystemCalls(desktop, other, desktop)
	callEach(t, reg, fsCalls)
	mustHaveCalled(t, reg, "filesystem", fsCalls)
	if data, err := os.ReadFile(notes); err != nil || string(data) != "swordfish\ntuna\n" {
		t.Errorf("notes.txt after the edit: %q, %v", data, err)
	}

	memCalls := []toolCall{
		{"create_entities", `{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]},{"name":"Engine","entityType":"machine","observations":[]}]}`, "Ada"},
		{"create_relations", `{"relations":[{"from":"Ada","to":"Engine","relationType":"programmed"}]}`, "programmed"},
		{"add_observations", `{"observations":[{"entityName":"Ada","contents":["was a mathematician"]}]}`, "mathematician"},
		{"read_graph", `{}`, "programmed"},
		{"search_nodes", `{"query":"mathematician"}`, "Ada"},
		{"open_nodes", `{"names":["Engine"]}`, "machine"},
		{"delete_observations", `{"deletions":[{"entityName":"Ada","observations":["was a mathematician"]}]}`, "deleted"},
		{"delete_relations", `{"relations":[{"from":"Ada","to":"Engine","relationType":"programmed"}]}`, "deleted"},
		{"delete_entities", `{"entityNames":["Engine"]}`, "deleted"},
	}
	callEach(t, reg, memCalls)
	mustHaveCalled(t, reg, "memory", memCalls)
	// What it wrote is in npx's cache, beside its script.
	memory := filepath.Join(cacheDir, "launchers", "memory", "npm_config_cache", "_npx", "warm", "node_modules", "@modelcontextprotocol", "server-memory", "dist", "memory.jsonl")
	if data, err := os.ReadFile(memory); err != nil || !strings.Contains(string(data), "Ada") {
		t.Errorf("the memory file: %q, %v", data, err)
	}

	evCalls := []toolCall{
		{"echo", `{"message":"pasted"}`, "Echo: pasted"},
		{"get-sum", `{"a":2,"b":3}`, "5"},
		{"get-tiny-image", `{}`, "image/png"},
		{"get-annotated-message", `{"messageType":"success","includeImage":true}`, "Operation completed successfully"},
		{"get-env", `{}`, `"PATH"`},
		{"get-resource-links", `{"count":2}`, "Here are 2 resource links"},
		{"get-resource-reference", `{"resourceType":"Text","resourceId":3}`, "demo://resource"},
		{"get-structured-content", `{"location":"Chicago"}`, "temperature"},
		{"gzip-file-as-resource", `{"name":"hello.gz","data":"data:text/plain;base64,aGVsbG8K","outputType":"resource"}`, "hello.gz"},
		{"toggle-simulated-logging", `{}`, "Started"},
		{"toggle-subscriber-updates", `{}`, "Started"},
		{"trigger-long-running-operation", `{"duration":0.2,"steps":2}`, "Long running operation completed"},
		// Offered because agenthost offers roots: the workspace's.
		{"get-roots-list", `{}`, "file://" + work},
	}
	callEach(t, reg, evCalls)
	// trigger-sampling-request and trigger-elicitation-request ask the
	// client in front of the call for a model's answer or a person's: a
	// registry alone has neither (see the gateway's tests).
	// simulate-research-query runs only as a task (MCP's tasks, which
	// agenthost does not speak): "requires task augmentation".
	mustHaveCalled(t, reg, "everything", append(evCalls,
		toolCall{tool: "trigger-sampling-request"}, toolCall{tool: "trigger-elicitation-request"},
		toolCall{tool: "simulate-research-query"}))
}

// TestREADMEBlockWithRootsOnly: server-filesystem's recommended setup,
// no directory in its arguments, takes its directories from the roots
// agenthost offers, the workspace roots, and all its tools work there.
func TestREADMEBlockWithRootsOnly(t *testing.T) {
	// Not parallel: PATH leads to the npx shim.
	cacheDir := npxShim(t)
	warmNPX(t, cacheDir, "filesystem")
	work, other := t.TempDir(), t.TempDir()
	filesystemFiles(t, work, other)
	reg := load(t, pluginDir(t, "fs", "search"), &host.Options{
		Roots:    []string{work, other},
		CacheDir: cacheDir,
		MCPServers: pasteBlock(t, `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem"]
    }
  }
}`),
	})
	if rep := report(t, reg, "filesystem"); rep.Err != nil || len(rep.Tools) != 14 || len(rep.Renamed) != 5 {
		t.Fatalf("filesystem: %+v", rep)
	}
	calls := filesystemCalls(work, other, work)
	callEach(t, reg, calls)
	mustHaveCalled(t, reg, "filesystem", calls)
	if got := call(t, reg, "list_allowed_directories", `{}`); !strings.Contains(got, other) {
		t.Errorf("list_allowed_directories = %q, want both roots", got)
	}
}
