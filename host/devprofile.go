package host

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

// DevProfile is the development profile: what a sandboxed process
// granted exec (run_bash's commands, a plugin or MCP server that runs
// programs) gets of the user's home directory besides its grants, so
// that builds, tests and git work under the walls while keys and tokens
// stay out of reach.
//
//   - read, and execute where it holds programs: the configuration tools
//     read (~/.gitconfig, ~/.config/git, ... see profileConfigs), the
//     directories of PATH, the toolchains and module caches in the home
//     directory (~/go, ~/.cargo, ~/.rustup, ~/.pyenv, ~/.nvm, ...: see
//     profileToolchains) and where the toolchain variables of the host's
//     environment point (GOPATH, GOMODCACHE, CARGO_HOME, ...);
//   - list: the names in the home directory;
//   - write: a cache directory of the workspace's own, kept between
//     calls, into which TMPDIR, GOCACHE, XDG_CACHE_HOME and the caches of
//     npm, pip and yarn point; the user's own caches are not writable, so
//     that nothing a command writes there runs later outside the sandbox;
//   - never, whatever is granted: the secrets (see homeSecrets), for
//     every sandboxed process, with or without exec.
type DevProfile struct {
	// Off gives a process granted exec its grants alone.
	Off bool
	// Read are more paths such a process may read and execute.
	Read []string
	// Caches are more variables to point into the workspace's cache
	// directory, each at a directory of its own (CARGO_TARGET_DIR,
	// GRADLE_USER_HOME, ...).
	Caches []string
	// Secrets are more paths no sandboxed process reaches.
	Secrets []string
}

// homeSecrets are the paths of the home directory that hold keys,
// tokens, credentials and histories: no sandboxed process reaches them,
// whatever it is granted (sandbox.Policy.Secrets).
var homeSecrets = []string{
	// Keys.
	".ssh", ".gnupg", ".pki", ".password-store", ".local/share/keyrings",
	// Clouds and clusters.
	".aws", ".azure", ".config/gcloud", ".kube", ".oci", ".config/doctl",
	".config/hcloud", ".config/rclone", ".s3cfg", ".boto",
	".docker/config.json", ".terraform.d/credentials.tfrc.json", ".vault-token",
	// Forges, registries and their tokens.
	".netrc", ".git-credentials", ".config/git/credentials", ".config/gh",
	".config/hub", ".cargo/credentials", ".cargo/credentials.toml",
	".composer/auth.json", ".config/composer/auth.json", ".gem/credentials",
	".m2/settings-security.xml",
	// Databases.
	".pgpass", ".my.cnf",
	// Password managers, browsers, mail.
	".config/op", ".config/1Password", ".config/Bitwarden", ".mozilla",
	".thunderbird", ".config/google-chrome", ".config/chromium",
	".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi",
	".config/opera",
	// Other agents' credentials.
	".claude/.credentials.json", ".codex/auth.json",
	// Histories.
	".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history",
	".local/share/fish/fish_history", ".python_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".sqlite_history", ".rediscli_history",
	".lesshst", ".viminfo",
}

// tokenFiles are configuration files that are secrets when they hold a
// token or a password (tokenPattern), and read like any configuration
// file when they do not.
var tokenFiles = []string{
	".npmrc", ".pypirc", ".yarnrc.yml", ".gradle/gradle.properties",
	".m2/settings.xml", ".bundle/config", ".config/pip/pip.conf", ".pip/pip.conf",
}

// tokenPattern finds a token or a password in a configuration file.
var tokenPattern = regexp.MustCompile(`(?i)(_authtoken|_auth\b|_password|password|passwd|token|secret|apikey|api_key|://[^/\s:@]+:[^/\s@]+@)`)

// profileConfigs are the configuration files and directories of the home
// directory that tools read (".config/X" stands for $XDG_CONFIG_HOME/X).
var profileConfigs = []string{
	".gitconfig", ".config/git", ".gitignore", ".gitignore_global", ".gitattributes",
	".editorconfig", ".config/go", ".npmrc", ".yarnrc", ".yarnrc.yml",
	".config/yarn", ".config/pnpm", ".config/pip", ".pip", ".pydistutils.cfg",
	".condarc", ".config/pypoetry", ".config/uv", ".config/ruff", ".config/mise",
	".tool-versions", ".python-version", ".nvmrc", ".config/rustfmt",
	".cargo/config.toml", ".cargo/config", ".clang-format", ".config/clangd",
	".gemrc", ".bundle/config", ".m2/settings.xml", ".gradle/gradle.properties",
	".hgrc", ".config/jj",
}

