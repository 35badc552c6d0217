package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/argcheck"
	"github.com/agenthost/agenthost/internal/structcheck"
	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/sdk"
)

// DefaultTimeout bounds a tool call whose tool has no timeout of its own.
const DefaultTimeout = 30 * time.Second

// Registration errors, for errors.Is.
var (
	// ErrToolExists: a tool of that name is registered already.
	ErrToolExists = errors.New("tool already exists")
	// ErrInvalidTool: the tool's name or schema is malformed.
	ErrInvalidTool = errors.New("invalid tool")
	// ErrToolNotFound: no tool of that name is registered.
	ErrToolNotFound = errors.New("tool not found")
)

// Options configure a [ToolRegistry]. The zero value works.
type Options struct {
	// ToolContext is the agent state that tools may ask for. It may be
	// set later with SetToolContext; nil means tools that ask get
	// sdk.ErrNoHostState.
	ToolContext ToolContext

	// Logger receives operator messages: plugins skipped, tools refused,
	// plugin output. Nil means hclog's default logger.
	Logger hclog.Logger

	// Timeout bounds every call that has no timeout of its own (see
	// SetTimeout). Zero means DefaultTimeout.
	Timeout time.Duration

	// PluginStartTimeout bounds a plugin's launch and handshake. Zero
	// means 10 seconds. An MCP server's StartupTimeout wins over it, and a
	// launcher that may download what it runs gets LauncherStartTimeout
	// when this is shorter.
	PluginStartTimeout time.Duration

	// Roots are the workspace roots: the directories that tools touching
	// files must stay inside (sdk.Roots). Relative roots are made
	// absolute; the first is where relative paths resolve. None means the
	// current directory; "/" opts out of confinement knowingly.
	Roots []string

	// CacheDir is where plugin descriptions are cached, so that a host
	// with a warm cache starts no plugin until one of its tools is
	// called. Empty means "agenthost/plugins" under the user's cache
	// directory; NoCache ("-") turns the cache off.
	CacheDir string

	// Eager starts every plugin at load, in parallel, instead of on the
	// first call of one of its tools; and an MCP server whose failure to
	// start is remembered (StartFailure), at once.
	Eager bool

	// IdleTimeout stops a plugin that has had no call for that long; its
	// next call starts it again. Zero means DefaultIdleTimeout; a
	// negative value never stops an idle plugin.
	IdleTimeout time.Duration

	// LockFile is the lock file that plugin binaries are checked against
	// (see WriteLockFile). Empty means agenthost.lock in the plugins
	// directory. While the file exists, a binary it does not list, or
	// whose SHA-256 differs, is refused before it is executed; without
	// it, every plugin binary runs.
	LockFile string

	// PluginEnv names the variables of the host's environment passed
	// through to plugins besides the allow-list (PATH, HOME, USER, LANG,
	// LC_*, TMPDIR, TZ, SHELL, TERM). No other variable reaches a plugin.
	PluginEnv []string

	// AllowInsecurePlugins loads plugin binaries that someone other than
	// the user and root could have planted or replaced: a plugins
	// directory, a binary or a lock file writable by others or owned by
	// another user (see InsecureError). Each is loaded with a warning.
	// Without it they are refused, with a message naming the file and the
	// fix.
	AllowInsecurePlugins bool

	// Profile is the development profile of processes granted exec, and
	// the secrets no sandboxed process reaches (see DevProfile).
	Profile DevProfile

	// Sandbox says how plugin processes are confined (see SandboxMode):
	// the zero value, SandboxAuto, confines each in a Landlock sandbox as
	// far as the kernel supports.
	Sandbox SandboxMode

	// Grants are what the user allows plugins beyond their defaults, by
	// plugin name: the binary's file name, with or without
	// "agenthost-plugin-" (see Grant and ParseGrant), or "mcp:NAME" for
	// an MCP server.
	Grants map[string]Grant

	// MCPServers are MCP servers whose tools NewDefaultToolRegistry
	// registers after the plugins' (see LoadMCPServers).
	MCPServers []MCPServer

	// DeferTokens is the size, in tokens (a schema's bytes over 4), past
	// which the enabled tools of the MCP servers whose Defer is DeferAuto
	// are deferred: EnabledSchemas offers the search tool find_tools in
	// their place, and a tool it finds is offered from then on. They are
	// deferred too while the enabled tools are more than 128, the most a
	// request to OpenAI may carry. Zero means DefaultDeferTokens; negative,
	// only the tools of servers whose Defer is DeferAlways are deferred.
	DeferTokens int

	// Interceptors are the steps every call passes through before its
	// tool runs, the first outermost (see Interceptor): a policy that
	// asks or denies, a record of the calls, tracing. Nothing that runs a
	// tool through the registry bypasses them.
	Interceptors []Interceptor
}

