package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/internal/proc"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

// launchers are the commands that fetch a package and run it, and the
// variables that say where each keeps what it fetches: its caches, its
// installs.
var launchers = map[string][]string{
	"npx":  {"npm_config_cache"},
	"pnpx": {"npm_config_cache", "npm_config_store_dir"},
	"bunx": {"BUN_INSTALL_CACHE_DIR"},
	"uvx":  {"UV_CACHE_DIR", "UV_TOOL_DIR", "UV_PYTHON_INSTALL_DIR"},
	"uv":   {"UV_CACHE_DIR", "UV_TOOL_DIR", "UV_PYTHON_INSTALL_DIR"},
	"pipx": {"PIPX_HOME", "PIP_CACHE_DIR"},
}

// launcherRoot is where the launchers of MCP servers keep what they
// fetch, a directory for each server (see launcherDir), beside the
// description cache (cacheDir, as Options.CacheDir gives it); "" when
// there is no such directory.
func launcherRoot(cacheDir string) string {
	base := cacheBase(cacheDir)
	if base == "" {
		return ""
	}
	return filepath.Join(base, "launchers")
}

// cacheBase is the directory of agenthost's caches: the description
// cache's, as Options.CacheDir gives it, or agenthost in the user's cache
// directory when that is the default or off; "" when there is none.
func cacheBase(cacheDir string) string {
	if cacheDir == "" || cacheDir == NoCache {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "agenthost")
	}
	return absPath(cacheDir)
}

// launcherDir is the directory of the server's launcher, under root
// (launcherRoot), and the variables that point its caches into it; ""
// and none when the server's command is no launcher, or there is no
// root. A launcher's own cache (~/.npm, ~/.cache/uv) is the user's, from
// which npx and uvx run packages outside any sandbox: a server does not
// get to write there, and plant what they would run. Each server has a
// cache of its own, so that one server cannot plant what another runs
// either, with other grants.
//
// A launcher, and a server that runs a browser (knownServers), also gets a
// temporary directory of its own there (TMPDIR), writable whatever the
// development profile says; a browser server whose browsers are not in
// the user's cache gets a directory there to install them in.
func (s *MCPServer) launcherDir(root string) (string, []string) {
	x, err := s.expanded()
	if err != nil || root == "" || x.transport() != "stdio" {
		return "", nil
	}
	vars, launcher := launchers[filepath.Base(x.Command)]
	known := x.knownServer()
	if !launcher && known == nil {
		return "", nil
	}
	vars = append(slices.Clone(vars), "TMPDIR")
	if known != nil {
		for _, b := range known.browsers {
			if b.userDir() == "" {
				vars = append(vars, b.env)
			}
		}
	}
	dir := filepath.Join(root, s.Name)
	var env []string
	for _, v := range vars {
		if _, set := x.Env[v]; set {
			continue // the configuration's own choice
		}
		env = append(env, v+"="+filepath.Join(dir, strings.ToLower(v)))
	}
	return dir, env
}

// knownServer is what a server that runs a browser needs of the user's
// caches, besides what a launcher gets.
type knownServer struct {
	// packages are its npm packages, as a launcher's arguments name
	// them (with or without @VERSION), and bins the commands they
	// install.
	packages, bins []string
	// browsers are the caches where the browsers it runs are installed.
	browsers []browserCache
	// own are directories of the home directory that are the server's
	// own (its browser profile), made and granted read-write.
	own []string
}

// browserCache is where a browser automation library installs browsers:
// the variable that names the directory, and the directory otherwise.
type browserCache struct {
	env string
	// dir is the directory when env is not set, from the home
	// directory and $XDG_CACHE_HOME.
	dir func(home, cache string) string
}

// userDir is the user's directory of browsers, as the host's environment
// places it, when it exists; "" otherwise.
func (b browserCache) userDir() string {
	dir := os.Getenv(b.env)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return ""
		}
		cache := os.Getenv("XDG_CACHE_HOME")
		if !filepath.IsAbs(cache) {
			cache = filepath.Join(home, ".cache")
		}
		dir = b.dir(home, cache)
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() || !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Clean(dir)
}

var (
	// playwrightBrowsers: Playwright's browsers, on Linux.
	playwrightBrowsers = browserCache{"PLAYWRIGHT_BROWSERS_PATH", func(_, cache string) string { return filepath.Join(cache, "ms-playwright") }}
	// puppeteerBrowsers: Puppeteer's, in the home directory whatever
	// XDG_CACHE_HOME says.
	puppeteerBrowsers = browserCache{"PUPPETEER_CACHE_DIR", func(home, _ string) string { return filepath.Join(home, ".cache", "puppeteer") }}
)

