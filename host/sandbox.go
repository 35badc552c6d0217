package host

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/sdk"
)

// SandboxMode says how the host confines plugin processes.
type SandboxMode int

const (
	// SandboxAuto enforces what the kernel supports and warns once,
	// naming what it does not.
	SandboxAuto SandboxMode = iota
	// SandboxRequire refuses to start a plugin the kernel cannot confine
	// with every restriction the host uses.
	SandboxRequire
	// SandboxOff runs plugins unconfined: the escape hatch.
	SandboxOff
)

func (m SandboxMode) String() string {
	switch m {
	case SandboxAuto:
		return "auto"
	case SandboxRequire:
		return "require"
	case SandboxOff:
		return "off"
	}
	return fmt.Sprintf("SandboxMode(%d)", int(m))
}

// ParseSandboxMode reads "auto", "require" or "off".
func ParseSandboxMode(s string) (SandboxMode, error) {
	for _, m := range []SandboxMode{SandboxAuto, SandboxRequire, SandboxOff} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown sandbox mode %q (want auto, require or off)", s)
}

// Grant is what the user allows one plugin beyond its defaults. A
// third-party plugin gets, by default, read-write access to the workspace
// roots (or less, if it declares less) and the read-only system paths a
// program needs, and a script read access to its own directory (see
// LoadPlugins); a built-in gets what it declares. Whatever else a plugin
// gets is granted here, whether it asked or not: the declaration tells
// the user what to grant, the grant decides.
type Grant struct {
	// Read, Write, Network, Exec, SessionFile and UnixSockets are granted
	// as they are declared (see sdk.Permissions); Roots is not used.
	sdk.Permissions
	// Asked grants everything the plugin declares.
	Asked bool
	// Limits raise the limits of the plugin's processes above
	// DefaultLimits; a zero field changes nothing.
	Limits Limits
}

// ParseGrant reads a grant as the command line writes it:
// "PLUGIN=ITEM[,ITEM...]", where PLUGIN is the plugin's binary name with
// or without "agenthost-plugin-", and an ITEM is network, exec, session,
// unix-sockets, asked (everything the plugin declares), read:PATH,
// write:PATH, or a limit: memory:SIZE, processes:N, file-size:SIZE (see
// ParseSize). A relative PATH is made absolute; "~/" and "$TMPDIR" are
// kept for the host to expand.
func ParseGrant(spec string) (plugin string, g Grant, err error) {
	plugin, items, ok := strings.Cut(spec, "=")
	plugin = strings.TrimPrefix(strings.TrimSpace(plugin), PluginPrefix)
	if !ok || plugin == "" || items == "" {
		return "", g, fmt.Errorf("grant %q: want PLUGIN=ITEM[,ITEM...]", spec)
	}
	for item := range strings.SplitSeq(items, ",") {
		kind, path, hasPath := strings.Cut(strings.TrimSpace(item), ":")
		switch {
		case kind == "network" && !hasPath:
			g.Network = true
		case kind == "exec" && !hasPath:
			g.Exec = true
		case kind == "session" && !hasPath:
			g.SessionFile = true
		case kind == "unix-sockets" && !hasPath:
			g.UnixSockets = true
		case kind == "asked" && !hasPath:
			g.Asked = true
		case (kind == "memory" || kind == "file-size") && hasPath:
			v, err := ParseSize(path)
			if err != nil {
				return "", g, fmt.Errorf("grant %q: %s: %w", spec, kind, err)
			}
			if kind == "memory" {
				g.Limits.Memory = v
			} else {
				g.Limits.FileSize = v
			}
		case kind == "processes" && hasPath:
			v, err := strconv.ParseUint(path, 10, 64)
			if path == "unlimited" {
				v, err = Unlimited, nil
			}
			if err != nil || v == 0 {
				return "", g, fmt.Errorf("grant %q: processes: %q is not a number of processes, or unlimited", spec, path)
			}
			g.Limits.Processes = v
		case (kind == "read" || kind == "write") && hasPath && path != "":
			if !strings.HasPrefix(path, "~/") && !strings.HasPrefix(path, "$TMPDIR") {
				if path, err = filepath.Abs(path); err != nil {
					return "", g, err
				}
			}
			if kind == "read" {
				g.Read = append(g.Read, path)
			} else {
				g.Write = append(g.Write, path)
			}
		default:
			return "", g, fmt.Errorf("grant %q: unknown item %q (want network, exec, session, unix-sockets, asked, read:PATH, write:PATH, memory:SIZE, processes:N or file-size:SIZE)", spec, item)
		}
	}
	if err := (sdk.Permissions{Read: g.Read, Write: g.Write}).Validate(); err != nil {
		return "", g, fmt.Errorf("grant %q: %w", spec, err)
	}
	return plugin, g, nil
}

