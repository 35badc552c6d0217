package host

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agenthost/agenthost/host/internal/proc"
	"github.com/agenthost/agenthost/host/mcpsource"
	"github.com/agenthost/agenthost/internal/buildinfo"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

// MCPSourcePrefix starts the source name of an MCP server's tools
// (ToolInfo.Plugin, SourceReport.Path): "mcp:NAME".
const MCPSourcePrefix = "mcp:"

// LoadMCPServers registers the tools of each MCP server, in the order
// given, and reports what became of each (SourceReport.MCP is set).
//
// A server is a tool source like a plugin binary: its description is
// cached (keyed by its command, arguments, the names of its environment
// variables and the binary the command resolves to, or by its URL), so
// that with a warm cache nothing starts until one of its tools is
// called; it is started (or connected to) on the first call, stopped
// when idle, replaced after a crash under the same backoff and breaker,
// and stopped with its process group by Close. A server over stdio runs
// in the sandbox of a third-party plugin, plus its Grant, with the
// scrubbed environment of a plugin plus its Env.
//
// A server has StartupTimeout to start, by default
// Options.PluginStartTimeout, or LauncherStartTimeout for a launcher that
// may download what it runs (npx, uvx, ...); the first starts of
// launchers run three at a time. What an npx cut short left in the npm
// cache the host gives the server (a lock, packages half installed) is
// removed, and a start it failed is made again, once.
//
// A server that cannot be started, or whose tools cannot be listed, is
// skipped with a warning naming it and the reason; a server over stdio
// that failed to start is not started again for a while (StartFailure).
// A tool whose name a tool of another source holds (a built-in's
// read_file, say) is registered with the server's name as a prefix
// (filesystem_read_file), unless the server has a Prefix, and
// SourceReport.Renamed lists it; one line in the log says so for the
// server. A tool whose name is taken even so is refused with the
// registry's duplicate message. The rest load.
func (r *ToolRegistry) LoadMCPServers(ctx context.Context, servers []MCPServer) []SourceReport {
	l := newLoad(len(servers))
	procs, descs, errs, cached, launched := l.procs, l.descs, l.errs, l.cached, l.launched
	var wg sync.WaitGroup
	for i := range servers {
		srv := servers[i]
		srv.Args = slices.Clone(srv.Args)
		proc := newToolSource(mcpKind{&srv}, MCPSourcePrefix+srv.Name, r.logger, srv.startTimeout(r.startTimeout), r.idleTimeout)
		proc.grant = MergeGrants(srv.Grant, srv.defaultGrant(r.sandbox.launchers))
		proc.pluginEnv, proc.allowInsecure, proc.sandbox = r.pluginEnv, r.allowInsecure, r.sandbox
		proc.perms = r.sandbox.granted(proc.path, sdk.Permissions{}, proc.grant)
		proc.catalog = &r.catalog
		procs[i] = proc
		if errs[i] = validMCPName(srv.Name); errs[i] != nil {
			continue
		}
		if errs[i] = srv.checkArgs(); errs[i] != nil {
			continue
		}
		if errs[i] = srv.checkToolFilters(); errs[i] != nil {
			continue
		}
		id, err := srv.identity()
		if err != nil {
			errs[i] = err
			continue
		}
		proc.cacheID = id
		fresh := r.cache.lookupID(id)
		if fresh != nil && !r.eager {
			descs[i], cached[i] = fresh, true
			// Its first launch checks that the tools are still those.
			proc.recheck.Store(true)
			continue
		}
		if f := r.rememberedFailure(&srv, id, proc.startTimeout); f != nil {
			// It failed to start a moment ago: not again yet.
			errs[i] = f
			continue
		}
		launched[i] = true
		first := fresh == nil
		wg.Go(func() { descs[i], errs[i] = r.startAtLoad(ctx, proc, &srv, id, first) })
	}
	wg.Wait()

	left := r.filterLoad(l)
	reports := r.adoptAll(l, func(proc *toolSource) {
		// From now on the server's word that its tools changed counts;
		// before, its tools were being listed anyway.
		refresh := func() { r.refreshMCP(proc) }
		proc.toolsChanged.Store(&refresh)
		if proc.pendingRefresh.Load() {
			proc.onToolsChanged()
		}
	})
	r.recordLeftOut(l, reports, left)
	if len(servers) > 0 {
		r.changed()
	}
	return reports
}