// DefaultIdleTimeout is how long a plugin may go without calls before it
// is stopped, unless Options.IdleTimeout says otherwise.
const DefaultIdleTimeout = 5 * time.Minute

// ToolRegistry holds the tools an agent may call, in registration order,
// each enabled or disabled, and runs them. It is safe for concurrent use.
//
// Execute never returns a Go error: a tool failure is text for the model
// (see Execute). Registration problems are Go errors for the programmer or
// operator.
type ToolRegistry struct {
	logger       hclog.Logger
	startTimeout time.Duration
	idleTimeout  time.Duration // 0: never
	eager        bool
	cache        *descCache
	lockFile     string
	pluginEnv    []string
	// allowInsecure: Options.AllowInsecurePlugins.
	allowInsecure bool
	sandbox       *sandboxConfig
	interceptors  []Interceptor

	mu      sync.RWMutex
	entries map[string]*entry
	order   []string
	toolCtx ToolContext
	// sessionFiles are the session files AllowSessionFile added.
	sessionFiles []string
	timeout      time.Duration
	roots        []string
	plugins      []*toolSource
	reports      []SourceReport
	isClosed     bool
	// chosen are the Enable and Disable calls made, in order, by what
	// they named (a tool, a glob, an MCP server): a source's tool that
	// comes later, or goes and comes back (an MCP server's
	// tools/list_changed), comes as the user left the tools so named.
	chosen []choice
	// deferTokens is Options.DeferTokens (-1: never); loaded are the
	// deferred tools offered since (found, or enabled by name); finder is
	// the search tool's entry (deferral.go), registered while tools are
	// held back; finderWarned: the warning that its name is taken was
	// logged.
	deferTokens  int
	loaded       map[string]bool
	finder       *entry
	finderWarned bool

	// catalog: the MCP servers' prompts and resources (mcpfeatures.go).
	catalog mcpCatalog

	// launcherStarts lets a few first starts of launchers run at once
	// (mcpstart.go).
	launcherStarts startGate

	// listeners are called after the tools change (OnChange).
	listenMu   sync.Mutex
	listeners  map[int]func()
	nextListen int

	// What sdk.Roots and sdk.HostState find in a call's context: roots
	// and r.state, made interface values once.
	rootsValue any
	stateValue any
}

type entry struct {
	tool   ExecutableTool
	schema ChatTool
	// params is the parameters schema resolved for validation; nil for a
	// tool whose plugin checks the arguments and whose schema is known to
	// resolve.
	params *jsonschema.Resolved
	ann    Annotations
	plugin string
	// source serves the tool; nil for an in-process tool.
	source  *toolSource
	enabled bool
	timeout time.Duration
	// inline: the tool returns when its context ends (it is served by a
	// plugin), so it runs on the caller's goroutine.
	inline bool
	// checked: the tool's plugin checks the arguments against the schema
	// itself, so the registry does not.
	checked bool
	// output is the tool's output schema (sdk.StructuredTool); nil for a
	// tool without structured results. outputSchema resolves it and
	// compiles its validator, once (outputResolver).
	output       json.RawMessage
	outputSchema func() (*structcheck.Validator, error)
}

