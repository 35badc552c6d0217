package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/host/internal/lifecycle"
	"github.com/agenthost/agenthost/host/internal/proc"
	"github.com/agenthost/agenthost/host/mcpsource"
	"github.com/agenthost/agenthost/internal/goplugin"
	"github.com/agenthost/agenthost/sdk"
)

const (
	// stopTimeout bounds a plugin's graceful shutdown; then its process
	// group is killed.
	stopTimeout = 2 * time.Second
	// reapTimeout bounds the wait for a killed plugin to be reaped.
	reapTimeout = time.Second
)

var errShuttingDown = lifecycle.ErrShuttingDown

// toolSource is one tool source — a plugin binary, an attached plugin or
// an MCP server — and, while it runs, its instance: its process (or, for
// an MCP server over HTTP, its session). What differs between the kinds
// is how an instance is launched and spoken to (kind, plugin.go,
// mcp.go); the lifecycle is the same for all (lifecycle.Source).
//
// The process starts on the first call that needs it (or at load, when
// the description is not cached or the host is eager) and stops after
// idleTimeout without calls. A go-plugin client cannot be restarted, so
// a plugin that died, hung or idled out is replaced by a new instance on
// the next call. One launch is under way at a time: every caller that
// needs the plugin meanwhile waits for it, within its own deadline.
type toolSource struct {
	// life runs the source's instances, and the goroutines close waits
	// for.
	life *lifecycle.Source[*instance]

	path         string
	name         string
	logger       hclog.Logger
	startTimeout time.Duration
	idleTimeout  time.Duration // 0: never stop an idle plugin
	lock         *Lock         // nil: no lock file
	pluginEnv    []string      // variables passed through (Options.PluginEnv)
	// allowInsecure: a binary that others may write is run all the same
	// (Options.AllowInsecurePlugins).
	allowInsecure bool
	// sandbox confines the plugin's processes; nil: they run unconfined.
	sandbox *sandboxConfig
	// kind is what the source is: a plugin binary, an attached plugin or
	// an MCP server (sourceKind).
	kind sourceKind
	// grant is what the configuration grants the source.
	grant Grant
	// reattach is how an attached plugin is connected to, once
	// (AttachPlugin).
	reattach atomic.Pointer[plugin.ReattachConfig]
	// toolsChanged, once set (after the source's tools are registered),
	// is called when an MCP server says its list of tools changed; one
	// call at a time (refreshMu). cacheID is its key in the description
	// cache; recheck: its tools came from the cache, and its first launch
	// lists them again.
	toolsChanged atomic.Pointer[func()]
	refreshMu    sync.Mutex
	cacheID      string
	recheck      atomic.Bool
	// resolved names the plugin's tools whose parameters schema is known
	// to resolve (by checkedSchemas, now or when its description was
	// cached); set before its tools are registered.
	resolved map[string]bool
	// pendingRefresh: the server said its tools changed before they were
	// registered.
	pendingRefresh atomic.Bool
	// catalog is where an MCP server's prompts and resources are found
	// (mcpfeatures.go); nil for a plugin.
	catalog *mcpCatalog

	calls    sync.Map // call id → the call's context, for the Host service
	nextCall atomic.Uint64

	// perms is what the plugin's processes get (sandboxConfig.granted of
	// what it declares); until its description is known, the defaults.
	mu    sync.Mutex
	perms sdk.Permissions
}

// instance is one running instance of a source.
type instance struct {
	lifecycle.State

	// link is how the host holds the instance (nil until its launch got
	// that far); conn is a plugin's tool service, mcp an MCP server's
	// session. runner is the process, when the host started one.
	link   link
	conn   *goplugin.Client
	mcp    *mcpsource.Session
	runner *proc.Runner

	perms       sdk.Permissions // what the process was started with
	sessionDirs []string        // the session files' directories its sandbox allows

	// The Host stream (hostStream): opened once, ended by hostCancel
	// when the instance stops.
	hostOnce   sync.Once
	hostID     uint32
	hostMu     sync.Mutex
	hostCancel context.CancelFunc // nil until the stream is opened
	stopped    bool
}

var _ lifecycle.Instance = (*instance)(nil)

