package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
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
func (s *MCPServer) launcherDir(root string) (string, []string) {
	x, err := s.expanded()
	if err != nil || root == "" || x.transport() != "stdio" {
		return "", nil
	}
	vars, ok := launchers[filepath.Base(x.Command)]
	if !ok {
		return "", nil
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

// defaultGrant is what a server over stdio gets besides a third-party
// plugin's defaults, from what its configuration names, so that a block
// pasted from another client runs as it did there, confined to it:
//   - every path its arguments and cwd name, read-only: a directory it is
//     to serve; a script and its package (a script in node_modules gets
//     the whole node_modules tree, where its imports are), or, where
//     that directory is or holds the home or the temporary directory,
//     the file alone;
//   - a launcher (npx, pnpx, bunx, uvx, uv, pipx) gets what fetching and
//     running a package takes: network access, running programs, and a
//     directory of its own for what it fetches (launcherDir, under
//     root).
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
	if _, ok := launchers[filepath.Base(x.Command)]; ok {
		g.Network, g.Exec = true, true
		if dir, _ := s.launcherDir(root); dir != "" {
			g.Write = append(g.Write, dir)
		}
	}
	paths := slices.Clone(x.Args)
	if x.Dir != "" {
		paths = append(paths, x.Dir)
	}
	for _, p := range paths {
		if !strings.Contains(p, "/") && p != "." {
			continue // a word, not a path
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(x.Dir, p)
		}
		p = absPath(p)
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
	return g
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
