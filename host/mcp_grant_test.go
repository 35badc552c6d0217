package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMCPDefaultGrant: a server gets read access to the paths its
// configuration names (a script's whole node_modules tree), and a
// launcher what fetching a package takes; nothing else.
func TestMCPDefaultGrant(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "node_modules", "@scope", "server", "dist", "index.js")
	served := filepath.Join(dir, "served")
	for _, d := range []string{filepath.Dir(script), served} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "launchers")
	node := MCPServer{Name: "n", Command: "node", Args: []string{script, served, "--verbose", filepath.Join(dir, "missing")}}
	g := node.defaultGrant(root)
	if want := []string{filepath.Join(dir, "node_modules"), served}; !slices.Equal(g.Read, want) || g.Network || g.Exec || len(g.Write) != 0 {
		t.Errorf("node: %+v, want read %q", g, want)
	}
	// A launcher writes in a directory of its own, never in the user's
	// cache, which npx runs packages from outside any sandbox.
	npx := MCPServer{Name: "x", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", served}}
	g = npx.defaultGrant(root)
	if !g.Network || !g.Exec || !slices.Equal(g.Write, []string{filepath.Join(root, "x")}) || !slices.Equal(g.Read, []string{served}) {
		t.Errorf("npx: %+v", g)
	}
	if d, env := npx.launcherDir(root); d != filepath.Join(root, "x") || !slices.Equal(env, []string{"npm_config_cache=" + filepath.Join(root, "x", "npm_config_cache")}) {
		t.Errorf("npx's directory %s, environment %q", d, env)
	}
	if g := (&MCPServer{Name: "h", URL: "http://127.0.0.1:1/mcp"}).defaultGrant(root); !slices.Equal(g.Read, nil) || g.Network {
		t.Errorf("a remote server: %+v", g)
	}
}

// A script directly in the home directory is granted alone: its
// directory is the home directory, keys and all.
func TestMCPDefaultGrantOfAScriptInTheHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	script := filepath.Join(home, "server.js")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	g := (&MCPServer{Name: "n", Command: "node", Args: []string{script}}).defaultGrant("")
	if !slices.Equal(g.Read, []string{script}) {
		t.Errorf("a script in the home directory: read %q, want only the script", g.Read)
	}
}

// A variable named in args could hold a secret, which every process
// could read in the server's command line: the server is refused, and
// told to pass it in its environment. Variables that name directories
// are fine.
func TestMCPSecretsStayOutOfArgs(t *testing.T) {
	for args, want := range map[string]string{
		"--token=${GITHUB_TOKEN}":    `args[0] names ${GITHUB_TOKEN}, whose value every process could read in the server's command line (/proc/PID/cmdline): pass it in "env" ("env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}) for the server to read from its environment`,
		"${env:API_KEY:-none}":       `args[0] names ${API_KEY}`,
		"${HOME}/projects":           "",
		"${XDG_CONFIG_HOME:-~/.x}":   "",
		"literal $NOT_EXPANDED text": "",
	} {
		err := (&MCPServer{Name: "s", Command: "node", Args: []string{args}}).checkArgs()
		if (want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