// validMCPName checks a server's name: the key of its mcpServers entry.
func validMCPName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\\") || textsafe.Name(name) != name {
		return fmt.Errorf("the server name %s is not usable: it must be non-empty, printable and without slashes", textsafe.Name(name))
	}
	return nil
}

// transport is the server's transport: "stdio", "http" or "sse".
func (s *MCPServer) transport() string {
	switch {
	case s.Transport != "":
		return s.Transport
	case s.URL != "":
		return "http"
	}
	return "stdio"
}

// expanded is the server with ${VAR}, ${VAR:-default} and ${env:VAR}
// expanded from the host's environment.
func (s *MCPServer) expanded() (MCPServer, error) {
	out := *s
	var err error
	expand := func(field, v string) string {
		if err != nil {
			return v
		}
		var x string
		x, err = expandEnv(v)
		if err != nil {
			err = fmt.Errorf("%s: %w", field, err)
		}
		return x
	}
	out.Command = expand("command", s.Command)
	out.Dir = expand("cwd", s.Dir)
	out.URL = expand("url", s.URL)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = expand(fmt.Sprintf("args[%d]", i), a)
	}
	out.Env = expandMap("env", s.Env, expand)
	out.Headers = expandMap("headers", s.Headers, expand)
	out.OAuth.ClientID = expand("oauth.clientId", s.OAuth.ClientID)
	out.OAuth.ClientSecret = expand("oauth.clientSecret", s.OAuth.ClientSecret)
	return out, err
}

func expandMap(field string, m map[string]string, expand func(field, v string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = expand(field+"."+k, m[k])
	}
	return out
}

// expandEnv expands ${VAR}, ${VAR:-default} and ${env:VAR} in s; other
// dollar signs stay as they are. A variable that is not set, without a
// default, is an error naming it.
func expandEnv(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		name = strings.TrimPrefix(name, "env:")
		v, ok := os.LookupEnv(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("the environment variable %s is not set", textsafe.Name(name))
		}
	}
}

