package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMCPDefaultGrant: a server gets read-write access to the
// directories its configuration names, read access to a script it names
// (and its whole node_modules tree), and a launcher what fetching a
// package takes; nothing else.
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
	// The directory it is to serve, it may write.
	if want := []string{filepath.Join(dir, "node_modules")}; !slices.Equal(g.Read, want) || g.Network || g.Exec || !slices.Equal(g.Write, []string{served}) {
		t.Errorf("node: %+v, want read %q, write %s", g, want, served)
	}
	// A launcher writes in a directory of its own, never in the user's
	// cache, which npx runs packages from outside any sandbox.
	npx := MCPServer{Name: "x", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", served}}
	g = npx.defaultGrant(root)
	if !g.Network || !g.Exec || !slices.Equal(g.Write, []string{filepath.Join(root, "x"), served}) || len(g.Read) != 0 {
		t.Errorf("npx: %+v", g)
	}
	// Its temporary directory is its own too.
	wantEnv := []string{"npm_config_cache=" + filepath.Join(root, "x", "npm_config_cache"), "TMPDIR=" + filepath.Join(root, "x", "tmpdir")}
	if d, env := npx.launcherDir(root); d != filepath.Join(root, "x") || !slices.Equal(env, wantEnv) {
		t.Errorf("npx's directory %s, environment %q", d, env)
	}
	// The system's directories, the home and the temporary directory,
	// and what holds them, are read, never written, whatever args say.
	home, _ := os.UserHomeDir()
	for _, p := range []string{"/etc", "/usr/share", home, os.TempDir(), "/"} {
		g := (&MCPServer{Name: "s", Command: "node", Args: []string{p}}).defaultGrant(root)
		if len(g.Write) != 0 || !slices.Equal(g.Read, []string{p}) {
			t.Errorf("args naming %s: %+v, want it read-only", p, g)
		}
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

// A server that runs a browser is known by the package its arguments
// name, or its command: it reads the browsers of the user's cache, the
// variable that names them set so that it finds them, or installs them
// in a directory of its own when there are none; chrome-devtools-mcp
// writes its profile.
func TestMCPDefaultGrantOfABrowserServer(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("PLAYWRIGHT_BROWSERS_PATH", "")
	t.Setenv("PUPPETEER_CACHE_DIR", "")
	root := filepath.Join(t.TempDir(), "launchers")
	playwright := &MCPServer{Name: "playwright", Command: "npx", Args: []string{"@playwright/mcp@latest"}}

	// No browsers installed: it installs them in its own directory.
	own := filepath.Join(root, "playwright", "playwright_browsers_path")
	if _, env := playwright.launcherDir(root); !slices.Contains(env, "PLAYWRIGHT_BROWSERS_PATH="+own) {
		t.Errorf("without browsers: %q", env)
	}
	browsers := filepath.Join(home, ".cache", "ms-playwright")
	if err := os.MkdirAll(browsers, 0o755); err != nil {
		t.Fatal(err)
	}
	g := playwright.defaultGrant(root)
	if !g.Network || !g.Exec || !slices.Equal(g.Read, []string{browsers}) || slices.Contains(g.Write, browsers) {
		t.Errorf("playwright: %+v", g)
	}
	if env := playwright.browserEnv(); !slices.Equal(env, []string{"PLAYWRIGHT_BROWSERS_PATH=" + browsers}) {
		t.Errorf("playwright's browsers: %q", env)
	}
	if _, env := playwright.launcherDir(root); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PLAYWRIGHT_BROWSERS_PATH=") }) {
		t.Errorf("with browsers, its own directory for them: %q", env)
	}

	for _, srv := range []*MCPServer{
		{Name: "devtools", Command: "npx", Args: []string{"-y", "chrome-devtools-mcp@latest", "--headless"}},
		{Name: "devtools", Command: "node", Args: []string{"/opt/x/node_modules/chrome-devtools-mcp/build/src/index.js"}},
		{Name: "devtools", Command: "chrome-devtools-mcp"},
	} {
		g := srv.defaultGrant(root)
		if !g.Network || !g.Exec || !slices.Contains(g.Write, "~/.cache/chrome-devtools-mcp") || !slices.Contains(g.Write, filepath.Join(root, "devtools")) {
			t.Errorf("%s %q: %+v", srv.Command, srv.Args, g)
		}
	}
	devtools := &MCPServer{Name: "devtools", Command: "npx", Args: []string{"chrome-devtools-mcp"}}
	if err := devtools.makeOwnDirs(); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(home, ".cache", "chrome-devtools-mcp")); err != nil || !info.IsDir() {
		t.Errorf("its profile directory was not made: %v", err)
	}
	if (&MCPServer{Name: "n", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}).knownServer() != nil {
		t.Error("server-memory runs no browser")
	}
}
