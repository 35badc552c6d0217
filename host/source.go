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
	// hangGrace is how long after a call's deadline a plugin has to
	// answer a probe before it counts as hung and is killed.
	hangGrace = time.Second

	// A plugin that crashes maxCrashes times within crashWindow is
	// disabled until ResetPlugin, Enable of one of its tools, or a new
	// host. Between restarts it waits 0, backoffBase, 2×backoffBase, …
	// up to backoffMax.
	maxCrashes  = 5
	crashWindow = time.Minute
	backoffBase = 100 * time.Millisecond
	backoffMax  = 5 * time.Second
)

var errShuttingDown = errors.New("the host is shutting down")

// disabledError is the answer of a plugin disabled after repeated
// crashes.
type disabledError struct {
	name, last string
}

func (e *disabledError) Error() string {
	return fmt.Sprintf("%s disabled after repeated crashes (last: %s)", e.name, e.last)
}

// what names the source in messages: "plugin NAME" or "MCP server NAME".
func (p *toolSource) what() string { return p.kind.label(p) }

// call runs one of the source's tools: its text and its structured
// result (nil when it has none).
func (p *toolSource) call(ctx context.Context, tool string, args []byte, wantStructured bool) (string, []byte, error) {
	return p.kind.call(ctx, p, tool, args, wantStructured)
}

// describe asks the source what it serves.
func (p *toolSource) describe(ctx context.Context) (*description, error) {
	return p.kind.describe(ctx, p)
}

// startFailure words a call whose source could not be started.
func (p *toolSource) startFailure(ctx context.Context, err error) error {
	var off *disabledError
	switch {
	case errors.As(err, &off):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s could not be started: %w", p.what(), err)
}

// launch starts a new instance of the source.
func (p *toolSource) launch() (*instance, error) { return p.kind.launch(p) }

// toolSource is one tool source — a plugin binary or an MCP server — and,
// while it runs, its process (or, for an MCP server over HTTP, its
// session). The lifecycle is the same for both; what differs is how an
// instance is launched and spoken to (plugin.go, mcp.go).
//
// The process starts on the first call that needs it (or at load, when
// the description is not cached or the host is eager) and stops after
// idleTimeout without calls. A go-plugin client cannot be restarted, so
// a plugin that died, hung or idled out is replaced by a new instance on
// the next call. One launch is under way at a time: every caller that
// needs the plugin meanwhile waits for it, within its own deadline.
type toolSource struct {
	// bg are the source's goroutines, which close waits for.
	bg background

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

	calls    sync.Map // call id → the call's context, for the Host service
	nextCall atomic.Uint64

	mu sync.Mutex
	// perms is what the plugin's processes get (sandboxConfig.granted of
	// what it declares); until its description is known, the defaults.
	perms     sdk.Permissions
	inst      *instance
	start     *startAttempt // the launch under way, if any
	crashes   []time.Time   // within crashWindow
	lastCrash string
	disabled  bool
	closed    bool
	closing   chan struct{} // closed by close
}

// startAttempt is one launch, shared by every caller waiting for it.
type startAttempt struct {
	done chan struct{} // closed when inst or err is set
	inst *instance
	err  error
}

// instance is one running process of a plugin.
type instance struct {
	// link is how the host holds the instance (nil until its launch got
	// that far); conn is a plugin's tool service, mcp an MCP server's
	// session. runner is the process, when the host started one.
	link   link
	conn   *goplugin.Client
	mcp    *mcpsource.Session
	runner *proc.Runner

	inflight atomic.Int64 // calls using the instance; changed up under toolSource.mu
	lastUse  atomic.Int64 // unix nanoseconds when the last call ended
	idle     *time.Timer  // nil without an idle timeout
	probing  atomic.Bool  // a hang probe is under way
	dropped  bool         // no longer the plugin's instance; under toolSource.mu

	perms      sdk.Permissions // what the process was started with
	sessionDir string          // the session file's directory its sandbox allows

	// The Host stream (hostStream): opened once, ended by hostCancel
	// when the instance stops.
	hostOnce   sync.Once
	hostID     uint32
	hostMu     sync.Mutex
	hostCancel context.CancelFunc // nil until the stream is opened
	stopped    bool
}

func newToolSource(kind sourceKind, path string, logger hclog.Logger, startTimeout, idleTimeout time.Duration) *toolSource {
	name := filepath.Base(path)
	return &toolSource{
		kind: kind, path: path, name: name, logger: logger.Named(name),
		startTimeout: startTimeout, idleTimeout: idleTimeout,
		closing: make(chan struct{}),
	}
}

// declared sets what the plugin gets from what it declares. A process
// started before, with the defaults, that would get something else is
// stopped: the next call starts one in the sandbox the plugin is due.
func (p *toolSource) declared(asked sdk.Permissions) {
	perms := p.sandbox.granted(p.path, asked, p.grant)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perms = perms
	// An attached plugin runs in no sandbox of the host's.
	if inst := p.inst; inst != nil && p.kind.hostStarted() && !samePermissions(inst.perms, perms) {
		p.logger.Debug("restarting the plugin in the sandbox its description asks for", "permissions", perms.String())
		p.dropLocked(inst, "")
	}
}

func samePermissions(a, b sdk.Permissions) bool {
	return a.Roots == b.Roots && slices.Equal(a.Read, b.Read) && slices.Equal(a.Write, b.Write) &&
		a.Network == b.Network && a.Exec == b.Exec && a.SessionFile == b.SessionFile
}

// instance returns the running instance, launching one if there is none
// or the last one died, and counts the caller in its calls: the caller
// must release it. Callers arriving while a launch is under way (or
// waiting out its backoff) share it.
func (p *toolSource) instance(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, errShuttingDown
		}
		if inst := p.inst; inst != nil && inst.perms.SessionFile && p.sandbox.mode != SandboxOff && p.sandbox.sessionDir(inst.perms) != inst.sessionDir {
			// The session file moved: its sandbox must follow.
			p.logger.Debug("the session file moved; restarting the plugin in a sandbox that allows it")
			p.dropLocked(inst, "")
			continue
		}
		if inst := p.inst; inst != nil {
			if !inst.dead() {
				inst.inflight.Add(1)
				p.mu.Unlock()
				return inst, nil
			}
			p.logger.Warn("plugin exited; starting it again")
			p.dropLocked(inst, "exited"+inst.exitReason())
		}
		if p.disabled {
			err := &disabledError{name: p.what(), last: p.lastCrash}
			p.mu.Unlock()
			return nil, err
		}
		st := p.start
		if st == nil {
			st = &startAttempt{done: make(chan struct{})}
			p.start = st
			backoff := p.backoffLocked()
			p.bg.Go(func() { p.restart(st, backoff) })
		}
		p.mu.Unlock()
		select {
		case <-st.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if st.err != nil {
			return nil, st.err
		}
		p.mu.Lock()
	}
}