// MergeGrants returns what a and b grant together.
func MergeGrants(a, b Grant) Grant {
	return Grant{
		Permissions: sdk.Permissions{
			Read:        slices.Concat(a.Read, b.Read),
			Write:       slices.Concat(a.Write, b.Write),
			Network:     a.Network || b.Network,
			Exec:        a.Exec || b.Exec,
			SessionFile: a.SessionFile || b.SessionFile,
			UnixSockets: a.UnixSockets || b.UnixSockets,
		},
		Asked:  a.Asked || b.Asked,
		Limits: a.Limits.raise(b.Limits),
	}
}

// SandboxReport says how one plugin is confined.
type SandboxReport struct {
	// Asked is what the plugin declares it needs.
	Asked sdk.Permissions
	// Granted is what it gets: the roots as the host gives them, and
	// what the user granted (for a built-in, what it declares).
	Granted sdk.Permissions
	// Enforced says the kernel enforces the plugin's sandbox; NotEnforced
	// names what it does not, when it enforces only part, or why not at
	// all.
	Enforced    bool
	NotEnforced []string
	// Walls are the walls of its processes that the kernel puts up:
	// "Landlock ABI 7", "seccomp", namespaces; the limits among them.
	Walls []string
	// Limits are the limits of its processes.
	Limits Limits
	// Mode is the host's sandbox mode.
	Mode SandboxMode
	// Profile says what the development profile gives the plugin's
	// processes, when it runs programs (see DevProfile); Secrets are the
	// paths none of its processes reaches.
	Profile []string
	Secrets []string
}

// Status is the report in one line: "enforced (Landlock ABI 7)", "partly
// enforced (...; not: ...)", "not enforced: ...", "off".
func (s SandboxReport) Status() string {
	support := probeSandbox()
	switch {
	case s.Mode == SandboxOff:
		return "off (--sandbox off): the plugin runs with the user's rights"
	case !s.Enforced:
		return "not enforced: " + strings.Join(s.NotEnforced, "; ")
	case len(s.NotEnforced) > 0:
		return fmt.Sprintf("partly enforced (%s; not enforced: %s)", support, strings.Join(s.NotEnforced, "; "))
	}
	return fmt.Sprintf("enforced (%s)", support)
}

// probeSandbox, probeSeccomp and probeNamespaces are what the kernel
// supports; tests replace them to play another kernel.
var (
	probeSandbox    = sandbox.Probe
	probeSeccomp    = sandbox.SeccompSupport
	probeNamespaces = sandbox.NamespaceSupport
	// knownNamespaces is what a start found out of namespaces, without
	// starting a probe: nil when it found nothing yet.
	knownNamespaces = func() error { _, err := sandbox.NamespacesKnown(); return err }
)

// sandboxConfig is the registry's sandbox settings, shared by its plugins.
type sandboxConfig struct {
	mode   SandboxMode
	grants map[string]Grant
	roots  []string
	// sessionFiles are the session context files a plugin granted the
	// session file may write, as they are when it starts: the registry's
	// tool context's, and those AllowSessionFile added.
	sessionFiles func() []string
	logger       hclog.Logger
	warnOnce     sync.Once
	runDirOnce   func() string
	// launchers is where MCP servers' launchers keep what they fetch
	// (launcherRoot).
	launchers string
	// cacheDir is Options.CacheDir, beside which the workspace's caches
	// are (workspaceCacheDir); devProfile is Options.Profile.
	cacheDir   string
	devProfile DevProfile
}

