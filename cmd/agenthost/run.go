package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
)

const usageText = `agenthost gives LLM agents tools served by plugin binaries.

Usage:
  agenthost [flags] COMMAND [ARGS]

Commands:
  tools                        list every tool: name, status, plugin, description
  schemas                      print the enabled tools' schemas, as a model gets them
  call NAME [ARGS_JSON | -]    run one tool with JSON arguments (- reads them from stdin)
  plugins                      list the plugin binaries found, or why each was skipped
  plugins lock [--lock FILE]   write the SHA-256 of every plugin binary to the lock
                               file (no plugin is started); while it exists, a
                               binary it does not list or whose hash differs is
                               refused
  chat [-m TEXT]               talk with a model that calls the tools (interactive,
                               or one answer with -m); see agenthost chat --help
  mcp [--http ADDR]            serve the enabled tools to MCP clients over stdio,
                               or streamable HTTP at ADDR/mcp (loopback unless a
                               host is given; --token or $AGENTHOST_MCP_TOKEN sets
                               a bearer token, required off loopback). Web pages
                               are refused (403) unless --allow-origin ORIGIN
                               lists theirs (repeatable; * allows any page, which
                               is unsafe); --max-sessions N (default 1000) caps
                               open sessions plus requests in flight without
                               one, over it 503; --session-idle D (default
                               10m) closes idle sessions.
                               Every protocol version is served: 2026-07-28 and
                               later without sessions, older ones in sessions;
                               --stateless keeps no sessions for any version, so
                               any replica behind a load balancer can answer any
                               request; clients before 2026-07-28 then lose
                               server-to-client notifications (tools/list_changed)
                               and requests, per-session state, and
                               notifications/cancelled (closing the request
                               still cancels its call). On shutdown, calls in
                               flight are canceled and sessions closed
  mcp login NAME               log in to the remote MCP server NAME with OAuth:
                               opens its authorization page in the browser
                               ($BROWSER, else the desktop's opener, else the
                               URL is printed), waits for it to come back and
                               stores the token (see agenthost mcp --help)
  mcp logout NAME              remove the OAuth token stored for NAME
  trust [FILE]                 trust this directory's agenthost.json and .mcp.json
                               (or FILE) as they are now: a project's
                               configuration can start programs, so agenthost
                               reads it only once trusted

Flags (before or after the command):
  --config FILE      read the configuration from FILE alone (- for none);
                     by default agenthost/config.json in the user config
                     directory (~/.config or $XDG_CONFIG_HOME on Linux)
                     and agenthost.json in the current directory, whose
                     keys win (and the mcpServers of Claude Code's
                     .mcp.json there). JSON: the flags as keys (plugins,
                     roots, enable, ..., grants, chat) and mcpServers as Claude
                     Desktop, Cursor and Claude Code write it. A flag
                     wins over the file; --plugin-env and --grant add to it
  --plugins DIR      the plugins directory (default the configuration's,
                     else $AGENTHOST_PLUGINS, else a "plugins" directory
                     beside the executable)
  --root DIR         a workspace root (repeatable; default the current
                     directory): file tools stay inside the roots, and
                     relative paths resolve against the first; --root /
                     opts out
  --enable NAME      enable a tool (repeatable); opt-in tools start disabled.
                     NAME may be a glob (github_*), mcp:SERVER (every tool
                     of that MCP server) or mcp:SERVER/GLOB; one that
                     matches no tool is an error
  --disable NAME     disable a tool, or the tools a pattern as above
                     matches (repeatable); tools the server lists later
                     follow the same choice
  --defer-tools N    when the MCP servers' tools together take more than N
                     tokens (default 10000; 0: whatever their size; off:
                     never), or the tools are more than 128, they are not
                     offered one by one: the model gets find_tools, which
                     finds and loads them (off by default for mcp)
  --log-level LEVEL  trace, debug, info, warn (default) or error; logs go to stderr
  --eager            start every plugin at load, in parallel; by default a
                     plugin whose description is cached starts on the
                     first call of one of its tools. An MCP server that
                     failed to start is skipped for a while (agenthost
                     plugins says until when); --eager starts it now
  --cache-dir DIR    where plugin descriptions are cached (default the user
                     cache directory's agenthost/plugins; - for none)
  --idle-timeout D   stop a plugin after D without calls (default 5m; 0:
                     never); its next call starts it again
  --lock FILE        the lock file (default agenthost.lock in the plugins
                     directory); without one, every plugin binary runs
  --plugin-env NAME  pass the environment variable NAME to plugins (repeatable);
                     they get only PATH, HOME, USER, LANG, LC_*, TMPDIR, TZ,
                     SHELL, TERM otherwise
  --allow-insecure-plugins
                     load plugin binaries that another user could have
                     planted or replaced (a plugins directory, binary or
                     lock file writable by others or owned by another
                     user); by default they are refused
  --sandbox MODE     auto (default): confine every plugin and run_bash
                     command in a Landlock sandbox as far as the kernel
                     supports, warning once about the rest; require: refuse
                     to start a plugin the kernel cannot confine fully; off:
                     run plugins with all of the user's rights (the escape
                     hatch)
  --grant PLUGIN=ITEM[,ITEM...]
                     grant a plugin more than its defaults (repeatable):
                     network (outbound TCP), exec (run programs), session
                     (the session file), read:PATH, write:PATH, or asked
                     (all it declares); agenthost plugins shows what each
                     asks for and gets
  --approval MODE    what a tool call no rule decides does: ask (the
                     default of chat: read-only tools run, others are
                     asked), edits (file changes inside the roots run
                     too) or auto (the default of mcp: every call runs
                     unless a rule asks or denies); agenthost call runs
                     unless a deny rule matches
  --allow RULE, --ask RULE, --deny RULE
                     rules such as run_bash(git status*), write_file(src/**)
                     or mcp:github (repeatable; deny beats ask, ask beats
                     allow; see docs/permissions.md)
  --audit FILE       append one JSON line per tool call to FILE
  --dev-profile MODE  on (default): a sandboxed process that runs programs
                     (run_bash's commands) reads the home directory's
                     toolchains and tool configuration, and writes caches of
                     the workspace's own; off: its grants alone
  --profile-read PATH
                     more for such a process to read and execute (repeatable)
  --profile-cache VAR
                     point the variable VAR of such a process at a directory
                     of the workspace's cache (repeatable: CARGO_TARGET_DIR,
                     GRADLE_USER_HOME, ...)
  --secret PATH      one more path no sandboxed process reaches, whatever it
                     is granted (repeatable; ~/.ssh, ~/.aws and the others
                     docs/security.md lists always are)
  --version          print the version and exit (before the command)

Run agenthost COMMAND --help for a command's own flags.
`