// identity is what identifies the server for the description cache: its
// transport and URL, or its command, the binary it resolves to (and what
// stat says of it), its arguments, working directory and the names of
// its environment variables, with what stat says of every argument that
// names a file (a script). A rebuilt binary, an updated script, another
// argument or another variable is another server; a secret's value is
// not part of it.
func (s *MCPServer) identity() (string, error) {
	x, err := s.expanded()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mcp\x00%s\x00", x.transport())
	if x.transport() != "stdio" {
		b.WriteString(x.URL)
		for _, k := range slices.Sorted(maps.Keys(x.Headers)) {
			fmt.Fprintf(&b, "\x00header %s", k)
		}
	} else {
		if x.Command == "" {
			return "", errors.New("it has neither a command nor a url")
		}
		path, err := lookCommand(x.Command, x.Dir)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s", x.Command, path, statKey(path), x.Dir)
		for _, a := range x.Args {
			fmt.Fprintf(&b, "\x00arg %s", a)
			p := a
			if !filepath.IsAbs(p) {
				p = filepath.Join(x.Dir, p)
			}
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
				fmt.Fprintf(&b, " %s", statKey(p))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x.Env)) {
			fmt.Fprintf(&b, "\x00env %s", k)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

// statKey is what stat says of the file at path, for a cache key.
func statKey(path string) string {
	st, err := statBinary(path)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%s %d %d %d %d %d", st.path, st.size, st.mtime, st.ctime, st.inode, st.device)
}

// lookCommand resolves a server's command: a name without a slash in
// PATH, a relative path against dir.
func lookCommand(command, dir string) (string, error) {
	if !strings.Contains(command, "/") {
		path, err := exec.LookPath(command)
		if err != nil {
			return "", fmt.Errorf("the command %s is not found in PATH", textsafe.Name(command))
		}
		return filepath.Abs(path)
	}
	if !filepath.IsAbs(command) {
		command = filepath.Join(dir, command)
	}
	path, err := filepath.Abs(command)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the command %s: %w", textsafe.Name(command), errors.Unwrap(err))
	}
	return path, nil
}

// launchMCP starts the server (or, over HTTP, connects to it) and
// completes MCP's handshake within startTimeout.
func (p *toolSource) launchMCP(server *MCPServer) (*instance, error) {
	srv, err := server.expanded()
	if err != nil {
		return nil, err
	}
	ctx, cancel := p.bounded(p.startTimeout)
	defer cancel()
	opts := mcpsource.Options{Name: "agenthost", Version: buildinfo.Version(), Logger: p.logger, OnToolsChanged: p.onToolsChanged,
		// A list that could never load is not read past what shows it.
		MaxTools: MaxToolsPerPlugin, MaxListBytes: maxToolListBytes}
	p.mcpOptions(&opts)
	perms := p.permissions()
	inst := &instance{perms: perms}
	switch srv.transport() {
	case "http", "sse":
		t := mcpsource.HTTPAuth(srv.URL, srv.Headers, srv.oauth())
		if srv.transport() == "sse" {
			t = mcpsource.SSEAuth(srv.URL, srv.Headers, srv.oauth())
		}
		inst.mcp, err = mcpsource.Connect(ctx, t, opts)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", textsafe.Name(srv.URL), handshakeError(ctx, err, p.startTimeout))
		}
		inst.link = mcpLink{}
		p.mcpStarted(inst)
		p.launched()
		return inst, nil
	case "stdio":
	default:
		return nil, fmt.Errorf("unknown transport %s (want stdio, http or sse)", textsafe.Name(srv.Transport))
	}

	path, err := lookCommand(srv.Command, srv.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := openBinary(path, nil, p.allowInsecure)
	if err != nil {
		return nil, err
	}
	defer bin.close()
	exe, extra, err := bin.execPath(false)
	if err != nil {
		return nil, err
	}
	prof := p.sandbox.profile(perms)
	policy, err := p.sandbox.policy(bin, perms, p.sandbox.limits(p.path, p.grant), prof)
	if err != nil {
		return nil, err
	}
	env := proc.Env(p.pluginEnv)
	if policy != nil && prof != nil {
		env = append(env, prof.env...)
	}
	if dir, vars := server.launcherDir(p.sandbox.launchers); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making its launcher's directory: %w", err)
		}
		for _, kv := range vars {
			_, v, _ := strings.Cut(kv, "=")
			if err := os.MkdirAll(v, 0o700); err != nil {
				return nil, fmt.Errorf("making its launcher's directory: %w", err)
			}
		}
		env = append(env, vars...)
	}
	env = append(env, server.browserEnv()...)
	if err := server.makeOwnDirs(); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(srv.Env)) {
		env = append(env, k+"="+srv.Env[k])
	}
	cmd := &exec.Cmd{Path: exe, Args: append([]string{srv.Command}, srv.Args...), Dir: srv.Dir, Env: env, ExtraFiles: extra}
	r, err := proc.NewRunner(p.logger, cmd, path)
	if err != nil {
		return nil, err
	}
	r.Policy = policy
	stdin, err := r.OpenStdin()
	if err != nil {
		r.ClosePipes()
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		stdin.Close()
		return nil, err
	}
	inst.runner = r
	stderr := r.Stderr()
	p.life.Go(func() { logStderr(p, stderr) })
	opts.Roots = srv.mcpRoots(p.sandbox.roots, perms)
	inst.mcp, err = mcpsource.Connect(ctx, mcpsource.Stdio(r.Stdout(), stdin), opts)
	if err != nil {
		stdin.Close()
		err = p.mcpStartError(ctx, inst, err)
		inst.Stop(true)
		return nil, err
	}
	inst.link = mcpLink{}
	p.mcpStarted(inst)
	p.launched()
	return inst, nil
}

// launched is called after each launch: a launch after the tools were
// registered (they came from the cache, or from a process that crashed
// or was stopped since, whose list may have changed while it ran) lists
// them again, in the background, and brings the registry and the cache
// up to date if they changed.
func (p *toolSource) launched() {
	if p.recheck.CompareAndSwap(true, false) || p.toolsChanged.Load() != nil {
		p.onToolsChanged()
	}
}

// logStderr logs what an MCP server writes to its stderr, line by line,
// at debug level: servers write their banners and logs there.
func logStderr(p *toolSource, stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			p.logger.Debug(line)
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
}