// NewToolRegistry returns an empty registry. opts may be nil.
func NewToolRegistry(opts *Options) *ToolRegistry {
	if opts == nil {
		opts = &Options{}
	}
	r := &ToolRegistry{
		logger:       opts.Logger,
		startTimeout: opts.PluginStartTimeout,
		entries:      map[string]*entry{},
		toolCtx:      opts.ToolContext,
		timeout:      opts.Timeout,
		roots:        absRoots(opts.Roots),
		idleTimeout:  opts.IdleTimeout,
		eager:        opts.Eager,
		cache:        newDescCache(opts.CacheDir),
		lockFile:     opts.LockFile,
		pluginEnv:    opts.PluginEnv,

		allowInsecure: opts.AllowInsecurePlugins,
		interceptors:  slices.Clone(opts.Interceptors),
		deferTokens:   opts.DeferTokens,
	}
	switch {
	case r.deferTokens == 0:
		r.deferTokens = DefaultDeferTokens
	case r.deferTokens < 0:
		r.deferTokens = -1
	}
	r.rootsValue = r.roots
	r.stateValue = sdk.StateFunc(r.state)
	r.sandbox = &sandboxConfig{
		mode:   opts.Sandbox,
		grants: opts.Grants,
		roots:  r.roots,
		sessionFiles: func() []string {
			r.mu.RLock()
			tc := r.toolCtx
			files := slices.Clone(r.sessionFiles)
			r.mu.RUnlock()
			if tc != nil {
				files = append(files, tc.SessionContextFilePath())
			}
			return files
		},
		runDirOnce: sync.OnceValue(makeRunDir),
		launchers:  launcherRoot(opts.CacheDir),
		cacheDir:   opts.CacheDir,
		devProfile: opts.Profile,
	}
	switch {
	case r.idleTimeout == 0:
		r.idleTimeout = DefaultIdleTimeout
	case r.idleTimeout < 0:
		r.idleTimeout = 0
	}
	if r.logger == nil {
		r.logger = hclog.Default()
	}
	r.logger = safeLogger{r.logger}
	r.sandbox.logger = r.logger
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.startTimeout <= 0 {
		r.startTimeout = 10 * time.Second
	}
	return r
}

// absRoots makes workspace roots absolute and clean; none means the
// current directory.
func absRoots(roots []string) []string {
	if len(roots) == 0 {
		roots = []string{"."}
	}
	out := make([]string, 0, len(roots))
	for _, root := range roots {
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		out = append(out, filepath.Clean(root))
	}
	return out
}

// Roots returns the workspace roots, absolute.
func (r *ToolRegistry) Roots() []string {
	return slices.Clone(r.roots)
}

// SetToolContext sets the agent state that tools may ask for.
func (r *ToolRegistry) SetToolContext(tc ToolContext) {
	r.mu.Lock()
	r.toolCtx = tc
	r.mu.Unlock()
}

// Register adds a tool. It is enabled unless its annotations say opt-in.
//
// Register refuses a tool whose name does not match ^[a-zA-Z0-9_-]{1,64}$,
// whose schema names another function or has parameters that are not a
// JSON Schema object, and a tool whose name is taken.
func (r *ToolRegistry) Register(tool ExecutableTool) error {
	e, err := newEntry(tool)
	if err != nil {
		return err
	}
	return r.add(e)
}

func newEntry(tool ExecutableTool) (*entry, error) {
	name := tool.Name()
	if !toolcall.ValidName(name) {
		return nil, fmt.Errorf("%w: name %q must match ^[a-zA-Z0-9_-]{1,64}$", ErrInvalidTool, name)
	}
	schema := tool.Schema()
	if schema.Type != "function" {
		return nil, fmt.Errorf("%w: %s: schema type is %q, not \"function\"", ErrInvalidTool, name, schema.Type)
	}
	if schema.Function.Name != name {
		return nil, fmt.Errorf("%w: %s: schema describes function %q", ErrInvalidTool, name, schema.Function.Name)
	}
	pt, plugin := tool.(*sourceTool)
	var params *jsonschema.Resolved
	if !plugin || !pt.checksArgs || !pt.resolved {
		var err error
		params, err = resolveParameters(schema.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidTool, name, err)
		}
	}
	// else the schema is known to resolve, and the plugin checks the
	// arguments itself: the host never validates against it, and spares
	// resolving it (each tool of each plugin, at every start).
	ann := sdk.AnnotationsOf(tool)
	e := &entry{tool: tool, schema: schema, params: params, ann: ann, enabled: !ann.OptIn, timeout: max(ann.Timeout, 0)}
	e.output = sdk.OutputSchemaOf(tool)
	if e.output != nil && !plugin {
		// A plugin's was checked with its description (checkTyped).
		if err := checkOutputSchema(e.output); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidTool, name, err)
		}
	}
	e.outputSchema = outputResolver(e.output)
	if plugin {
		e.plugin, e.source = pt.proc.name, pt.proc
		e.inline = true
		e.checked = pt.checksArgs
	}
	return e, nil
}

