package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/sdk"
)

// PluginPrefix starts the file name of every plugin binary.
const PluginPrefix = "agenthost-plugin-"

// SourceReport says what became of one tool source at start-up: a
// plugin binary, an attached plugin or an MCP server.
type SourceReport struct {
	// Path is the binary's path.
	Path string
	// Builtin says the binary is one of the plugins shipped with the host,
	// by its file name: its tools register before any other plugin's.
	Builtin bool
	// Name and Version are what the plugin says of itself.
	Name    string
	Version string
	// ProtocolMinor is the protocol minor version the plugin speaks.
	ProtocolMinor uint32
	// Tools are the tools registered from it, in its order.
	Tools []string
	// Refused explains each tool of the plugin that was not registered.
	Refused []string
	// Err says why the plugin was skipped; nil when it loaded.
	Err error
	// Cached says the tools came from the description cache.
	Cached bool
	// Launched says the plugin's process was started at load: its
	// description was not cached, or the registry is eager.
	Launched bool
	// Sandbox says what the plugin asked for, what it was granted, and
	// whether the kernel enforces it.
	Sandbox SandboxReport
	// MCP is the server's name when the source is an MCP server (see
	// LoadMCPServers): Path is then "mcp:NAME", and Name and Version are
	// what the server says of itself.
	MCP string
	// Remote says the MCP server is reached over HTTP: no process of it
	// runs here, and no sandbox applies.
	Remote bool
	// Renamed are the tools of an MCP server registered with its name as
	// a prefix because a tool of another source holds their names, each
	// as "NAME as SERVER_NAME" ("read_file as filesystem_read_file").
	Renamed []string
	// LeftOut are the tools of an MCP server that its configuration's
	// tools and disabledTools left out (MCPServer.Tools), as the server
	// names them.
	LeftOut []string
}

// PluginReport is the former name of SourceReport.
//
// Deprecated: use SourceReport.
type PluginReport = SourceReport

