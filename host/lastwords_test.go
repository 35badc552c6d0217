package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/sdk"
)

// printErr is the shell's command that writes lines to stderr as they
// are.
func printErr(lines ...string) string {
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = "'" + strings.ReplaceAll(l, "'", `'\''`) + "'"
	}
	return "printf '%s\\n' " + strings.Join(quoted, " ") + " >&2\n"
}

// writeScript writes an executable shell script of body in a directory
// of its own, and returns its path.
func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Servers that fail at start the ways users met them, each of which was
// reported by its last line, which misled: Node's version, npm's advice
// to rerun, docker's --help, a launcher's "Success". The reason names
// the line that says what went wrong, and, where the sandbox refused
// something, the grant that would allow it.
func TestMCPStartFailuresNameTheirCause(t *testing.T) {
	t.Parallel()
	node := mcptest.Node(t)
	// Node, importing a package that is not installed.
	zod := filepath.Join(t.TempDir(), "server.mjs")
	if err := os.WriteFile(zod, []byte("import { z } from 'zod';\nconsole.log(z);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// npm, whose cache the sandbox does not let it make.
	home := t.TempDir()
	npmCache := filepath.Join(home, ".npm")
	npm := writeScript(t, "npx", `mkdir "$CACHE" 2>/dev/null && exit 0
`+printErr("npm error code EACCES", "npm error syscall mkdir")+`printf 'npm error path %s\n' "$CACHE" >&2
`+printErr("npm error errno -13", "npm error",
		"npm error Your cache folder contains root-owned files, due to a bug in",
		"npm error previous versions of npm which has since been addressed.",
		"npm error A complete log of this run can be found in: /nonexistent/_logs/debug-0.log",
		"npm error You can rerun the command with `--loglevel=verbose` to see the logs in your terminal")+"exit 1\n")
	docker := writeScript(t, "docker", printErr(
		"docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
		"",
		"Run 'docker run --help' for more information")+"exit 125\n")
	// A program the sandbox does not let it run, and then a misleading
	// line.
	launcher := writeScript(t, "launcher", "/usr/bin/sleep 0\n"+printErr("/usr/bin/npx: Success")+"exit 1\n")

	reg := loadMCP(t, &host.Options{Roots: []string{t.TempDir()}},
		host.MCPServer{Name: "zod", Command: node, Args: []string{zod}},
		host.MCPServer{Name: "npm", Command: npm, Env: map[string]string{"CACHE": npmCache},
			Grant: host.Grant{Permissions: sdk.Permissions{Exec: true}}},
		host.MCPServer{Name: "docker", Command: docker},
		host.MCPServer{Name: "launcher", Command: launcher},
	)
	cases := map[string]struct{ want, not string }{
		"zod": {want: "it exited during start-up (exit status 1): Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from " + zod, not: "Node.js v"},
		"npm": {want: fmt.Sprintf("it exited during start-up (exit status 1): npm error code EACCES | npm error syscall mkdir | npm error path %s | npm error previous versions of npm which has since been addressed."+
			` (the sandbox denies mcp:npm write access to %s: grant it with --grant mcp:npm=write:%s, or "grant": ["write:%s"] in its mcpServers entry)`, npmCache, npmCache, home, home)},
		"docker": {want: "it exited during start-up (exit status 125): docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?;", not: "--help"},
		"launcher": {want: fmt.Sprintf("it exited during start-up (exit status 1): %s: 2: /usr/bin/sleep: Permission denied | /usr/bin/npx: Success"+
			` (the sandbox denies mcp:launcher execute access to /usr/bin/sleep: grant it with --grant mcp:launcher=exec, or "grant": ["exec"] in its mcpServers entry)`, launcher)},
	}
	for name, tc := range cases {
		rep := report(t, reg, name)
		switch {
		case rep.Err == nil:
			t.Errorf("%s started", name)
		case !strings.HasPrefix(rep.Err.Error(), tc.want):
			t.Errorf("%s:\n got %q\nwant %q", name, rep.Err, tc.want)
		case tc.not != "" && strings.Contains(rep.Err.Error(), tc.not):
			t.Errorf("%s: %q holds %q", name, rep.Err, tc.not)
		}
	}
}

// A plugin that dies at start is reported the same way, its grant named
// by the plugin's name.
func TestPluginStartFailureNamesItsCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, host.PluginPrefix+"launcher")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n/usr/bin/sleep 0\n"+printErr("Node.js v20.20.2")+"exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := load(t, dir, nil)
	rep := reportOf(t, reg, host.PluginPrefix+"launcher")
	// The status is the script's exit 1, or the kill of the sandbox's
	// stage once the script has gone: what follows it is the point.
	want := "): " + script + ": 2: /usr/bin/sleep: Permission denied" +
		` (the sandbox denies plugin launcher execute access to /usr/bin/sleep: grant it with --grant launcher=exec, or "grants": {"launcher": ["exec"]} in the configuration file)`
	if rep.Err == nil || !strings.HasPrefix(rep.Err.Error(), "it exited during start-up (") || !strings.HasSuffix(rep.Err.Error(), want) {
		t.Errorf("report: %v\nwant it to end with %q", rep.Err, want)
	}
}