// runDir is where go-plugin makes each launch's socket directory: a
// directory of the host's own outside the temporary directory, which a
// command may fill (run_bash writes there): $XDG_RUNTIME_DIR/agenthost,
// or else agenthost/run in the user's cache directory, mode 0700. It is
// "" (the temporary directory, go-plugin's default) when neither can be
// made.
func (c *sandboxConfig) runDir() string {
	if c == nil || c.runDirOnce == nil {
		return ""
	}
	return c.runDirOnce()
}

// makeRunDir makes runDir's directory.
func makeRunDir() string {
	var dirs []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "agenthost"))
	}
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "agenthost", "run"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err == nil {
			return d
		}
	}
	return ""
}

// grant returns the user's grant to the plugin at path.
func (c *sandboxConfig) grant(path string) Grant {
	if c == nil {
		return Grant{}
	}
	name := filepath.Base(path)
	if g, ok := c.grants[strings.TrimPrefix(name, PluginPrefix)]; ok {
		return g
	}
	return c.grants[name]
}

// granted is what the plugin at path gets, given what it declares and
// what its configuration grants it besides the user's grants by name
// (extra: an MCP server's).
func (c *sandboxConfig) granted(path string, asked sdk.Permissions, extra Grant) sdk.Permissions {
	g := MergeGrants(c.grant(path), extra)
	out := sdk.Permissions{Roots: asked.Roots}
	if out.Roots == sdk.RootsDefault {
		out.Roots = sdk.RootsReadWrite
	}
	if isBuiltin(path) || g.Asked {
		out.Read = append(out.Read, asked.Read...)
		out.Write = append(out.Write, asked.Write...)
		out.Network = asked.Network
		out.Exec = asked.Exec
		out.SessionFile = asked.SessionFile
		out.UnixSockets = asked.UnixSockets
	}
	out.Read = append(out.Read, g.Read...)
	out.Write = append(out.Write, g.Write...)
	out.Network = out.Network || g.Network
	out.Exec = out.Exec || g.Exec
	out.SessionFile = out.SessionFile || g.SessionFile
	out.UnixSockets = out.UnixSockets || g.UnixSockets
	out.Read = compactPaths(out.Read)
	out.Write = compactPaths(out.Write)
	return out
}

// scriptGrant is what the plugin at path gets besides a third party's
// defaults when it is a script (a file starting with "#!"): read access
// to the directory its file is in, symlinks resolved, or to the outermost
// node_modules directory above it, as for an MCP server's script
// (packageDir). That is where its interpreter finds what the script
// loads: a helper module beside it, its packages, a .proto. A native
// module among them needs no more, since a library is mapped to run with
// read access alone. A directory that holds the home directory or the
// temporary directory (or is one of them) would open far more than the
// script's own files: it is not granted, and the user grants what the
// script needs there. A binary gets nothing.
func scriptGrant(path string) Grant {
	f, err := os.Open(path)
	if err != nil {
		return Grant{}
	}
	script := isScript(f)
	f.Close()
	if !script {
		return Grant{}
	}
	real, err := filepath.EvalSymlinks(absPath(path))
	if err != nil {
		return Grant{}
	}
	dir := packageDir(real)
	if holdsHomeOrTemp(dir) {
		return Grant{}
	}
	return Grant{Permissions: sdk.Permissions{Read: []string{dir}}}
}

// within reports whether path is dir or under it; both are absolute and
// clean.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func compactPaths(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	paths = slices.Clone(paths)
	slices.Sort(paths)
	return slices.Compact(paths)
}