// globals are the flags every command takes.
type globals struct {
	config    string
	plugins   string
	roots     listFlag
	enable    listFlag
	disable   listFlag
	logLevel  string
	lock      string
	pluginEnv listFlag
	insecure  bool

	eager       bool
	cacheDir    string
	deferTools  string // "" when neither the command line nor the file gives it
	idleTimeout time.Duration
	sandbox     string
	grants      listFlag
	devProfile  string
	profileRead listFlag
	caches      listFlag
	secrets     listFlag

	approval string
	allow    listFlag
	ask      listFlag
	deny     listFlag
	audit    string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", g.config, "read the configuration `FILE` alone (- for none; default agenthost/config.json in the user config directory, then ./agenthost.json)")
	fs.StringVar(&g.plugins, "plugins", g.plugins, "the plugins `DIR`ectory (default the configuration's, else $AGENTHOST_PLUGINS)")
	fs.Var(&g.roots, "root", "a workspace root `DIR` (repeatable; default the current directory)")
	fs.Var(&g.enable, "enable", "enable the tool `NAME`, or those a glob, mcp:SERVER or mcp:SERVER/GLOB matches (repeatable)")
	fs.Var(&g.disable, "disable", "disable the tool `NAME`, or those a glob, mcp:SERVER or mcp:SERVER/GLOB matches (repeatable)")
	fs.StringVar(&g.deferTools, "defer-tools", g.deferTools, "defer the MCP servers' tools past this many `TOKENS` (default 10000; 0: always; off: never)")
	fs.StringVar(&g.logLevel, "log-level", g.logLevel, "log `LEVEL`: trace, debug, info, warn or error")
	fs.StringVar(&g.lock, "lock", g.lock, "the lock `FILE` (default agenthost.lock in the plugins directory)")
	fs.Var(&g.pluginEnv, "plugin-env", "pass the environment variable `NAME` to plugins (repeatable)")
	fs.BoolVar(&g.insecure, "allow-insecure-plugins", g.insecure, "load plugin binaries that another user could have planted or replaced")
	fs.BoolVar(&g.eager, "eager", g.eager, "start every plugin at load, in parallel, instead of on first use")
	fs.StringVar(&g.cacheDir, "cache-dir", g.cacheDir, "where plugin descriptions are cached (`DIR`; - for none)")
	fs.DurationVar(&g.idleTimeout, "idle-timeout", g.idleTimeout, "stop a plugin after this `DURATION` without calls (0: never)")
	fs.StringVar(&g.sandbox, "sandbox", g.sandbox, "confine plugins: auto, require or off (`MODE`)")
	fs.Var(&g.grants, "grant", "grant `PLUGIN=ITEM[,ITEM...]`: network, exec, session, asked, read:PATH, write:PATH (repeatable)")
	fs.StringVar(&g.devProfile, "dev-profile", g.devProfile, "the development profile of processes that run programs: on or off (`MODE`)")
	fs.Var(&g.profileRead, "profile-read", "more for processes that run programs to read and execute (`PATH`, repeatable)")
	fs.Var(&g.caches, "profile-cache", "point the variable `VAR` of processes that run programs into the workspace's cache (repeatable)")
	fs.Var(&g.secrets, "secret", "one more `PATH` no sandboxed process reaches (repeatable)")
	fs.StringVar(&g.approval, "approval", g.approval, "what a call no rule decides does: ask, edits or auto (`MODE`; default ask for chat, auto for mcp)")
	fs.Var(&g.allow, "allow", "let calls the `RULE` matches run without asking (repeatable)")
	fs.Var(&g.ask, "ask", "ask before calls the `RULE` matches (repeatable)")
	fs.Var(&g.deny, "deny", "deny calls the `RULE` matches (repeatable)")
	fs.StringVar(&g.audit, "audit", g.audit, "append a record of every call to `FILE` (JSON lines)")
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// command is one sub-command: it adds its own flags to fs and runs with
// the registry built from the global flags.
type command struct {
	usage string
	// details, if set, is printed after the flags in --help.
	details string
	flags   func(fs *flag.FlagSet)
	// prepare, if set, checks the command's flags before the plugins
	// start.
	prepare func() error
	// noRegistry, if set, says whether the command runs with these
	// arguments without the registry: no plugin starts, and env.registry
	// is nil.
	noRegistry func(args []string) bool
	run        func(ctx context.Context, env *env, args []string) error
	// approval is the command's approval mode unless --approval says
	// otherwise; "" runs the calls a person types (agenthost call):
	// only deny rules stop them.
	approval policy.Mode
}

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	registry       *host.ToolRegistry
	// pluginsDir and lockFile are the plugins directory and the --lock
	// flag.
	pluginsDir, lockFile string
	// guard is the policy every call of the registry passes.
	guard  *policy.Guard
	logger hclog.Logger
	// config is the configuration read.
	config *config.File
}