// profileToolchains are the toolchains, version managers and module
// caches of the home directory.
var profileToolchains = []string{
	".local/bin", ".local/lib", "go", "sdk", ".cargo", ".rustup", ".pyenv",
	".nvm", ".asdf", ".local/share/mise", ".local/share/rtx", ".volta",
	".sdkman", ".bun", ".deno", ".local/share/pnpm", ".npm-global",
	".virtualenvs", ".local/share/virtualenvs", ".conda", "miniconda3",
	"anaconda3", "miniforge3", ".m2/repository", ".gradle/caches",
	".gradle/wrapper", ".rbenv", ".gem", ".juliaup", ".ghcup", ".cabal",
	".stack", ".opam", ".dotnet", ".nuget/packages", ".elan", ".nimble",
}

// toolchainVars are the variables of the host's environment that say
// where toolchains are: each process granted exec gets them, and may
// read and execute where they point. None of them holds a credential.
var toolchainVars = []string{
	"GOPATH", "GOMODCACHE", "GOROOT", "GOTOOLCHAIN", "GOENV",
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_EXE",
	"NVM_DIR", "NVM_BIN", "VOLTA_HOME", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR",
	"ASDF_DIR", "ASDF_DATA_DIR", "MISE_DATA_DIR", "SDKMAN_DIR", "JAVA_HOME",
	"GRADLE_USER_HOME", "M2_HOME", "MAVEN_HOME", "GEM_HOME", "GEM_PATH",
	"RBENV_ROOT", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
}

// workspaceCaches are the directories of a workspace's cache directory,
// and the variables that point into them: what builds write, kept
// between calls, and the command's temporary directory.
var workspaceCaches = []struct{ dir, env string }{
	{"tmp", "TMPDIR"},
	{"go-build", "GOCACHE"},
	{"cache", "XDG_CACHE_HOME"},
	{"npm", "npm_config_cache"},
	{"pip", "PIP_CACHE_DIR"},
	{"yarn", "YARN_CACHE_FOLDER"},
}

// profile is what the development profile gives one process.
type profile struct {
	read  []string // read and execute
	list  []string // names only
	write []string // read, write and execute: the workspace's caches
	env   []string // NAME=VALUE: the caches, and the toolchains' variables
}

// secrets are the paths no sandboxed process reaches: the home
// directory's (homeSecrets, and tokenFiles that hold a token) and the
// user's, those that are there when a process starts.
func (c *sandboxConfig) secrets() []string {
	var out []string
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		for _, s := range homeSecrets {
			out = append(out, configPath(home, s))
		}
		for _, f := range tokenFiles {
			p := configPath(home, f)
			if data, err := os.ReadFile(p); err == nil && tokenPattern.Match(data) {
				out = append(out, p)
			}
		}
	}
	if c != nil {
		out = append(out, expandPaths(c.devProfile.Secrets)...)
	}
	// One that is not there has nothing to keep, and would split a rule
	// above it for nothing (see sandbox.Policy.Secrets).
	out = slices.DeleteFunc(out, func(p string) bool {
		_, err := os.Lstat(p)
		return err != nil
	})
	return compactPaths(out)
}

// configPath is rel in the home directory, ".config/X" in
// $XDG_CONFIG_HOME when it is set.
func configPath(home, rel string) string {
	if x, ok := strings.CutPrefix(rel, ".config/"); ok {
		if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
			return filepath.Join(d, x)
		}
	}
	return filepath.Join(home, rel)
}