// report says how the plugin at path is confined.
func (c *sandboxConfig) report(path string, asked sdk.Permissions, extra Grant) SandboxReport {
	rep := SandboxReport{Asked: asked, Granted: c.granted(path, asked, extra), Mode: c.mode, Limits: c.limits(path, extra)}
	if c.mode == SandboxOff {
		return rep
	}
	support := probeSandbox()
	rep.Enforced = support.Enforced()
	if !rep.Enforced {
		rep.NotEnforced = []string{support.String()}
		return rep
	}
	rep.NotEnforced = missingWalls(support, probeNamespaces)
	rep.Walls = []string{support.String()}
	if probeSeccomp() == nil {
		rep.Walls = append(rep.Walls, "seccomp")
	}
	switch {
	case probeNamespaces() != nil:
		rep.Walls = append(rep.Walls, "a child subreaper that ends what it leaves behind")
	case rep.Granted.Network:
		rep.Walls = append(rep.Walls, "its own user, PID and mount namespaces")
	default:
		rep.Walls = append(rep.Walls, "its own user, PID, mount and network namespaces")
	}
	rep.Walls = append(rep.Walls, "limits: "+rep.Limits.String())
	rep.Profile = c.profile(rep.Granted).summary()
	for _, p := range c.secrets() {
		rep.Secrets = append(rep.Secrets, tildePath(p))
	}
	if os.Geteuid() == 0 && rep.Limits.Processes != Unlimited && (probeNamespaces() != nil || !sandbox.PIDMaxPerNamespace()) {
		rep.NotEnforced = append(rep.NotEnforced, "the process limit: no rlimit counts root's processes, and the kernel gives no PID namespace a pid_max of its own (Linux 6.14)")
	}
	return rep
}

// limits are the limits of the plugin at path's processes: the defaults,
// raised by the user's grants to it and by extra (an MCP server's).
func (c *sandboxConfig) limits(path string, extra Grant) Limits {
	return c.grant(path).Limits.raise(extra.Limits).or(DefaultLimits)
}

// errSandboxRequired is a launch refused under SandboxRequire: the
// kernel's Landlock, and what else of the walls it does not put up.
type errSandboxRequired struct {
	support sandbox.Support
	missing []string
}

func (e errSandboxRequired) Error() string {
	if !e.support.Enforced() {
		return fmt.Sprintf("the sandbox is required (--sandbox require) but the kernel cannot confine plugins: %s", e.support)
	}
	return fmt.Sprintf("the sandbox is required (--sandbox require) but the kernel (%s) does not enforce %s", e.support, strings.Join(e.missing, "; "))
}

// missingWalls names the walls of the sandbox that the kernel does not
// put up: Landlock's restrictions its ABI lacks, the system call filter,
// and namespaces, as namespaces says (nil: not at all).
func missingWalls(support sandbox.Support, namespaces func() error) []string {
	missing := support.Missing()
	if err := probeSeccomp(); err != nil {
		missing = append(missing, "a system call filter (seccomp): "+err.Error())
	}
	if namespaces == nil {
		return missing
	}
	if err := namespaces(); err != nil {
		missing = append(missing, "namespaces of its own ("+err.Error()+")")
	}
	return missing
}

// warnUnenforced warns once, in one line, when plugins run less confined
// than the host would have them.
func (c *sandboxConfig) warnUnenforced() {
	if c.mode != SandboxAuto {
		return
	}
	support := probeSandbox()
	// What starts found out, not a probe of its own: the warning comes
	// with the first start that finds namespaces missing.
	missing := missingWalls(support, knownNamespaces)
	if support.Enforced() && len(missing) == 0 {
		return
	}
	c.warnOnce.Do(func() {
		if !support.Enforced() {
			c.logger.Warn("plugins run unconfined: the kernel has no Landlock sandbox ("+support.String()+"); --sandbox require refuses to run them, --sandbox off silences this", "landlock", support.String())
			return
		}
		c.logger.Warn("the kernel enforces only part of the plugin sandbox; not enforced: "+strings.Join(missing, "; "), "landlock", support.String())
	})
}