func commands() map[string]*command {
	return map[string]*command{
		"tools":   toolsCommand(),
		"schemas": schemasCommand(),
		"call":    callCommand(),
		"plugins": pluginsCommand(),
		"chat":    chatCommand(),
		"mcp":     mcpCommand(),
		"trust":   trustCommand(),
	}
}

// run is the whole program, testable: main only adds the process's
// stdio, signals and exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{plugins: os.Getenv("AGENTHOST_PLUGINS"), logLevel: "warn", idleTimeout: host.DefaultIdleTimeout, sandbox: "auto"}
	root := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	root.SetOutput(io.Discard)
	g.register(root)
	showVersion := versionFlag(root)
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return nil
		}
		return usagef("%v", err)
	}
	if *showVersion {
		return printVersion(stdout)
	}
	if root.NArg() == 0 {
		return usagef("no command given")
	}
	name := root.Arg(0)
	if name == "help" {
		fmt.Fprint(stdout, usageText)
		return nil
	}
	cmd, ok := commands()[name]
	if !ok {
		return usagef("unknown command %q", name)
	}

	fs := flag.NewFlagSet("agenthost "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if err := fs.Parse(root.Args()[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return nil
		}
		return usagef("%s: %v", name, err)
	}
	// The configuration fills in the flags the command line left out.
	given := map[string]bool{}
	root.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if name == "trust" && !given["config"] {
		// The file to trust is not read as configuration before it is.
		g.config, given["config"] = "-", true
	}
	cfg, err := loadConfig(g.config, given["config"])
	if err != nil {
		return err
	}
	if err := applyConfig(cfg, fs, given, name); err != nil {
		return err
	}

	level := hclog.LevelFromString(g.logLevel)
	if level == hclog.NoLevel {
		return usagef("unknown log level %q", g.logLevel)
	}
	if cmd.prepare != nil {
		if err := cmd.prepare(); err != nil {
			return err
		}
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "agenthost", Level: level, Output: stderr})

	dir, err := pluginsDir(g.plugins)
	if err != nil {
		return err
	}
	for _, root := range g.roots {
		if info, err := os.Stat(root); err != nil || !info.IsDir() {
			return usagef("--root %s: not a directory", root)
		}
	}
	mode, err := host.ParseSandboxMode(g.sandbox)
	if err != nil {
		return usagef("--sandbox: %v", err)
	}
	grants, err := config.ParseGrants(g.grants)
	if err != nil {
		return usagef("--grant: %v", err)
	}
	if err := config.CheckOnOff(g.devProfile); err != nil {
		return usagef("--dev-profile: %v", err)
	}
	profile := host.DevProfile{Off: g.devProfile == "off", Read: g.profileRead, Caches: g.caches, Secrets: g.secrets}
	for _, name := range g.caches {
		if !textsafe.IsEnvName(name) {
			return usagef("--profile-cache %s: not a variable name", name)
		}
	}
	deferTokens, err := config.ParseDeferTokens(g.deferTools)
	if err != nil {
		return usagef("--defer-tools: %v", err)
	}
	if name == "mcp" && g.deferTools == "" {
		// An MCP client offers the tools as it sees fit (Claude Code
		// searches them itself), and every client of the server shares
		// one registry: what one loads would change every client's list.
		deferTokens = -1
	}
	preview := &callPreview{}
	guard, err := newGuard(cfg, g, cmd, logger, preview.preview)
	if err != nil {
		return err
	}
	for _, note := range cfg.Notes {
		logger.Warn(note)
	}
	cmdEnv := &env{stdin: stdin, stdout: stdout, stderr: stderr, pluginsDir: dir, lockFile: g.lock, guard: guard, logger: logger, config: cfg}
	if cmd.noRegistry != nil && cmd.noRegistry(fs.Args()) {
		return cmd.run(ctx, cmdEnv, fs.Args())
	}
	interceptors := []host.Interceptor{guard.Intercept}
	if g.audit != "" {
		rec, err := audit.Open(g.audit, &audit.Options{Logger: logger})
		if err != nil {
			return err
		}
		defer rec.Close()
		// Outermost: the record sees what the policy decided.
		interceptors = append([]host.Interceptor{rec.Intercept}, interceptors...)
	}
	servers := cfg.MCPServers()
	opts := &host.Options{Interceptors: interceptors, Logger: logger, Roots: g.roots, LockFile: g.lock, PluginEnv: g.pluginEnv,
		Eager: g.eager, CacheDir: g.cacheDir, IdleTimeout: idleTimeoutOption(g.idleTimeout), AllowInsecurePlugins: g.insecure,
		Sandbox: mode, Grants: grants, MCPServers: servers, Profile: profile, DeferTokens: deferTokens}
	reg, err := host.NewDefaultToolRegistry(ctx, dir, opts)
	if errors.Is(err, os.ErrNotExist) && len(servers) > 0 && g.plugins == "" {
		// MCP servers alone are a configuration too: without a plugins
		// directory of its own choosing, the host serves their tools.
		logger.Info("no plugins directory; serving the MCP servers' tools", "dir", dir)
		reg = host.NewToolRegistry(opts)
		reg.LoadMCPServers(ctx, servers)
		err = nil
	}
	if err != nil {
		return pluginsDirError(dir, err)
	}
	defer reg.Close()
	preview.setRegistry(reg)
	for name := range grants {
		if server, ok := strings.CutPrefix(name, "mcp:"); ok {
			if !slices.ContainsFunc(servers, func(s host.MCPServer) bool { return s.Name == server }) {
				logger.Warn("a grant names no MCP server of the configuration", "server", server)
			}
		} else if !hasPlugin(reg.Plugins(), name) {
			logger.Warn("a grant names no plugin in the plugins directory", "plugin", name)
		}
	}
	if err := toggleTools(cfg, g.enable, g.disable, reg); err != nil {
		return err
	}
	cmdEnv.registry = reg
	// The audit record says which command a call came from; agenthost
	// mcp names each client in its place.
	ctx = host.WithCaller(ctx, "agenthost "+name)
	return cmd.run(ctx, cmdEnv, fs.Args())
}