func newToolSource(kind sourceKind, path string, logger hclog.Logger, startTimeout, idleTimeout time.Duration) *toolSource {
	name := filepath.Base(path)
	p := &toolSource{
		kind: kind, path: path, name: name, logger: logger.Named(name),
		startTimeout: startTimeout, idleTimeout: idleTimeout,
	}
	p.life = lifecycle.New(lifecycle.Config[*instance]{
		Launch:      p.launch,
		Label:       p.what,
		Logger:      p.logger,
		IdleTimeout: idleTimeout,
		Stale:       p.sessionMoved,
		LaunchWait:  stopTimeout,
		// What it started in the background (an instance dropped
		// before, the logging of its output) ends too, each bounded:
		// nothing of the source runs, or logs, once Close returned.
		CloseWait: stopTimeout + reapTimeout + proc.DrainMax,
	})
	return p
}

// launch starts a new instance of the source. Once it is up, what its
// process wrote to stderr while it started no longer explains how it
// ends (lostDuringCall).
func (p *toolSource) launch() (*instance, error) {
	inst, err := p.kind.launch(p)
	if err == nil && inst.runner != nil {
		inst.runner.Ready()
	}
	return inst, err
}

// what names the source in messages: "plugin NAME" or "MCP server NAME".
func (p *toolSource) what() string { return p.kind.label(p) }

// call runs one of the source's tools: its text, its structured result
// (nil when it has none) and its content parts (nil when the text says
// all).
func (p *toolSource) call(ctx context.Context, tool string, args []byte, wantStructured bool) (string, []byte, []Content, error) {
	return p.kind.call(ctx, p, tool, args, wantStructured)
}

// describe asks the source what it serves.
func (p *toolSource) describe(ctx context.Context) (*description, error) {
	return p.kind.describe(ctx, p)
}

// startFailure words a call whose source could not be started.
func (p *toolSource) startFailure(ctx context.Context, err error) error {
	var off *lifecycle.DisabledError
	switch {
	case errors.As(err, &off):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s could not be started: %w", p.what(), err)
}

// permissions is what a process started now gets.
func (p *toolSource) permissions() sdk.Permissions {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.perms
}

// declared sets what the plugin gets from what it declares. A process
// started before, with the defaults, that would get something else is
// stopped: the next call starts one in the sandbox the plugin is due.
func (p *toolSource) declared(asked sdk.Permissions) {
	perms := p.sandbox.granted(p.path, asked, p.grant)
	p.mu.Lock()
	p.perms = perms
	p.mu.Unlock()
	// An attached plugin runs in no sandbox of the host's.
	if !p.kind.hostStarted() {
		return
	}
	p.life.Replace(func(inst *instance) bool {
		if samePermissions(inst.perms, perms) {
			return false
		}
		p.logger.Debug("restarting the plugin in the sandbox its description asks for", "permissions", perms.String())
		return true
	})
}

// sessionMoved reports an instance whose sandbox allows a session file
// that is no longer the one: its sandbox must follow.
func (p *toolSource) sessionMoved(inst *instance) bool {
	if !inst.perms.SessionFile || p.sandbox.mode == SandboxOff || slices.Equal(p.sandbox.sessionDirs(inst.perms), inst.sessionDirs) {
		return false
	}
	p.logger.Debug("the session file moved; restarting the plugin in a sandbox that allows it")
	return true
}

func samePermissions(a, b sdk.Permissions) bool {
	return a.Roots == b.Roots && slices.Equal(a.Read, b.Read) && slices.Equal(a.Write, b.Write) &&
		a.Network == b.Network && a.Exec == b.Exec && a.SessionFile == b.SessionFile
}

// instance returns the running instance, launching one if need be, and
// counts the caller in its calls: the caller must release it.
func (p *toolSource) instance(ctx context.Context) (*instance, error) { return p.life.Get(ctx) }

// release ends a call's use of inst.
func (p *toolSource) release(inst *instance) { p.life.Release(inst) }

// reset forgets the source's crashes and re-enables it.
func (p *toolSource) reset() { p.life.Reset() }

// drop forgets inst, counting a crash when reason is not empty, and stops
// it in the background.
func (p *toolSource) drop(inst *instance, reason string) { p.life.Drop(inst, reason) }

// probe checks that inst still answers after a call to it ended at its
// deadline or was canceled (lifecycle.Source.Probe).
func (p *toolSource) probe(inst *instance, deadline bool) { p.life.Probe(inst, deadline) }

// bounded returns a context that ends after d, or when the source is
// closed.
func (p *toolSource) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	return p.life.Bounded(d)
}