// resolveParameters checks that raw is a JSON Schema for an object and
// prepares it for validation.
func resolveParameters(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, errors.New("no parameters schema")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parameters schema: %v", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("parameters schema has type %q, not \"object\"", s.Type)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("parameters schema: %v", err)
	}
	return resolved, nil
}

func (r *ToolRegistry) add(e *entry) error {
	name := e.tool.Name()
	r.mu.Lock()
	if _, dup := r.entries[name]; dup {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s (register it under a different name, such as %s_v2)", ErrToolExists, name, name)
	}
	if e.source != nil {
		r.applyChoicesLocked(e, name)
	}
	r.entries[name] = e
	r.order = append(r.order, name)
	r.mu.Unlock()
	r.changed()
	return nil
}

// Unregister removes a tool. Removing a tool that is not registered does
// nothing.
func (r *ToolRegistry) Unregister(name string) {
	r.mu.Lock()
	if _, ok := r.entries[name]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.entries, name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	r.mu.Unlock()
	r.changed()
}

// OnChange has f called after every change of the registry's tools: a
// tool registered, unregistered, enabled or disabled, a source loaded, or
// an MCP server's list of tools changed. f runs on the goroutine that
// made the change, after it, with no lock held; it should return soon
// (an MCP server announcing tools/list_changed to its clients, say). The
// returned function stops the calls.
func (r *ToolRegistry) OnChange(f func()) (stop func()) {
	r.listenMu.Lock()
	defer r.listenMu.Unlock()
	if r.listeners == nil {
		r.listeners = map[int]func(){}
	}
	id := r.nextListen
	r.nextListen++
	r.listeners[id] = f
	return func() {
		r.listenMu.Lock()
		delete(r.listeners, id)
		r.listenMu.Unlock()
	}
}

// changed registers or unregisters the search tool as the deferred tools
// need it, and calls the OnChange functions.
func (r *ToolRegistry) changed() {
	r.mu.Lock()
	r.reconcileLocked()
	r.mu.Unlock()
	r.listenMu.Lock()
	fs := make([]func(), 0, len(r.listeners))
	for _, f := range r.listeners {
		fs = append(fs, f)
	}
	r.listenMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Enable makes registered tools available to the model: the tool of that
// name, or every tool a pattern selects, as the permission rules write
// them: a glob over names (github_*), every tool of an MCP server
// (mcp:github), or those of its tools a glob matches (mcp:github/list_*,
// by the name a tool is registered under or the one its server gives
// it). A tool so enabled is offered even when its server's tools are
// deferred (see Options.DeferTokens). Enabling a tool served by a plugin
// that was disabled after repeated crashes also re-enables the plugin
// (see ResetPlugin).
//
// The registry remembers the choice: a tool of a source that it selects
// and that comes later (an MCP server's tools/list_changed) comes
// enabled. A name or pattern that selects no tool is ErrToolNotFound,
// unless it names an MCP server that failed to load.
func (r *ToolRegistry) Enable(name string) error { return r.choose(name, true) }

// Disable keeps tools registered but hides them from the model and
// refuses to run them: the tool of that name, or every tool a pattern
// selects (see Enable). The registry remembers the choice: a tool of a
// source that it selects and that comes later comes disabled.
func (r *ToolRegistry) Disable(name string) error { return r.choose(name, false) }

// update changes the entry of a registered tool.
func (r *ToolRegistry) update(name string, change func(*entry)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrToolNotFound, name)
	}
	change(e)
	return nil
}