// LoadPlugins registers the tools of every plugin binary in dir — an
// executable regular file whose name starts with "agenthost-plugin-" —
// in the order of the binaries' names.
//
// A plugin's tools come from the description cache (Options.CacheDir)
// when it holds an entry for the very same binary: then no process is
// started, and the plugin starts on the first call of one of its tools.
// Otherwise, or with Options.Eager, the plugins are started in parallel
// and asked for their tools; they keep running, and their descriptions
// are cached, replacing an entry that says otherwise. A script's
// description is cached only when it lists what it depends on (see
// pluginDeps).
//
// A script is also granted, from its first start on, read access to the
// directory its file is in once symlinks are resolved (or to the
// outermost node_modules directory above it), where its interpreter finds
// what the script loads; not when that directory is, or holds, the home
// directory or the temporary directory. A binary gets nothing of the
// kind. The plugin's report (Sandbox.Granted) shows it.
//
// A binary that fails to start, exits, misses the handshake deadline or
// speaks another protocol version is skipped with a warning in the log
// naming the file and the reason; a tool that cannot be registered (its
// name is taken, say) is refused the same way. Either way the rest load.
// The error is for a directory that cannot be read at all.
//
// The registry owns the plugin processes from then on: Close stops them.
func (r *ToolRegistry) LoadPlugins(ctx context.Context, dir string) ([]SourceReport, error) {
	paths, err := findPlugins(dir)
	if err != nil {
		return nil, err
	}
	paths = registrationOrder(paths)
	lock, err := ReadLockFile(LockFilePath(dir, r.lockFile))
	if err != nil {
		return nil, err
	}
	trust := newTrustChecker()
	// A plugins directory or a lock file that others may write refuses
	// every binary.
	shared := trust.pluginsDir(dir)
	if shared == nil && lock != nil {
		shared = trust.lockFile(lock.Path)
	}
	if shared != nil && r.allowInsecure && errors.Is(shared, ErrInsecure) {
		r.logger.Warn("loading plugins that others may replace (allowed by the host's options)", "reason", shared)
		shared = nil
	}
	l := newLoad(len(paths))
	procs, descs, errs, cached, launched := l.procs, l.descs, l.errs, l.cached, l.launched
	var wg sync.WaitGroup
	for i, path := range paths {
		procs[i] = newToolSource(pluginKind{}, path, r.logger, r.startTimeout, r.idleTimeout)
		procs[i].lock, procs[i].pluginEnv, procs[i].allowInsecure = lock, r.pluginEnv, r.allowInsecure
		procs[i].sandbox = r.sandbox
		procs[i].grant = scriptGrant(path)
		procs[i].perms = r.sandbox.granted(path, sdk.Permissions{}, procs[i].grant)
		if errs[i] = r.trusted(trust, shared, path); errs[i] != nil {
			continue
		}
		if errs[i] = lock.Check(path); errs[i] != nil {
			continue
		}
		// A fresh cache entry saves the launch, or under --eager at least
		// hashing the binary again to store what it already holds. What
		// a script depends on is keyed before it runs, so that a change
		// made while it describes itself is seen next time.
		deps, uncached := r.cache.deps(path)
		var fresh *description
		var resolved map[string]bool
		if uncached == nil {
			fresh, resolved = r.cache.lookup(path, deps)
		} else if r.cache.dir != "" {
			r.logger.Debug("not caching the plugin's description", "path", path, "reason", uncached)
		}
		if fresh != nil {
			// What it declared decides the sandbox of every launch,
			// the eager one included.
			procs[i].declared(fresh.Permissions)
			procs[i].resolved = resolved
		}
		if fresh != nil && !r.eager {
			descs[i], cached[i] = fresh, true
			continue
		}
		launched[i] = true
		wg.Go(func() {
			// The launch has startTimeout; the slack lets its own error,
			// which says more, come first.
			dctx, cancel := context.WithTimeout(ctx, r.startTimeout+2*time.Second)
			defer cancel()
			descs[i], errs[i] = procs[i].describe(dctx)
			if errs[i] != nil || fresh != nil && descs[i].same(fresh) {
				// Eager, and the cache entry says what the plugin does.
				return
			}
			// Checked here, beside the launch, and recorded with the
			// description: adopt need not check them again, nor the next
			// host that finds it cached. Under --eager, an entry that no
			// longer says what the plugin does is replaced: what was
			// checked of it is no guide, and the next host without
			// --eager gets what the plugin says now.
			names := checkedSchemas(descs[i])
			procs[i].resolved = nameSet(names)
			if uncached == nil {
				r.cache.store(path, deps, descs[i], names)
			}
		})
	}
	wg.Wait()
	return r.adoptAll(l, nil), nil
}

// load is what one load (LoadPlugins, LoadMCPServers) learned of each of
// its sources: its description or why there is none, whether it came
// from the cache, whether a process was launched to learn it.
type load struct {
	procs    []*toolSource
	descs    []*description
	errs     []error
	cached   []bool
	launched []bool
}

func newLoad(n int) *load {
	return &load{
		procs: make([]*toolSource, n), descs: make([]*description, n), errs: make([]error, n),
		cached: make([]bool, n), launched: make([]bool, n),
	}
}

// adoptAll registers the tools of each source of l, in order, or reports
// why not, calls adopted (if set) for each source whose tools were
// registered, and records and returns the reports.
func (r *ToolRegistry) adoptAll(l *load, adopted func(*toolSource)) []SourceReport {
	reports := make([]SourceReport, len(l.procs))
	for i, proc := range l.procs {
		reports[i], _ = r.adopt(proc, l.descs[i], l.errs[i])
		reports[i].Cached = l.cached[i]
		reports[i].Launched = l.launched[i]
		r.logRenamed(reports[i])
		if reports[i].Err == nil && adopted != nil {
			adopted(proc)
		}
	}
	r.mu.Lock()
	r.reports = append(r.reports, reports...)
	r.mu.Unlock()
	return reports
}

// trusted checks that no one but the user and root can replace the
// binary at path (shared is the verdict on its directory and lock file).
// With Options.AllowInsecurePlugins, a binary that fails only that is
// loaded with a warning.
func (r *ToolRegistry) trusted(trust *trustChecker, shared error, path string) error {
	err := shared
	if err == nil {
		err = trust.binary(path)
	}
	if err != nil && r.allowInsecure && errors.Is(err, ErrInsecure) {
		r.logger.Warn("loading a plugin that others may replace (allowed by the host's options)", "path", path, "reason", err)
		return nil
	}
	return err
}

