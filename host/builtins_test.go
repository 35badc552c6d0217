package host_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// TestDefaultRegistryHoldsEveryBuiltIn is the seeds' scenario "Default
// factory registers all built-in tools" and "Destructive tools are
// disabled by default", over the real plugin binaries.
func TestDefaultRegistryHoldsEveryBuiltIn(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	reg := load(t, pluginDir(t, "fs", "session", "search", "bash"), &host.Options{Roots: []string{work}})

	builtIns := []string{
		"read_file", "read_multiple_files", "write_file", "save_session_context", "list_dir", "file_info",
		"mkdir", "remove", "move", "search_text", "search_files", "run_bash", "edit_file",
	}
	names := reg.ToolNames()
	for _, name := range builtIns {
		if !slices.Contains(names, name) {
			t.Errorf("%s is not registered (have %v)", name, names)
			continue
		}
		optIn := name == "remove" || name == "run_bash"
		if reg.IsToolEnabled(name) == optIn {
			t.Errorf("IsToolEnabled(%q) = %v, want %v", name, !optIn, !optIn)
		}
	}
	if len(names) != len(builtIns) {
		t.Errorf("%d tools registered, want %d: %v", len(names), len(builtIns), names)
	}

	// Each plugin answers through the host, confined to the root.
	call(t, reg, "mkdir", `{"path":"src/pkg"}`)
	call(t, reg, "write_file", `{"path":"src/pkg/a.go","content":"package pkg\n\nfunc Hello() {}\n"}`)
	if got := call(t, reg, "edit_file", `{"path":"src/pkg/a.go","old_string":"Hello","new_string":"Goodbye"}`); !strings.Contains(got, "+func Goodbye() {}") {
		t.Errorf("edit_file = %q", got)
	}
	if got := call(t, reg, "search_text", `{"query":"Goodbye"}`); got != "src/pkg/a.go:3:func Goodbye() {}" && got != "src/pkg/a.go:3:func Goodbye() {}\n" {
		t.Errorf("search_text = %q", got)
	}
	if got := call(t, reg, "search_files", `{"pattern":"**/*.go"}`); !strings.Contains(got, "src/pkg/a.go") {
		t.Errorf("search_files = %q", got)
	}
	if got := call(t, reg, "list_dir", `{"path":"src","depth":2}`); !strings.Contains(got, "pkg/") || !strings.Contains(got, "a.go") {
		t.Errorf("list_dir = %q", got)
	}
	call(t, reg, "move", `{"source":"src/pkg/a.go","destination":"src/b.go"}`)
	if _, err := os.Stat(filepath.Join(work, "src", "b.go")); err != nil {
		t.Errorf("move: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	for tool, args := range map[string]string{
		"read_file":    fmt.Sprintf(`{"path":%q}`, outside),
		"write_file":   fmt.Sprintf(`{"path":%q,"content":"x"}`, outside),
		"search_text":  fmt.Sprintf(`{"query":"x","paths":[%q]}`, outside),
		"search_files": fmt.Sprintf(`{"pattern":"*","path":%q}`, outside),
	} {
		want := fmt.Sprintf("Error executing %s: path %q is outside the workspace roots", tool, outside)
		if got := reg.Execute(t.Context(), tool, []byte(args)); got != want {
			t.Errorf("%s outside the root = %q\nwant %q", tool, got, want)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("a file was written outside the workspace root")
	}

	// The opt-in tools work once enabled.
	if got, want := reg.Execute(t.Context(), "run_bash", []byte(`{"command":"pwd"}`)), "Error: tool not available: run_bash is disabled"; got != want {
		t.Errorf("run_bash before opting in = %q", got)
	}
	for _, name := range []string{"run_bash", "remove"} {
		if err := reg.Enable(name); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(call(t, reg, "run_bash", `{"command":"pwd; exit 3"}`)), &out); err != nil {
		t.Fatal(err)
	}
	if out.Stdout != work+"\n" || out.ExitCode != 3 {
		t.Errorf("run_bash = %+v, want the root as cwd and exit code 3", out)
	}
	call(t, reg, "remove", `{"path":"src"}`)
	if _, err := os.Stat(filepath.Join(work, "src")); !os.IsNotExist(err) {
		t.Errorf("remove left src: %v", err)
	}
}