// lostDuringCall drops inst after a call that failed because the
// connection to it broke, and says why: its process exited (how, once it
// is reaped, which it is given a moment for, and its last words since it
// started, with the grant that would allow what the sandbox refused it),
// or it stopped answering (detail). The next call starts a new instance.
func (p *toolSource) lostDuringCall(inst *instance, detail string, err error) error {
	if inst.runner != nil {
		select {
		case <-inst.runner.Done():
		case <-time.After(250 * time.Millisecond):
		}
		if dead, _ := inst.runner.Exited(); dead {
			p.drop(inst, "exited during a call"+inst.ExitReason())
			p.logger.Warn(p.kind.noun()+" died during a call; the next call starts it again", "error", err)
			words := inst.runner.LastWords()
			if words != "" {
				words = ": " + words + p.sandboxHint(inst, inst.runner.StderrLines())
			}
			return fmt.Errorf("%s exited during the call%s%s", p.what(), inst.ExitReason(), words)
		}
	}
	p.drop(inst, "stopped answering: "+detail)
	p.logger.Warn(p.kind.noun()+" stopped answering during a call; the next call starts it again", "error", err)
	return fmt.Errorf("%s stopped answering: %s", p.what(), detail)
}

// close stops the running instance, if any, and refuses new ones; once it
// returns, nothing of the source runs.
func (p *toolSource) close() {
	if !p.life.Close() {
		p.logger.Warn(p.kind.noun() + " left work running past its close")
	}
}

// Lifecycle is the instance's bookkeeping (lifecycle.Instance).
func (inst *instance) Lifecycle() *lifecycle.State { return &inst.State }

// Dead reports whether the instance's process has ended.
func (inst *instance) Dead() bool {
	if inst.runner != nil {
		if dead, _ := inst.runner.Exited(); dead {
			return true
		}
	}
	return inst.link != nil && inst.link.ended(inst)
}

// Ping checks that the instance still answers.
func (inst *instance) Ping(ctx context.Context) error { return inst.link.ping(ctx, inst) }

// ExitReason is " (how it ended)", or "" when that is not known.
func (inst *instance) ExitReason() string {
	if inst.runner == nil {
		return ""
	}
	if dead, how := inst.runner.Exited(); dead && how != nil {
		return " (" + how.Error() + ")"
	}
	return ""
}

// Stopping reports whether the instance is being stopped.
func (inst *instance) Stopping() bool {
	inst.hostMu.Lock()
	defer inst.hostMu.Unlock()
	return inst.stopped
}

// Stop ends the instance within stopTimeout+reapTimeout, and its whole
// process group with it, taking any children the plugin started.
//
// A plugin with no call in flight has nothing left to finish, so its
// group is killed at once (as is a plugin that crashed or hung: force),
// and go-plugin's Kill then only cleans up after it: its shutdown request
// fails with the connection, and it returns once the process has been
// reaped and its output read. That spares the shutdown exchange and the
// plugin's own way out on every Close and idle stop. A plugin serving
// calls is asked to shut down, which ends them (see shutdown); a stopped
// (SIGSTOP) one is continued first, so that it can, and one that still
// does not exit in time is killed.
func (inst *instance) Stop(force bool) {
	inst.hostMu.Lock()
	inst.stopped = true
	if inst.hostCancel != nil {
		inst.hostCancel()
	}
	inst.hostMu.Unlock()
	r := inst.runner
	graceful := false
	if r != nil && r.PID() != 0 {
		// The instance is no longer handed to new calls (it was dropped
		// first), so once idle it stays idle.
		if force || (inst.link != nil && inst.link.idleKill() && inst.InFlight() == 0) {
			_ = r.KillGroup()
		} else {
			_ = r.SignalGroup(syscall.SIGCONT)
			graceful = true
		}
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		switch {
		case inst.link != nil:
			inst.link.close(inst, graceful)
		case r != nil:
			<-r.Done()
		}
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
	}
	if r == nil {
		return
	}
	_ = r.KillGroup()
	// Whichever way go-plugin's Kill went (it returns at once when it
	// could not ask the plugin to shut down), stop returns once the
	// process has been reaped, within reapTimeout.
	reap := time.NewTimer(reapTimeout)
	defer reap.Stop()
	select {
	case <-done:
	case <-reap.C:
		return
	}
	if r.PID() != 0 {
		select {
		case <-r.Done():
		case <-reap.C:
			return
		}
	}
	// Its output, read to the end or given up on (within proc.DrainMax), and
	// logged: nothing of it is logged once stop returned.
	select {
	case <-r.Finished():
	case <-time.After(proc.DrainGrace + proc.DrainMax):
	}
}