// A tool's error that shows the sandbox refused a path names the grant
// that would allow it: a write of server-filesystem outside what it may
// write (it serves the temporary directory, which it may only read), a
// read and a write of the test server. A refusal the sandbox did not
// make, of a path it allows, of a secret no grant reaches, or of a path
// that would forge output, gets no hint.
func TestMCPCallErrorsNameTheGrant(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("hunter2"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsCmd, fsArgs := mcptest.Filesystem(t, os.TempDir())
	reg := loadMCP(t, &host.Options{Roots: []string{root}},
		hostileMCP(t, "hostile"),
		host.MCPServer{Name: "files", Command: fsCmd, Args: fsArgs, Prefix: "fs"})

	created := filepath.Join(outside, "new.txt")
	got := reg.Execute(t.Context(), "fs_write_file", fmt.Appendf(nil, `{"path":%q,"content":"x"}`, created))
	want := fmt.Sprintf(`Error executing fs_write_file: EACCES: permission denied, open '%s' (the sandbox denies mcp:files write access to %s: grant it with --grant mcp:files=write:%s, or "grant": ["write:%s"] in its mcpServers entry)`,
		created, created, outside, outside)
	if got != want {
		t.Errorf("a write outside the grant:\n got %q\nwant %q", got, want)
	}

	got = reg.Execute(t.Context(), "read", fmt.Appendf(nil, `{"path":%q}`, secret))
	want = fmt.Sprintf(`Error executing read: open %s: permission denied (the sandbox denies mcp:hostile read access to %s: grant it with --grant mcp:hostile=read:%s, or "grant": ["read:%s"] in its mcpServers entry)`,
		secret, secret, secret, secret)
	if got != want {
		t.Errorf("a read outside the grant:\n got %q\nwant %q", got, want)
	}

	started := filepath.Join(outside, "started")
	got = reg.Execute(t.Context(), "sleep", fmt.Appendf(nil, `{"millis":1,"started":%q}`, started))
	if !strings.HasSuffix(got, fmt.Sprintf(`(the sandbox denies mcp:hostile write access to %s: grant it with --grant mcp:hostile=write:%s, or "grant": ["write:%s"] in its mcpServers entry)`, started, outside, outside)) {
		t.Errorf("a write outside the grant = %q", got)
	}

	home, _ := os.UserHomeDir()
	for _, text := range []string{
		// Allowed by the sandbox: the refusal came from elsewhere.
		fmt.Sprintf("EACCES: permission denied, open '%s'", filepath.Join(root, "x")),
		fmt.Sprintf("open %s: permission denied", filepath.Join(root, "y")),
		// Not a refusal at all.
		fmt.Sprintf("ENOENT: no such file or directory, open '%s'", secret),
		// A secret, which no grant reaches.
		fmt.Sprintf("open %s: permission denied", filepath.Join(home, ".ssh", "id_ed25519")),
		// A path that would paint the terminal.
		fmt.Sprintf("EACCES: permission denied, open '%s'", filepath.Join(outside, "\x1b[31mred")),
		// Stat is never the sandbox's.
		fmt.Sprintf("EACCES: permission denied, stat '%s'", secret),
	} {
		got := reg.Execute(t.Context(), "fail", fmt.Appendf(nil, `{"text":%q}`, text))
		if strings.Contains(got, "the sandbox denies") {
			t.Errorf("a hint for %q: %q", text, got)
		}
	}
}

// A server that dies during a call is reported with what it wrote then,
// and not with what it wrote when it started.
func TestMCPServerThatDiesDuringACallSaysWhy(t *testing.T) {
	t.Parallel()
	srv := hostileMCP(t, "hostile")
	srv.Env = map[string]string{"MCPSERVER_STDERR": "Error: GITHUB_TOKEN is not set; some tools are off\n"}
	reg := loadMCP(t, nil, srv)
	got := reg.Execute(t.Context(), "die", []byte(`{"text":"fatal: the database is gone\n    at open (db.js:1:1)\n\nNode.js v20.20.2\n"}`))
	if want := "Error executing die: MCP server hostile exited during the call (exit status 3): fatal: the database is gone"; got != want {
		t.Errorf("died with last words:\n got %q\nwant %q", got, want)
	}
	got = reg.Execute(t.Context(), "crash", nil)
	if want := "Error executing crash: MCP server hostile exited during the call (exit status 3)"; got != want {
		t.Errorf("died without a word:\n got %q\nwant %q", got, want)
	}
}