// SetTimeout sets the deadline of every call of one tool, overriding the
// registry's default and the tool's own (Annotations.Timeout). Zero
// restores them.
func (r *ToolRegistry) SetTimeout(name string, d time.Duration) error {
	return r.update(name, func(e *entry) {
		if d <= 0 {
			d = max(e.ann.Timeout, 0)
		}
		e.timeout = d
	})
}

// EnabledSchemas returns the schemas of the enabled tools, in registration
// order: what a model request carries. While tools are deferred (see
// Options.DeferTokens) it leaves them out and offers find_tools, whose
// description lists them, in their place.
func (r *ToolRegistry) EnabledSchemas() []ChatTool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.offeredLocked()
}

// ToolNames returns the names of all registered tools, enabled or not, in
// registration order.
func (r *ToolRegistry) ToolNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// Tools describes every registered tool, in registration order.
func (r *ToolRegistry) Tools() []ToolInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	infos := make([]ToolInfo, 0, len(r.order))
	d := r.deferStateLocked()
	for _, name := range r.order {
		e := r.entries[name]
		infos = append(infos, ToolInfo{
			Name:         name,
			Title:        sdk.TitleOf(e.tool),
			OutputSchema: e.output,
			Description:  e.schema.Function.Description,
			Enabled:      e.enabled,
			Deferred:     r.holdsLocked(d, e, name),
			Annotations:  e.ann,
			Plugin:       e.plugin,
		})
	}
	return infos
}