// ErrPluginNotFound: no loaded plugin has that name.
var ErrPluginNotFound = errors.New("plugin not found")

// ResetPlugin re-enables a plugin that was disabled after repeated
// crashes, and forgets its crashes: its next call starts it again at
// once. name is the binary's file name or the name the plugin gives
// itself. Enable of one of the plugin's tools does the same.
func (r *ToolRegistry) ResetPlugin(name string) error {
	r.mu.RLock()
	var found *toolSource
	for _, p := range r.plugins {
		if p.name == name {
			found = p
		}
	}
	for _, rep := range r.reports {
		if found == nil && rep.Name == name && rep.Err == nil {
			for _, p := range r.plugins {
				if p.path == rep.Path {
					found = p
				}
			}
		}
	}
	r.mu.RUnlock()
	if found == nil {
		return fmt.Errorf("%w: %s", ErrPluginNotFound, name)
	}
	found.reset()
	return nil
}

// refusal is one of a source's tools that the registry refused: its name,
// as the source gives it, and why.
type refusal struct {
	tool   string
	reason error
}

// adopt registers the tools of a described plugin, or reports why not,
// and returns the tools it refused.
func (r *ToolRegistry) adopt(proc *toolSource, desc *description, err error) (SourceReport, []refusal) {
	rep := SourceReport{Path: proc.path, Name: proc.name, Builtin: isBuiltin(proc.path) && proc.kind.hostStarted(), Sandbox: SandboxReport{Mode: r.sandbox.mode}}
	proc.kind.report(&rep)
	if err == nil && len(desc.Tools) > MaxToolsPerPlugin {
		err = fmt.Errorf("it declares %d tools, more than the %d a plugin may serve", len(desc.Tools), MaxToolsPerPlugin)
	}
	var asked sdk.Permissions
	if err == nil {
		asked = desc.Permissions
		if perr := asked.Validate(); perr != nil {
			err = fmt.Errorf("it declares invalid permissions: %w", perr)
		}
	}
	if err != nil {
		proc.close()
		rep.Err = err
		r.logger.Warn("skipping "+proc.kind.noun(), "path", proc.path, "reason", err)
		return rep, nil
	}
	if desc.PluginName != "" {
		rep.Name = toolcall.Bound(desc.PluginName, maxPluginLabel)
	}
	rep.Version = toolcall.Bound(desc.PluginVersion, maxPluginLabel)
	rep.ProtocolMinor = desc.ProtocolMinor
	proc.declared(asked)
	if !proc.kind.hostStarted() {
		rep.Sandbox = SandboxReport{Asked: asked, Mode: r.sandbox.mode,
			NotEnforced: []string{"the plugin was attached (AttachPlugin): the host did not start it"}}
	} else {
		rep.Sandbox = r.sandbox.report(proc.path, asked, proc.grant)
	}
	var refused []refusal
	for _, spec := range desc.Tools {
		tool, err := r.sourceTool(proc, spec)
		if err == nil {
			err = r.Register(tool)
		}
		if errors.Is(err, ErrToolExists) {
			err = r.duplicateError(tool.Name(), proc)
		}
		if err != nil {
			rep.Refused = append(rep.Refused, err.Error())
			r.logger.Warn("refusing tool", "path", proc.path, "tool", spec.Name, "reason", err)
			reason := err
			if lim, ok := errors.AsType[*limitError](err); ok {
				reason = lim.reason
			}
			refused = append(refused, refusal{tool: textsafe.Name(spec.Name), reason: reason})
			continue
		}
		rep.Tools = append(rep.Tools, tool.Name())
		if tool.Name() != proc.kind.toolName(spec.Name) {
			rep.Renamed = append(rep.Renamed, renamed(spec.Name, tool.Name()))
		}
	}
	if len(rep.Tools) == 0 {
		proc.close()
		rep.Err = errors.New("it serves no tool that could be registered")
		r.logger.Warn("skipping "+proc.kind.noun(), "path", proc.path, "reason", rep.Err)
		return rep, refused
	}
	r.mu.Lock()
	r.plugins = append(r.plugins, proc)
	r.mu.Unlock()
	return rep, refused
}