// newGuard is the policy of the command's calls: the configuration's
// rules, then the flags', and the approval mode; preview shows a call
// asked about.
func newGuard(cfg *config.File, g *globals, cmd *command, logger hclog.Logger, preview func(context.Context, *policy.Request) string) (*policy.Guard, error) {
	p := cfg.Policy()
	for _, list := range []struct {
		flag   string
		effect policy.Effect
		rules  []string
	}{{"allow", policy.Allow, g.allow}, {"ask", policy.Ask, g.ask}, {"deny", policy.Deny, g.deny}} {
		for _, text := range list.rules {
			if err := p.Add(list.effect, text); err != nil {
				return nil, usagef("--%s %s: %v", list.flag, text, err)
			}
		}
	}
	opts := policy.Options{Mode: cmd.approval, Logger: logger, Preview: preview}
	if g.approval != "" {
		mode, err := policy.ParseMode(g.approval)
		if err != nil {
			return nil, usagef("--approval: %v", err)
		}
		opts.Mode = mode
	}
	if cmd.approval == "" {
		opts.Typed = true
	}
	return policy.NewGuard(p, opts), nil
}

// hasPlugin reports whether a plugin binary of that name (with or
// without the prefix) was found.
func hasPlugin(reports []host.SourceReport, name string) bool {
	for _, r := range reports {
		if base := filepath.Base(r.Path); base == name || base == host.PluginPrefix+name {
			return true
		}
	}
	return false
}

// pluginsDirHint says where the plugins directory comes from.
const pluginsDirHint = "(set --plugins or AGENTHOST_PLUGINS)"

// pluginsDirError explains a plugins directory that cannot be read.
func pluginsDirError(dir string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the plugins directory %s does not exist %s", textsafe.Name(dir), pluginsDirHint)
	}
	return fmt.Errorf("%w %s", err, pluginsDirHint)
}

// idleTimeoutOption maps --idle-timeout, where 0 means never, onto
// Options.IdleTimeout, where never is negative.
func idleTimeoutOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func printCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n", cmd.usage)
	fs.SetOutput(w)
	fs.PrintDefaults()
	if cmd.details != "" {
		fmt.Fprintf(w, "\n%s", cmd.details)
	}
}

// pluginsDir is the --plugins flag, else a "plugins" directory beside the
// executable.
func pluginsDir(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the plugins directory: %w (use --plugins)", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}