// mcpStartError explains a handshake that failed: the process exited
// (with its last words, and the grant that would allow what the sandbox
// refused it), did not answer in time, or answered wrong.
func (p *toolSource) mcpStartError(ctx context.Context, inst *instance, err error) error {
	select {
	case <-inst.runner.Done():
	case <-time.After(250 * time.Millisecond):
	}
	if msg, dead := inst.runner.StartupExit(); dead {
		if hint := p.sandboxHint(inst, inst.runner.StderrLines()); hint != "" {
			msg += hint
		} else if inst.runner.Policy != nil {
			msg += "; if it needs more than the sandbox allows, see agenthost plugins, and grant it in its configuration"
		}
		return errors.New(msg)
	}
	return handshakeError(ctx, err, p.startTimeout)
}

// handshakeError words a failed MCP handshake.
func handshakeError(ctx context.Context, err error, timeout time.Duration) error {
	if ctx.Err() != nil {
		return fmt.Errorf("it did not complete the MCP handshake within %s (\"startupTimeout\" in its mcpServers entry, in seconds, gives it longer)", timeout)
	}
	return fmt.Errorf("the MCP handshake failed: %w", err)
}

// describeMCP asks the server for its tools.
func (p *toolSource) describeMCP(ctx context.Context) (*description, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(inst)
	tools, err := inst.mcp.Tools(ctx)
	if err != nil {
		return nil, p.mcpCallError(ctx, inst, err)
	}
	return mcpDescription(inst.mcp, tools), nil
}

// mcpDescription is an MCP server's list of tools as the host reads a
// source's description.
func mcpDescription(s *mcpsource.Session, tools []mcpsource.Tool) *description {
	name, version, _ := s.Server()
	desc := &description{PluginName: name, PluginVersion: version, MCP: featuresOf(s.Features())}
	for _, t := range tools {
		text := t.Description
		if text == "" {
			text = t.Title
		}
		desc.Tools = append(desc.Tools, toolSpec{
			Name:        t.Name,
			Description: text,
			Parameters:  nonEmpty(t.InputSchema),
			Title:       t.Title,
			Output:      nonEmpty(t.OutputSchema),
			ReadOnly:    t.ReadOnly,
			Destructive: t.Destructive,
			Idempotent:  t.Idempotent,
			OpenWorld:   t.OpenWorld,
		})
	}
	return desc
}

// callMCP runs one of the server's tools: its text, its structured
// content, which the registry checks against the tool's output schema
// (ToolRegistry.ExecuteResult), and its content parts (mcpContent). An
// error result is the call's error, in the server's words. The call's
// MCPPeer, if any, is in front of it.
func (p *toolSource) callMCP(ctx context.Context, tool string, args []byte) (string, []byte, []Content, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		return "", nil, nil, p.startFailure(ctx, err)
	}
	defer p.release(inst)
	res, err := inst.mcp.CallFor(ctx, tool, args, peerOf(ctx))
	if err != nil {
		return "", nil, nil, p.mcpCallError(ctx, inst, err)
	}
	if res.IsError {
		text := res.Text
		if strings.TrimSpace(text) == "" {
			text = "the tool reported an error without a message"
		}
		return "", nil, nil, errors.New(text + p.sandboxHint(inst, textLines(text)))
	}
	return res.Text, res.Structured, p.mcpContent(tool, res.Content), nil
}