// Tool returns a registered tool.
func (r *ToolRegistry) Tool(name string) (ExecutableTool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// HasTool reports whether a tool of that name is registered.
func (r *ToolRegistry) HasTool(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.entries[name]
	return ok
}

// IsToolEnabled reports whether a tool is registered and enabled.
func (r *ToolRegistry) IsToolEnabled(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return ok && e.enabled
}

// Execute runs a tool and returns what the model should read. Failures are
// text too, in exactly these forms:
//
//	Error: tool not found: NAME
//	Error: tool not available: NAME is disabled
//	Error executing NAME: MESSAGE
//
// The last covers a tool's own error, a panic, arguments that do not
// match the tool's schema (checked before the tool runs), the call's
// deadline, cancellation, and a plugin that died. Use [IsError] to tell
// failures from results.
//
// Every call has a deadline: the tool's timeout, else the registry's.
// While the call runs, the tool may ask for the registry's ToolContext
// through sdk.HostState.
//
// Execute returns the text alone: ExecuteResult returns a tool's
// structured result too.
func (r *ToolRegistry) Execute(ctx context.Context, name string, args json.RawMessage) string {
	return r.execute(ctx, name, args, false).Text
}

// execute runs a call: it finds the tool, checks the arguments, passes
// the call through the interceptors and runs it. The structured result
// of a tool that is not a typed sdk tool is asked for only when
// wantStructured is set (ExecuteResult).
func (r *ToolRegistry) execute(ctx context.Context, name string, args json.RawMessage, wantStructured bool) Result {
	// However the call ends, it no longer holds back the ones after it.
	// The signal is the caller's: calls made from within this one (a
	// preview an interceptor makes) do not give it.
	start, _ := ctx.Value(startKey{}).(*startSignal)
	if start != nil {
		ctx = context.WithValue(ctx, startKey{}, (*startSignal)(nil))
		defer start.fire()
	}
	r.mu.RLock()
	e, ok := r.entries[name]
	var enabled bool
	timeout := r.timeout
	if ok {
		enabled = e.enabled
		if e.timeout > 0 {
			timeout = e.timeout
		}
	}
	r.mu.RUnlock()
	switch {
	case !ok:
		return Result{Text: "Error: tool not found: " + toolcall.Bound(name, toolcall.MaxName), IsError: true}
	case !enabled:
		return Result{Text: "Error: tool not available: " + name + " is disabled", IsError: true}
	}
	fail := func(err error) Result { return Result{Text: failure(name, err), IsError: true} }

	args = sdk.NormalizeArgs(args)
	// JSON decoding would make U+FFFD of text that is not Unicode, in
	// whichever tool: refuse it here, naming the argument.
	if err := toolcall.CheckUnicode(args); err != nil {
		return fail(err)
	}
	call, err := prepare(e, args, wantStructured)
	if err != nil {
		return fail(err)
	}
	if err := r.checkRoots(ctx, e); err != nil {
		return fail(err)
	}
	return r.intercept(ctx, r.newCall(ctx, name, e, args), func(ctx context.Context, _ *Call) Result {
		if start != nil {
			start.fire()
		}
		o, err := r.run(ctx, call, e.inline, timeout)
		if err != nil {
			return fail(err)
		}
		if !wantStructured || e.output == nil {
			return Result{Text: o.result, Content: o.content}
		}
		if err := e.checkStructured(o.structured); err != nil {
			r.logger.Warn("failing a call whose structured result breaks the tool's output schema",
				"tool", name, "plugin", e.plugin, "error", err)
			return fail(err)
		}
		return Result{Text: o.result, Structured: o.structured, Content: o.content}
	})
}

// prepare checks a call's arguments, on the caller's goroutine, and
// returns the call to run. A tool that checks its own arguments against
// the schema it advertises does it once: a typed sdk tool here, a plugin
// tool that says so in its plugin. Any other is checked against the
// schema the registry resolved.
//
// The structured result of a tool that is not a typed sdk tool is asked
// for only when the caller wants it (ExecuteResult), so that a plugin
// makes and sends none for Execute, which would drop it.
func prepare(e *entry, args json.RawMessage, wantStructured bool) (call callFunc, err error) {
	defer func() {
		if p := recover(); p != nil {
			call, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	if p, ok := e.tool.(toolcall.Preparer); ok {
		f, err := p.PrepareCall(args)
		if err != nil {
			return nil, err
		}
		return textCall(f), nil
	}
	if !e.checked {
		if err := argcheck.Check(e.params, args); err != nil {
			return nil, err
		}
	}
	if st, ok := e.tool.(*sourceTool); ok {
		// A source's tool may answer with content parts as well.
		structured := wantStructured && e.output != nil
		return func(ctx context.Context) outcome { return st.executeContent(ctx, args, structured) }, nil
	}
	if st, ok := e.tool.(sdk.StructuredTool); ok && wantStructured && e.output != nil {
		return textCall(func(ctx context.Context) (string, json.RawMessage, error) { return st.ExecuteStructured(ctx, args) }), nil
	}
	tool := e.tool
	return func(ctx context.Context) outcome {
		text, err := tool.Execute(ctx, args)
		return outcome{result: text, err: err}
	}, nil
}

// callFunc runs a prepared call.
type callFunc func(ctx context.Context) outcome

// textCall is a call of a tool that answers with a text and a structured
// result.
func textCall(f func(context.Context) (string, json.RawMessage, error)) callFunc {
	return func(ctx context.Context) outcome {
		text, structured, err := f(ctx)
		return outcome{result: text, structured: structured, err: err}
	}
}

// failure is the text of a failed call. The message is cut to
// toolcall.MaxMessage bytes (on a UTF-8 boundary, with a marker saying how
// much was cut): whatever a tool answers, a failure costs the model a
// bounded number of tokens.
func failure(name string, err error) string {
	return "Error executing " + name + ": " + toolcall.Bound(err.Error(), toolcall.MaxMessage)
}

// IsError reports whether a result of Execute is one of its failure texts.
func IsError(result string) bool {
	return strings.HasPrefix(result, "Error: tool not found: ") ||
		strings.HasPrefix(result, "Error: tool not available: ") ||
		strings.HasPrefix(result, "Error executing ")
}

type outcome struct {
	result     string
	structured json.RawMessage
	content    []Content
	err        error
}

// run executes a prepared call under the deadline. An inline call runs on
// the caller's goroutine: it is one that returns when its context ends (a
// plugin call, over gRPC). Any other runs on a goroutine of its own, so
// that a tool ignoring its context is abandoned at the deadline: the
// caller gets the timeout, and the tool's goroutine finishes on its own.
func (r *ToolRegistry) run(ctx context.Context, call callFunc, inline bool, timeout time.Duration) (outcome, error) {
	// When the caller's deadline comes first, it is the one to report.
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < timeout {
			timeout = max(left, 0).Round(time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx = &callContext{Context: ctx, r: r}

	var o outcome
	finished := true
	if inline {
		o = protect(ctx, call)
	} else {
		w := waiters.Get().(chan outcome)
		go func() { w <- protect(ctx, call) }()
		select {
		case o = <-w:
			waiters.Put(w)
		case <-ctx.Done():
			// The tool's goroutine still holds w: it is not reused.
			finished = false
		}
	}
	if finished && o.err == nil {
		return o, nil
	}
	// A failure caused by the deadline or by cancellation says so, whatever
	// the tool made of it. The deadline counts once it has passed, even
	// before ctx says so: a plugin's end of the call, given the same
	// deadline, may end the call first (RST_STREAM CANCEL) when the
	// host's timer fires late.
	dl, _ := ctx.Deadline()
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded), ctxErr == nil && !time.Now().Before(dl):
		return outcome{}, fmt.Errorf("timed out after %s", timeout)
	case ctxErr != nil:
		return outcome{}, errors.New("canceled")
	}
	return outcome{}, o.err
}

// waiters are the channels on which calls' goroutines hand their outcome
// over, kept for reuse.
var waiters = sync.Pool{New: func() any { return make(chan outcome, 1) }}

// callContext is the context a tool runs in: the call's deadline and
// cancellation, with the registry's workspace roots (narrowed by
// WithRoots, when the caller's context asks) and state answering
// sdk.Roots and sdk.HostState.
type callContext struct {
	context.Context
	r *ToolRegistry
}

func (c *callContext) Value(key any) any {
	switch key.(type) {
	case toolcall.RootsKey:
		if asked, ok := c.Context.Value(clientRootsKey{}).(*clientRoots); ok {
			return asked.narrowed(c.r)
		}
		return c.r.rootsValue
	case toolcall.StateKey:
		if tc, ok := c.Context.Value(toolContextKey{}).(ToolContext); ok {
			return sdk.StateFunc(func(context.Context) (sdk.State, error) { return stateOf(tc), nil })
		}
		return c.r.stateValue
	}
	return c.Context.Value(key)
}

// protect runs call, turning a panic into its error.
func protect(ctx context.Context, call callFunc) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("panic: %v", p)}
		}
	}()
	return call(ctx)
}

