package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

func TestMain(m *testing.M) {
	plugintest.IsolateCache()
	// No test reads the configuration of the user running them.
	config, err := os.MkdirTemp("", "agenthost-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", config)
	// Nor keeps its conversations where the user's are.
	os.Setenv("XDG_DATA_HOME", filepath.Join(config, "data"))
	code := m.Run()
	plugintest.Cleanup()
	os.RemoveAll(config)
	os.Exit(code)
}

// pluginDir installs the built-in plugins and the test plugin.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	plugintest.Binaries(t, "./cmd/agenthost", "./plugins/fs", "./plugins/session", "./host/testdata/testplugin", "./host/testdata/hostileplugin")
	for name, pkg := range map[string]string{
		"fs":      "./plugins/fs",
		"session": "./plugins/session",
		"test":    "./host/testdata/testplugin",
	} {
		plugintest.Install(t, dir, host.PluginPrefix+name, pkg)
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the command line in-process, as main would.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, strings.NewReader(stdin), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

func TestCommands(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := pluginDir(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		stdin      string
		args       []string
		code       int
		stdout     string // exact, unless empty
		contains   []string
		stderrHas  string
		stderrLine bool // stderr must be exactly one line
	}{
		"call":               {args: []string{"--plugins", dir, "--root", filepath.Dir(file), "call", "read_file", fmt.Sprintf(`{"path":%q,"offset":2}`, file)}, stdout: "beta\ngamma\n"},
		"call from stdin":    {stdin: fmt.Sprintf(`{"path":%q,"limit":1}`, file), args: []string{"call", "--plugins", dir, "--root", filepath.Dir(file), "read_file", "-"}, stdout: "alpha\n"},
		"relative to --root": {args: []string{"--plugins", dir, "--root", filepath.Dir(file), "call", "read_file", `{"path":"notes.txt","limit":1}`}, stdout: "alpha\n"},
		"outside --root":     {args: []string{"--plugins", dir, "--root", dir, "call", "read_file", fmt.Sprintf(`{"path":%q}`, file)}, code: 1, stderrHas: fmt.Sprintf("Error executing read_file: path %q is outside the workspace roots\n", file)},
		"--root not a dir":   {args: []string{"--plugins", dir, "--root", file, "tools"}, code: 2, stderrHas: "--root " + file + ": not a directory", stderrLine: true},
		"call adds newline":  {args: []string{"--plugins", dir, "call", "echo", `{"text":"hi"}`}, stdout: "hi\n"},
		"tool failure":       {args: []string{"--plugins", dir, "call", "fail", `{"text":"nope"}`}, code: 1, stderrHas: "Error executing fail: nope\n"},
		"unknown tool":       {args: []string{"--plugins", dir, "call", "nope"}, code: 1, stderrHas: "Error: tool not found: nope\n"},
		"opt-in is disabled": {args: []string{"--plugins", dir, "call", "danger"}, code: 1, stderrHas: "Error: tool not available: danger is disabled\n"},
		"--enable":           {args: []string{"--plugins", dir, "--enable", "danger", "call", "danger"}, stdout: "done\n"},
		"--disable":          {args: []string{"--plugins", dir, "call", "--disable", "echo", "echo", `{"text":"x"}`}, code: 1, stderrHas: "Error: tool not available: echo is disabled\n"},
		"bad arguments":      {args: []string{"--plugins", dir, "call", "echo", `{"text":1}`}, code: 1, stderrHas: "Error executing echo: invalid arguments: text: type: 1"},
		"tools":              {args: []string{"--plugins", dir, "--enable", "danger", "--disable", "write_file", "tools"}, contains: []string{"NAME ", "read_file ", "write_file            disabled  agenthost-plugin-fs ", "danger                enabled   agenthost-plugin-test ", "save_session_context  enabled   agenthost-plugin-session  Save the current session context"}},
		"plugins":            {args: []string{"--plugins", dir, "plugins"}, contains: []string{filepath.Join(dir, "agenthost-plugin-fs") + " (built-in)\n", "  tools: read_file, read_multiple_files, write_file, list_dir, file_info, mkdir, remove, move, edit_file\n", "  tools: save_session_context\n"}},
		"help":               {args: []string{"--help"}, contains: []string{"Usage:", "call NAME [ARGS_JSON | -]"}},
		"command help":       {args: []string{"tools", "--help"}, contains: []string{"agenthost tools [--json]", "-json"}},
		"no command":         {args: nil, code: 2, stderrHas: "agenthost: no command given (see agenthost --help)\n", stderrLine: true},
		"unknown command":    {args: []string{"--plugins", dir, "frobnicate"}, code: 2, stderrHas: `agenthost: unknown command "frobnicate"`, stderrLine: true},
		"unknown flag":       {args: []string{"--plugins", dir, "tools", "--frob"}, code: 2, stderrHas: "flag provided but not defined: -frob", stderrLine: true},
		"call without name":  {args: []string{"--plugins", dir, "call"}, code: 2, stderrHas: "call takes a tool name", stderrLine: true},
		"enable unknown":     {args: []string{"--plugins", dir, "--enable", "nope", "tools"}, code: 2, stderrHas: "--enable nope: tool not found: nope", stderrLine: true},
		"bad log level":      {args: []string{"--plugins", dir, "--log-level", "loud", "tools"}, code: 2, stderrHas: `unknown log level "loud"`, stderrLine: true},
		"missing plugins":    {args: []string{"--plugins", filepath.Join(dir, "nope"), "tools"}, code: 1, stderrHas: "agenthost: the plugins directory " + filepath.Join(dir, "nope") + " does not exist (set --plugins or AGENTHOST_PLUGINS)\n", stderrLine: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.stdout != "" && r.stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", r.stdout, tc.stdout)
			}
			for _, s := range tc.contains {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tc.stderrHas) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tc.stderrHas)
			}
			if tc.stderrLine && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

func TestJSONOutputs(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", pluginDir(t))

	r := runCLI(t, "", "tools", "--json")
	var tools []struct {
		Name        string           `json:"name"`
		Enabled     bool             `json:"enabled"`
		Plugin      string           `json:"plugin"`
		Description string           `json:"description"`
		Annotations host.Annotations `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, r.stdout)
	}
	byName := map[string]int{}
	for i, tl := range tools {
		byName[tl.Name] = i
	}
	rf := tools[byName["read_file"]]
	if !rf.Enabled || rf.Plugin != "agenthost-plugin-fs" || !rf.Annotations.ReadOnly || rf.Description == "" {
		t.Errorf("read_file: %+v", rf)
	}
	if d := tools[byName["danger"]]; d.Enabled || !d.Annotations.OptIn {
		t.Errorf("danger: %+v", d)
	}

	r = runCLI(t, "", "schemas")
	var schemas []host.ChatTool
	if err := json.Unmarshal([]byte(r.stdout), &schemas); err != nil {
		t.Fatalf("schemas: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, s := range schemas {
		if s.Type != "function" || len(s.Function.Parameters) == 0 {
			t.Errorf("schema %+v", s)
		}
		names = append(names, s.Function.Name)
	}
	var enabled []string
	for _, tl := range tools {
		if tl.Enabled {
			enabled = append(enabled, tl.Name)
		}
	}
	if !slices.Equal(names, enabled) || slices.Contains(names, "danger") || slices.Contains(names, "remove") {
		t.Errorf("schemas of %v: want the enabled tools %v, in order", names, enabled)
	}
}

// TestBuiltBinary runs the real executable with its plugins beside it, as
// make build lays them out, and checks that a plugin writing to its stdout
// cannot put a byte on the host's.
func TestBuiltBinary(t *testing.T) {
	pluginDir(t) // builds every binary the tests need at once
	bin := t.TempDir()
	exe := plugintest.Install(t, bin, "agenthost", "./cmd/agenthost")
	plugins := filepath.Join(bin, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.Install(t, plugins, host.PluginPrefix+"test", "./host/testdata/testplugin")

	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), exe, "call", "stdout", `{"text":"LEAKED"}`)
	cmd.Env = append(os.Environ(), "AGENTHOST_PLUGINS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if stdout.String() != "written\n" {
		t.Errorf("stdout = %q, want only the result", stdout.String())
	}

	cmd = exec.Command(exe, "call", "nope")
	cmd.Env = append(os.Environ(), "AGENTHOST_PLUGINS=")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("unknown tool: %v, want exit status 1", err)
	}
	cmd = exec.Command(exe, "frobnicate")
	err = cmd.Run()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("unknown command: %v, want exit status 2", err)
	}
}