// knownServers are the MCP servers that run a browser. Each gets network
// access and other programs (the browser), a temporary directory of its
// own, read access to the browsers installed in the user's cache (the
// variable that names them set, so that they are found whatever
// XDG_CACHE_HOME the process has) or else a directory of its own to
// install them in, and read-write access to its own profile directory.
// The user's browsers stay read-only: what runs from there outside the
// sandbox, the sandbox may not change.
var knownServers = []knownServer{
	{packages: []string{"@playwright/mcp"}, bins: []string{"mcp-server-playwright", "playwright-mcp"}, browsers: []browserCache{playwrightBrowsers}},
	{packages: []string{"chrome-devtools-mcp"}, bins: []string{"chrome-devtools-mcp"}, browsers: []browserCache{puppeteerBrowsers}, own: []string{".cache/chrome-devtools-mcp"}},
	{packages: []string{"@modelcontextprotocol/server-puppeteer", "puppeteer-mcp-server"}, bins: []string{"mcp-server-puppeteer"}, browsers: []browserCache{puppeteerBrowsers}},
}

// knownServer is the entry of knownServers the (expanded) server is: its
// command is one of the entry's bins, or an argument names one of its
// packages (npx -y @playwright/mcp@latest) or a script in it
// (node .../node_modules/@playwright/mcp/cli.js); nil when it is none.
func (s *MCPServer) knownServer() *knownServer {
	for i := range knownServers {
		k := &knownServers[i]
		if slices.Contains(k.bins, filepath.Base(s.Command)) {
			return k
		}
		for _, a := range s.Args {
			for _, pkg := range k.packages {
				if a == pkg || strings.HasPrefix(a, pkg+"@") || strings.Contains(filepath.ToSlash(a), "/node_modules/"+pkg+"/") {
					return k
				}
			}
		}
	}
	return nil
}

// browserEnv is what a known server's environment says of its browsers:
// the variable of each cache set to the user's directory, when there is
// one and the configuration sets no other (launcherDir points it into
// the server's own directory otherwise).
func (s *MCPServer) browserEnv() []string {
	x, err := s.expanded()
	if err != nil || x.transport() != "stdio" {
		return nil
	}
	k := x.knownServer()
	if k == nil {
		return nil
	}
	var env []string
	for _, b := range k.browsers {
		if _, set := x.Env[b.env]; set {
			continue
		}
		if dir := b.userDir(); dir != "" {
			env = append(env, b.env+"="+dir)
		}
	}
	return env
}

// makeOwnDirs makes the directories of the home directory that a known
// server has for its own (its browser profile), mode 0700: a sandbox
// grants only what exists, and the server may not make them itself.
func (s *MCPServer) makeOwnDirs() error {
	x, err := s.expanded()
	if err != nil {
		return err
	}
	k := x.knownServer()
	if k == nil || len(k.own) == 0 {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return nil
	}
	for _, rel := range k.own {
		if err := os.MkdirAll(filepath.Join(home, rel), 0o700); err != nil {
			return fmt.Errorf("making its profile directory: %w", err)
		}
	}
	return nil
}

// defaultGrant is what a server over stdio gets besides a third-party
// plugin's defaults, from what its configuration names, so that a block
// pasted from another client runs as it did there, confined to it:
//   - every directory its arguments name, read-write: a directory it is
//     to serve (servedDirs); read-only where the directory is or holds
//     the home or the temporary directory, or is the system's;
//   - a script its arguments name and its package, read-only (a script
//     in node_modules gets the whole node_modules tree, where its imports
//     are), or, where that directory is or holds the home or the
//     temporary directory, the file alone; its cwd, read-only;
//   - a launcher (npx, pnpx, bunx, uvx, uv, pipx) gets what fetching and
//     running a package takes: network access, running programs, and a
//     directory of its own for what it fetches and its temporary files
//     (launcherDir, under root);
//   - a server that runs a browser (knownServers) gets the same, read
//     access to the browsers in the user's cache, and read-write access
//     to its own profile directory;
//   - the files the certificate variables of the host's environment name
//     (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, ...: proc.CertVars), which
//     the server gets, read-only, when they are not the system's.
//
// Anything else is the user's to grant (MCPServer.Grant).
func (s *MCPServer) defaultGrant(root string) Grant {
	var g Grant
	if s.transport() != "stdio" {
		return g
	}
	x, err := s.expanded()
	if err != nil {
		return g
	}
	_, launcher := launchers[filepath.Base(x.Command)]
	known := x.knownServer()
	if launcher || known != nil {
		g.Network, g.Exec = true, true
		if dir, _ := s.launcherDir(root); dir != "" {
			g.Write = append(g.Write, dir)
		}
	}
	if known != nil {
		for _, b := range known.browsers {
			if dir := b.userDir(); dir != "" {
				g.Read = append(g.Read, dir)
			}
		}
		for _, rel := range known.own {
			g.Write = append(g.Write, "~/"+rel)
		}
	}
	served := x.servedDirs()
	for _, dir := range served {
		if holdsHomeOrTemp(dir) || systemPath(dir) {
			g.Read = append(g.Read, dir)
		} else {
			g.Write = append(g.Write, dir)
		}
	}
	paths := slices.Clone(x.Args)
	if x.Dir != "" {
		paths = append(paths, x.Dir)
	}
	for _, p := range x.paths(paths) {
		if slices.Contains(served, p) {
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		if !info.IsDir() {
			if dir := packageDir(p); !holdsHomeOrTemp(dir) {
				p = dir
			}
		}
		g.Read = append(g.Read, p)
	}
	for _, v := range proc.CertVars {
		p := os.Getenv(v)
		if !filepath.IsAbs(p) || systemPath(p) {
			continue // the system's are every server's to read
		}
		if _, err := os.Stat(p); err == nil && !slices.Contains(g.Read, filepath.Clean(p)) {
			g.Read = append(g.Read, filepath.Clean(p))
		}
	}
	return g
}

// paths are the words of list that are paths (they hold a slash, or are
// "."), made absolute against the server's cwd, in order.
func (s *MCPServer) paths(list []string) []string {
	var out []string
	for _, p := range list {
		if !strings.Contains(p, "/") && p != "." {
			continue // a word, not a path
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.Dir, p)
		}
		out = append(out, absPath(p))
	}
	return out
}