// state answers sdk.HostState for the tools this registry runs.
func (r *ToolRegistry) state(context.Context) (sdk.State, error) {
	r.mu.RLock()
	tc := r.toolCtx
	r.mu.RUnlock()
	if tc == nil {
		return sdk.State{}, sdk.ErrNoHostState
	}
	return stateOf(tc), nil
}

func stateOf(tc ToolContext) sdk.State {
	return sdk.State{
		SystemPrompt:           tc.SystemPrompt(),
		SessionContext:         tc.SessionContext(),
		SessionContextFilePath: tc.SessionContextFilePath(),
	}
}

// WithToolContext returns a context whose calls' tools read tc as the
// agent state (sdk.HostState), instead of the registry's ToolContext: an
// Agent gives its own with each call, so that agents sharing a registry
// and its plugin processes never see each other's state.
func WithToolContext(ctx context.Context, tc ToolContext) context.Context {
	return context.WithValue(ctx, toolContextKey{}, tc)
}

type toolContextKey struct{}

// AllowSessionFile lets the plugins granted the session file (the
// session plugin's save_session_context) write path too: the session
// file of an agent that gives its state with each call
// (WithToolContext). A plugin running in a sandbox that does not allow
// its directory is replaced at its next call.
func (r *ToolRegistry) AllowSessionFile(path string) {
	if path == "" {
		return
	}
	r.mu.Lock()
	if !slices.Contains(r.sessionFiles, path) {
		r.sessionFiles = append(r.sessionFiles, path)
	}
	r.mu.Unlock()
}

// Close stops every plugin process the registry started, with their
// children, within a bounded time, and leaves the registry's plugin tools
// unable to run. Close is idempotent.
func (r *ToolRegistry) Close() error {
	r.mu.Lock()
	procs := r.plugins
	r.plugins = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.close)
	}
	wg.Wait()
	return nil
}