// mcpCallError explains a failed request. The server's own error answer
// leaves it running; a session that ended means the server exited or the
// connection broke: the instance is thrown away, and the next call
// starts afresh. A request that ended at its deadline has the server
// pinged, in the background, for a hang. A request the host's Close cut
// short is errShuttingDown.
func (p *toolSource) mcpCallError(ctx context.Context, inst *instance, err error) error {
	if ctx.Err() != nil {
		if !inst.Dead() {
			p.probe(inst, errors.Is(ctx.Err(), context.DeadlineExceeded))
		}
		return ctx.Err()
	}
	if p.life.Closed() {
		// The host stopped the server under the request: no crash.
		return errShuttingDown
	}
	if authErr, ok := mcpAuthError(err); ok {
		// The server refused the call for want of authorization: it is
		// still there, and the error says what to do.
		return authErr
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && !inst.Dead() {
		return fmt.Errorf("%s answered: %s", p.what(), rpcErr.Message)
	}
	var broken *mcpsource.BrokenError
	if errors.As(err, &broken) {
		// What the server sent ended the session, and then (its stdin
		// closed) the server: the model learns the first, not the last.
		reason := strings.TrimPrefix(broken.Reason.Error(), "the server ")
		p.drop(inst, "it "+reason)
		p.logger.Warn(p.kind.noun()+" broke the session during a call; the next call starts it again", "error", err)
		return fmt.Errorf("%s %s, which ended its session; the next call starts it again", p.what(), reason)
	}
	return p.lostDuringCall(inst, err.Error(), err)
}

// onToolsChanged is the server's notifications/tools/list_changed.
func (p *toolSource) onToolsChanged() {
	f := p.toolsChanged.Load()
	if f == nil {
		// Its tools are not registered yet: LoadMCPServers lists them
		// again once they are.
		p.pendingRefresh.Store(true)
		return
	}
	p.life.Go(*f)
}

// refreshMCP lists the server's tools again, after it said they changed,
// and brings the registry and the cache up to date.
func (r *ToolRegistry) refreshMCP(proc *toolSource) {
	proc.refreshMu.Lock()
	defer proc.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), r.startTimeout)
	defer cancel()
	desc, err := proc.describeMCP(ctx)
	if errors.Is(err, errShuttingDown) {
		return // the host closed first: its tools no longer matter
	}
	if err != nil {
		r.logger.Warn("could not list the tools of an MCP server that said they changed", "server", proc.name, "error", err)
		return
	}
	r.cache.storeID(proc.cacheID, desc)
	r.replaceTools(proc, r.allowedMCP(proc, desc))
}

// replaceTools brings the registry's tools of proc in line with desc: a
// tool no longer listed is unregistered, a new one registered (enabled
// unless opt-in, or as the last Enable or Disable that names it left it), a
// changed one replaced keeping whether it is enabled and its timeout. A
// new name that is taken is renamed, or refused, as at load.
func (r *ToolRegistry) replaceTools(proc *toolSource, desc *description) {
	want := map[string]*entry{}
	remote := map[string]string{} // each tool's name at the server
	var order, refused []string
	for _, spec := range desc.Tools {
		t, err := r.sourceTool(proc, spec)
		var e *entry
		if err == nil {
			e, err = newEntry(t)
		}
		if err != nil {
			refused = append(refused, err.Error())
			r.logger.Warn("refusing tool", "path", proc.path, "tool", spec.Name, "reason", err)
			continue
		}
		if _, dup := want[t.Name()]; !dup {
			order = append(order, t.Name())
		}
		want[t.Name()] = e
		remote[t.Name()] = spec.Name
	}
	changed := false
	r.mu.Lock()
	for name, e := range r.entries {
		if e.source == proc && want[name] == nil {
			delete(r.entries, name)
			r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
			changed = true
		}
	}
	var tools []string
	for _, name := range order {
		e := want[name]
		old, exists := r.entries[name]
		if !exists {
			r.applyChoicesLocked(e, name)
			r.entries[name] = e
			r.order = append(r.order, name)
			tools = append(tools, name)
			changed = true
			continue
		}
		if old.source != proc {
			refused = append(refused, fmt.Sprintf("%v: %s is taken; %s may not take it", ErrToolExists, name, textsafe.Name(proc.name)))
			continue
		}
		tools = append(tools, name)
		if sameEntry(old, e) {
			continue
		}
		e.enabled = old.enabled
		if old.timeout != max(old.ann.Timeout, 0) {
			e.timeout = old.timeout // set by SetTimeout
		}
		r.entries[name] = e
		changed = true
	}
	var renamedTools []string
	for _, name := range tools {
		if name != proc.kind.toolName(remote[name]) {
			renamedTools = append(renamedTools, renamed(remote[name], name))
		}
	}
	for i := range r.reports {
		if r.reports[i].Path == proc.path && r.reports[i].Err == nil {
			r.reports[i].Tools, r.reports[i].Refused, r.reports[i].Renamed = tools, refused, renamedTools
		}
	}
	r.mu.Unlock()
	if changed {
		r.logger.Info("an MCP server's tools changed", "server", proc.name, "tools", len(tools))
		r.changed()
	}
}

// sameEntry reports whether two entries of one source describe the tool
// alike.
func sameEntry(a, b *entry) bool {
	return a.ann == b.ann && a.schema.Function.Description == b.schema.Function.Description &&
		string(a.schema.Function.Parameters) == string(b.schema.Function.Parameters) &&
		sdk.TitleOf(a.tool) == sdk.TitleOf(b.tool) && string(a.output) == string(b.output)
}