// servedDirs are the directories the (expanded) server's arguments name:
// those it is to serve, which it may write (defaultGrant) and which it is
// offered as roots beside the workspace roots (mcpRoots).
func (s *MCPServer) servedDirs() []string {
	var dirs []string
	for _, p := range s.paths(s.Args) {
		if info, err := os.Stat(p); err == nil && info.IsDir() && !slices.Contains(dirs, p) {
			dirs = append(dirs, p)
		}
	}
	return dirs
}

// systemPath reports whether path is the system's: its programs, /etc,
// or the kernel's files, which no server is to write whatever its
// arguments name.
func systemPath(path string) bool {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	for _, d := range append([]string{"/etc", "/proc", "/sys", "/dev", "/boot"}, systemDirs...) {
		if within(path, d) {
			return true
		}
	}
	return false
}

// packageDir is where a script's imports are: the outermost node_modules
// directory above it, or else its own directory.
func packageDir(script string) string {
	dir := filepath.Dir(script)
	if i := strings.Index(dir+"/", "/node_modules/"); i >= 0 {
		return dir[:i+len("/node_modules")]
	}
	return dir
}

// holdsHomeOrTemp reports whether dir is, or holds, the home directory
// or the temporary directory (symlinks resolved): a grant of it would
// open far more than a program's own files.
func holdsHomeOrTemp(dir string) bool {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	home, _ := os.UserHomeDir()
	for _, p := range []string{home, os.TempDir()} {
		if p == "" {
			continue
		}
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			p = resolved
		}
		if within(p, dir) {
			return true
		}
	}
	return false
}

// argVars are the variables a server's args may name: none holds a
// secret (nor do XDG_*'s directories).
var argVars = []string{"HOME", "USER", "LOGNAME", "PWD", "TMPDIR"}

// checkArgs refuses a server whose args name a variable that may hold a
// secret: a process's arguments are no secret (any process that sees it
// reads them in /proc/PID/cmdline), so its value belongs in the
// server's environment, which only the server and root can read.
func (s *MCPServer) checkArgs() error {
	for i, a := range s.Args {
		for _, name := range varRefs(a) {
			if slices.Contains(argVars, name) || strings.HasPrefix(name, "XDG_") {
				continue
			}
			n := textsafe.Name(name)
			return fmt.Errorf(`args[%d] names ${%s}, whose value every process could read in the server's command line (/proc/PID/cmdline): pass it in "env" ("env": {"%s": "${%s}"}) for the server to read from its environment`, i, n, n, n)
		}
	}
	return nil
}

// varRefs are the names of the variables s refers to as expandEnv reads
// them: ${VAR}, ${VAR:-default}, ${env:VAR}.
func varRefs(s string) []string {
	var names []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return names
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return names
		}
		name, _, _ := strings.Cut(s[i+2:i+end], ":-")
		names = append(names, strings.TrimPrefix(name, "env:"))
		s = s[i+end+1:]
	}
}

// mcpRoots are the roots offered to a server over stdio (MCP's roots):
// the workspace roots, unless perms give it none of them, and the
// directories its arguments name (servedDirs) that lie in none of them.
// They are the directories the server is to work in, so that a server
// that takes its directories from its client (the reference filesystem
// server started without one) works in the workspace, and one that
// replaces the directories its arguments name with its client's roots
// keeps them. Never nil: the roots capability is declared even when
// there are none to offer.
func (s *MCPServer) mcpRoots(workspace []string, perms sdk.Permissions) []string {
	roots := []string{}
	if perms.Roots != sdk.RootsNone {
		roots = append(roots, workspace...)
	}
	for _, dir := range s.servedDirs() {
		if !slices.ContainsFunc(roots, func(r string) bool { return within(dir, r) }) {
			roots = append(roots, dir)
		}
	}
	return roots
}