// release ends a call's use of inst; the last call out starts the idle
// clock.
func (p *toolSource) release(inst *instance) {
	inst.lastUse.Store(time.Now().UnixNano())
	if inst.inflight.Add(-1) == 0 && inst.idle != nil {
		inst.idle.Reset(p.idleTimeout)
	}
}

// restart launches a new instance after delay and hands it to the
// callers waiting on st.
func (p *toolSource) restart(st *startAttempt, delay time.Duration) {
	if delay > 0 {
		p.logger.Debug("waiting before starting the plugin again", "backoff", delay)
		select {
		case <-time.After(delay):
		case <-p.closing:
		}
	}
	var inst *instance
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	err := errShuttingDown
	if !closed {
		inst, err = p.launch()
	}

	p.mu.Lock()
	p.start = nil
	switch {
	case err == nil && p.closed:
		p.mu.Unlock()
		inst.stop(false)
		inst, err = nil, errShuttingDown
		p.mu.Lock()
	case err == nil:
		p.inst = inst
		if p.idleTimeout > 0 {
			inst.lastUse.Store(time.Now().UnixNano())
			inst.idle = time.AfterFunc(p.idleTimeout, func() { p.idleCheck(inst) })
		}
	case !errors.Is(err, errShuttingDown):
		p.crashedLocked("could not be started: " + err.Error())
	}
	st.inst, st.err = inst, err
	close(st.done)
	p.mu.Unlock()
}

// backoffLocked is the wait before the next launch: none after the first
// crash, then doubling.
func (p *toolSource) backoffLocked() time.Duration {
	n := len(p.crashes)
	if n <= 1 {
		return 0
	}
	return min(backoffBase<<(n-2), backoffMax)
}

// crashedLocked counts a crash, and disables the plugin when there have
// been too many.
func (p *toolSource) crashedLocked(reason string) {
	now := time.Now()
	kept := p.crashes[:0]
	for _, t := range p.crashes {
		if now.Sub(t) < crashWindow {
			kept = append(kept, t)
		}
	}
	p.crashes = append(kept, now)
	p.lastCrash = reason
	if len(p.crashes) >= maxCrashes && !p.disabled {
		p.disabled = true
		p.logger.Error("plugin disabled after repeated crashes; re-enable one of its tools or restart the host",
			"crashes", len(p.crashes), "within", crashWindow, "last", reason)
	}
}

// reset forgets the plugin's crashes and re-enables it.
func (p *toolSource) reset() {
	p.mu.Lock()
	p.crashes = nil
	p.lastCrash = ""
	p.disabled = false
	p.mu.Unlock()
}

// dropLocked forgets inst, counting a crash when reason is not empty, and
// stops it in the background.
func (p *toolSource) dropLocked(inst *instance, reason string) {
	if inst.dropped {
		return
	}
	inst.dropped = true
	if p.inst == inst {
		p.inst = nil
	}
	if reason != "" {
		p.crashedLocked(reason)
	}
	p.bg.Go(func() { inst.stop(reason != "") })
}

// drop is dropLocked for callers without the lock.
func (p *toolSource) drop(inst *instance, reason string) {
	p.mu.Lock()
	p.dropLocked(inst, reason)
	p.mu.Unlock()
}