// Limits on what a plugin may declare. Each tool's schema and description
// travel with every model request that offers it, so they are bounded; a
// plugin that declares more is refused, with a warning, and the others
// load.
const (
	// MaxToolsPerPlugin bounds the tools one plugin may serve: OpenAI's
	// chat completions take at most 128 tools in a request.
	MaxToolsPerPlugin = 128
	// MaxSchemaSize bounds a tool's parameters schema, in bytes: some 30
	// times the largest built-in one.
	MaxSchemaSize = 64 << 10
	// MaxDescriptionSize bounds a tool's description, in bytes: some 10
	// times the longest built-in one.
	MaxDescriptionSize = 16 << 10
	// MaxToolTimeout bounds the deadline a plugin may declare for its
	// tool's calls (ToolSpec.timeout_ms): run_bash, which runs commands
	// for up to ten minutes, needs 605 seconds. A longer one is cut to
	// this, with a warning; the user's SetTimeout is not bounded.
	MaxToolTimeout = 11 * time.Minute

	// maxPluginLabel bounds the name and version a plugin gives itself.
	maxPluginLabel = 256

	// maxToolListBytes bounds an MCP server's list of tools as it is
	// read: what MaxToolsPerPlugin tools of the largest schemas and
	// descriptions take, with room for their names and titles.
	maxToolListBytes = MaxToolsPerPlugin*(MaxSchemaSize+MaxDescriptionSize) + 1<<20
)

// sourceTool checks what a plugin declares of one tool against the
// limits, and returns its client side.
func (r *ToolRegistry) sourceTool(proc *toolSource, spec toolSpec) (*sourceTool, error) {
	name := r.toolName(proc, spec.Name)
	if !toolcall.ValidName(name) {
		return nil, fmt.Errorf("%w: name %s must match ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, toolcall.Quote(name))
	}
	if n := len(spec.Parameters); n > MaxSchemaSize {
		return nil, &limitError{name, fmt.Errorf("its parameters schema is %d bytes, more than the %d allowed", n, MaxSchemaSize)}
	}
	if n := len(spec.Description); n > MaxDescriptionSize {
		return nil, &limitError{name, fmt.Errorf("its description is %d bytes, more than the %d allowed", n, MaxDescriptionSize)}
	}
	if err := checkTyped(spec); err != nil {
		return nil, &limitError{name, err}
	}
	t := newSourceTool(proc, name, spec)
	t.resolved = proc.resolved[spec.Name]
	if d := proc.kind.toolTimeout(); d > 0 {
		t.ann.Timeout = d
	}
	if declared := spec.Timeout; declared > MaxToolTimeout {
		t.ann.Timeout = MaxToolTimeout
		r.logger.Warn("capping the deadline a tool declares", "path", proc.path, "tool", name, "declared", declared, "cap", MaxToolTimeout)
	}
	return t, nil
}

// limitError is a tool refused for a declaration over one of the
// limits: reason says which, without the tool's name.
type limitError struct {
	tool   string
	reason error
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrInvalidTool, e.tool, e.reason)
}

func (e *limitError) Unwrap() error { return ErrInvalidTool }

// duplicateError explains why proc may not register a tool whose name is
// taken, naming whoever holds it.
func (r *ToolRegistry) duplicateError(name string, proc *toolSource) error {
	r.mu.RLock()
	holder := "an in-process tool"
	if e, ok := r.entries[name]; ok && e.plugin != "" {
		holder = textsafe.Name(e.plugin)
		if isBuiltin(e.plugin) {
			holder = "the built-in " + holder
		}
	}
	r.mu.RUnlock()
	return fmt.Errorf("%w: %s is served by %s; %s may not take it (%s)",
		ErrToolExists, name, holder, textsafe.Name(proc.name), proc.kind.renameHint(name))
}

// findPlugins lists the plugin binaries in dir, sorted by name: the
// executable regular files (or symlinks to one) whose name starts with
// PluginPrefix, except a script's list of dependencies.
func findPlugins(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the plugins directory: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), PluginPrefix) || strings.HasSuffix(e.Name(), depsSuffix) {
			// A .deps file is what a script plugin depends on, not a
			// plugin, whatever its mode.
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := os.Stat(path) // follows a symlink to the binary
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths, nil
}

// Plugins reports what became of every plugin binary loaded so far.
func (r *ToolRegistry) Plugins() []SourceReport {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]SourceReport(nil), r.reports...)
}