// profile is what the development profile gives a process with perms:
// nil without exec, or when the profile is off.
func (c *sandboxConfig) profile(perms sdk.Permissions) *profile {
	if c == nil || !perms.Exec || c.devProfile.Off {
		return nil
	}
	p := &profile{}
	home, err := os.UserHomeDir()
	hasHome := err == nil && filepath.IsAbs(home) && home != "/"
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }
	add := func(paths *[]string, path string) {
		if filepath.IsAbs(path) && exists(path) && !broad(path) {
			*paths = append(*paths, filepath.Clean(path))
		}
	}
	if hasHome {
		p.list = append(p.list, home)
		for _, rel := range profileConfigs {
			add(&p.read, configPath(home, rel))
		}
		for _, rel := range profileToolchains {
			add(&p.read, filepath.Join(home, rel))
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		add(&p.read, dir)
	}
	for _, name := range toolchainVars {
		v := os.Getenv(name)
		if v == "" || strings.ContainsAny(v, "\n\x00") {
			continue
		}
		p.env = append(p.env, name+"="+v)
		for _, path := range filepath.SplitList(v) {
			add(&p.read, path)
		}
	}
	p.read = append(p.read, expandPaths(c.devProfile.Read)...)
	// The system's program directories are every sandboxed process's
	// (sandbox.System), and a path beneath another adds nothing.
	p.read = slices.DeleteFunc(p.read, func(path string) bool {
		return slices.ContainsFunc(systemDirs, func(d string) bool { return within(path, d) })
	})
	if dir := c.workspaceCacheDir(); dir != "" {
		for _, wc := range workspaceCaches {
			path := filepath.Join(dir, wc.dir)
			p.write = append(p.write, path)
			p.env = append(p.env, wc.env+"="+path)
		}
		for _, name := range c.devProfile.Caches {
			if !textsafe.IsEnvName(name) {
				continue
			}
			path := filepath.Join(dir, "var-"+strings.ToLower(name))
			p.write = append(p.write, path)
			p.env = append(p.env, name+"="+path)
		}
	}
	p.read = outermost(p.read)
	return p
}

// systemDirs hold the system's programs, which every sandboxed process
// may read, and execute when it runs programs (sandbox.System).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/nix/store"}

// outermost returns paths sorted, without those beneath another.
func outermost(paths []string) []string {
	paths = compactPaths(paths)
	var out []string
	for _, p := range paths {
		if !slices.ContainsFunc(out, func(o string) bool { return within(p, o) }) {
			out = append(out, p)
		}
	}
	return out
}

// broad reports whether a directory would open too much to be read
// whole: the root, the home directory, or a directory above either.
func broad(path string) bool {
	path = filepath.Clean(path)
	if path == "/" {
		return true
	}
	home, err := os.UserHomeDir()
	return err == nil && within(absPath(home), path)
}

// workspaceCacheDir is the cache directory of the registry's workspace:
// one per set of roots, in the user's cache directory (or beside the
// description cache, as Options.CacheDir places it); "" when there is
// none.
func (c *sandboxConfig) workspaceCacheDir() string {
	base := cacheBase(c.cacheDir)
	if base == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(c.roots, "\x00")))
	name := "root"
	if len(c.roots) > 0 {
		name = filepath.Base(c.roots[0])
	}
	name = strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	return filepath.Join(base, "workspaces", name+"-"+hex.EncodeToString(sum[:6]))
}

// makeDirs makes the profile's writable directories, mode 0700.
func (p *profile) makeDirs() error {
	for _, dir := range p.write {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// profileSummary is the profile in words, for a report.
func (p *profile) summary() []string {
	if p == nil {
		return nil
	}
	var out []string
	show := func(paths []string) string {
		var s []string
		for _, path := range paths {
			s = append(s, tildePath(path))
		}
		return strings.Join(s, ", ")
	}
	if len(p.read) > 0 {
		out = append(out, "read "+show(p.read))
	}
	if len(p.list) > 0 {
		out = append(out, "the names in "+show(p.list))
	}
	var vars []string
	for _, kv := range p.env {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(p.write, value) {
			vars = append(vars, name)
		}
	}
	if len(vars) > 0 {
		out = append(out, "write the workspace's caches ("+strings.Join(vars, ", ")+") in "+show([]string{filepath.Dir(p.write[0])}))
	}
	return out
}

// tildePath is path with the home directory written ~, and quoted when it
// needs to be.
func tildePath(path string) string {
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && home != "/" {
		if rel, ok := strings.CutPrefix(path, home+"/"); ok {
			path = "~/" + rel
		} else if path == home {
			path = "~"
		}
	}
	return textsafe.Name(path)
}