// policy is the sandbox of one launch of the plugin binary bin, given its
// permissions and limits; nil when the plugin runs unconfined (mode off,
// or no Landlock under auto). It runs in namespaces of its own when the
// kernel allows them.
func (c *sandboxConfig) policy(bin *openedBinary, perms sdk.Permissions, limits Limits, prof *profile) (*sandbox.Policy, error) {
	if c == nil || c.mode == SandboxOff {
		return nil, nil
	}
	support := probeSandbox()
	if c.mode == SandboxRequire {
		// Namespaces are not required: where the kernel gives none (a
		// container's default seccomp profile refuses them), a subreaper
		// ends what a plugin leaves behind instead, and the report says
		// so.
		if missing := missingWalls(support, nil); !support.Enforced() || len(missing) > 0 {
			return nil, errSandboxRequired{support, missing}
		}
	}
	c.warnUnenforced()
	if !support.Enforced() {
		return nil, nil
	}
	p := &sandbox.Policy{Network: perms.Network, UnixSockets: perms.UnixSockets, Isolate: true, Limits: limits.sandbox()}
	p.Rules = append(p.Rules, sandbox.System(perms.Exec)...)
	p.Rules = append(p.Rules, sandbox.Rule{Path: bin.path, File: bin.file, Access: sandbox.Read | sandbox.Execute})
	p.Allow(sandbox.Read|sandbox.Execute, sandbox.Interpreters(bin.file, os.Getenv("PATH"))...)
	var exec sandbox.Access
	if perms.Exec {
		exec = sandbox.Execute
	}
	switch perms.Roots {
	case sdk.RootsRead:
		p.Allow(sandbox.Read|exec, c.roots...)
	case sdk.RootsReadWrite, sdk.RootsDefault:
		p.Allow(sandbox.Read|sandbox.Write|exec, c.roots...)
	}
	read, write := expandPaths(perms.Read), expandPaths(perms.Write)
	p.Allow(sandbox.Read|exec, read...)
	p.Allow(sandbox.Read|sandbox.Write|exec, write...)
	for _, dir := range c.sessionDirs(perms) {
		// The rule needs the directory to exist; the user named the file
		// in it, so the host makes it, as save_session_context would.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making the session file's directory: %w", err)
		}
		p.Allow(sandbox.Read|sandbox.Write, dir)
	}
	if prof != nil {
		if err := prof.makeDirs(); err != nil {
			return nil, fmt.Errorf("making the workspace's caches: %w", err)
		}
		p.Allow(sandbox.Read|sandbox.Execute, prof.read...)
		p.Allow(sandbox.List, prof.list...)
		p.Allow(sandbox.Read|sandbox.Write|sandbox.Execute, prof.write...)
	}
	p.Secrets = c.secrets()
	return p, nil
}

// sessionDirs are the directories of the session context files, for a
// plugin granted them, sorted; none otherwise.
func (c *sandboxConfig) sessionDirs(perms sdk.Permissions) []string {
	if c == nil || !perms.SessionFile || c.sessionFiles == nil {
		return nil
	}
	var dirs []string
	for _, f := range c.sessionFiles() {
		if f != "" {
			dirs = append(dirs, filepath.Dir(absPath(f)))
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// SandboxEnv is the variable through which the host tells a plugin it
// runs sandboxed, and with what (see sandboxEnvValue); a plugin that finds
// it absent runs unconfined.
const SandboxEnv = sandbox.Env

// sandboxEnvValue is SandboxEnv set to perms and the development
// profile, paths expanded, and the secrets of policy, as JSON.
func sandboxEnvValue(perms sdk.Permissions, prof *profile, policy *sandbox.Policy) string {
	g := sandbox.Granted{
		Roots:       perms.Roots.String(),
		Read:        expandPaths(perms.Read),
		Write:       expandPaths(perms.Write),
		Network:     perms.Network,
		Exec:        perms.Exec,
		UnixSockets: perms.UnixSockets,
		Secrets:     policy.Secrets,
	}
	if prof != nil {
		g.Read = append(g.Read, prof.read...)
		g.Write = append(g.Write, prof.write...)
		g.List = prof.list
	}
	data, _ := json.Marshal(g)
	return SandboxEnv + "=" + string(data)
}

// expandPaths expands "~/" and "$TMPDIR" as the host sees them.
func expandPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		switch {
		case strings.HasPrefix(p, "~/"):
			home, err := os.UserHomeDir()
			if err != nil {
				continue
			}
			p = filepath.Join(home, p[2:])
		case p == "$TMPDIR" || strings.HasPrefix(p, "$TMPDIR/"):
			p = filepath.Join(os.TempDir(), strings.TrimPrefix(p, "$TMPDIR"))
		}
		out = append(out, p)
	}
	return out
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