// idleCheck stops inst if no call has used it for idleTimeout.
func (p *toolSource) idleCheck(inst *instance) {
	p.mu.Lock()
	if p.inst != inst || inst.dropped || inst.inflight.Load() > 0 {
		p.mu.Unlock()
		return
	}
	if left := p.idleTimeout - time.Since(time.Unix(0, inst.lastUse.Load())); left > 0 {
		inst.idle.Reset(left)
		p.mu.Unlock()
		return
	}
	p.logger.Debug("plugin idle; stopping it", "idle", p.idleTimeout)
	p.dropLocked(inst, "")
	p.mu.Unlock()
}

// probe checks, after a call to inst ended at its deadline (deadline) or
// was canceled, that the plugin still answers. One that does not answer
// within hangGrace is hung: its process group is killed, and the next
// call starts a new one. A tool that merely ignores its deadline leaves
// the plugin answering, and it is left alone. A plugin stopped meanwhile
// (the host closing, after a canceled command) is no hang.
func (p *toolSource) probe(inst *instance, deadline bool) {
	if !inst.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer inst.probing.Store(false)
		ctx, cancel := p.bounded(hangGrace)
		defer cancel()
		err := inst.ping(ctx)
		if err == nil || inst.dead() || p.stopped(inst) {
			return
		}
		after := "after a call was canceled"
		if deadline {
			after = "after a call's deadline"
		}
		p.logger.Warn("plugin did not answer "+after+"; killing it", "grace", hangGrace, "error", err)
		// Dropped first, so that no new call picks it up, then killed
		// (stop with force kills the group at once).
		p.drop(inst, fmt.Sprintf("stopped answering (no answer within %s %s)", hangGrace, after))
	}()
}

// lostDuringCall drops inst after a call that failed because the
// connection to it broke, and says why: its process exited (how, once it
// is reaped, which it is given a moment for), or it stopped answering
// (detail). The next call starts a new instance.
func (p *toolSource) lostDuringCall(inst *instance, detail string, err error) error {
	if inst.runner != nil {
		select {
		case <-inst.runner.Done():
		case <-time.After(250 * time.Millisecond):
		}
		if dead, _ := inst.runner.Exited(); dead {
			p.drop(inst, "exited during a call"+inst.exitReason())
			p.logger.Warn(p.kind.noun()+" died during a call; the next call starts it again", "error", err)
			return fmt.Errorf("%s exited during the call%s", p.what(), inst.exitReason())
		}
	}
	p.drop(inst, "stopped answering: "+detail)
	p.logger.Warn(p.kind.noun()+" stopped answering during a call; the next call starts it again", "error", err)
	return fmt.Errorf("%s stopped answering: %s", p.what(), detail)
}

// bounded returns a context that ends after d, or when the source is
// closed.
func (p *toolSource) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-p.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// stopped reports whether inst is no longer in use: the plugin was
// closed, or inst dropped (idle, replaced) or being stopped.
func (p *toolSource) stopped(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || inst.dropped {
		return true
	}
	inst.hostMu.Lock()
	defer inst.hostMu.Unlock()
	return inst.stopped
}

// dead reports whether the instance's process has ended.
func (inst *instance) dead() bool {
	if inst.runner != nil {
		if dead, _ := inst.runner.Exited(); dead {
			return true
		}
	}
	return inst.link != nil && inst.link.ended(inst)
}

// ping checks that the instance still answers.
func (inst *instance) ping(ctx context.Context) error { return inst.link.ping(ctx, inst) }

// exitReason is " (how it ended)", or "" when that is not known.
func (inst *instance) exitReason() string {
	if inst.runner == nil {
		return ""
	}
	if dead, how := inst.runner.Exited(); dead && how != nil {
		return " (" + how.Error() + ")"
	}
	return ""
}

// close stops the running instance, if any, and refuses new ones. A
// launch under way is waited for, within stopTimeout, and stopped.
func (p *toolSource) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	inst := p.inst
	p.inst = nil
	p.closed = true
	close(p.closing)
	st := p.start
	if inst != nil {
		inst.dropped = true
	}
	p.mu.Unlock()
	if st != nil {
		select {
		case <-st.done:
		case <-time.After(stopTimeout):
		}
	}
	if inst != nil {
		inst.stop(false)
	}
	// What it started in the background (an instance dropped before,
	// the logging of its output) ends too, each bounded: nothing of the
	// source runs, or logs, once Close returned.
	if !p.bg.wait(stopTimeout + reapTimeout + proc.DrainMax) {
		p.logger.Warn(p.kind.noun() + " left work running past its close")
	}
}

// stop ends the instance within stopTimeout+reapTimeout, and its whole
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
func (inst *instance) stop(force bool) {
	inst.hostMu.Lock()
	inst.stopped = true
	if inst.hostCancel != nil {
		inst.hostCancel()
	}
	inst.hostMu.Unlock()
	if inst.idle != nil {
		inst.idle.Stop()
	}
	r := inst.runner
	graceful := false
	if r != nil && r.PID() != 0 {
		// The instance is no longer handed to new calls (it was dropped
		// first), so once idle it stays idle.
		if force || (inst.link != nil && inst.link.idleKill() && inst.inflight.Load() == 0) {
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
