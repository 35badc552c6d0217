package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
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
	return fmt.Sprintf("plugin %s disabled after repeated crashes (last: %s)", e.name, e.last)
}

// pluginProcess is one plugin binary and, while it runs, its process.
//
// The process starts on the first call that needs it (or at load, when
// the description is not cached or the host is eager) and stops after
// idleTimeout without calls. A go-plugin client cannot be restarted, so
// a plugin that died, hung or idled out is replaced by a new instance on
// the next call. One launch is under way at a time: every caller that
// needs the plugin meanwhile waits for it, within its own deadline.
type pluginProcess struct {
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
	client *plugin.Client
	runner *groupRunner
	conn   *wire.Client

	inflight atomic.Int64 // calls using the instance; changed up under pluginProcess.mu
	lastUse  atomic.Int64 // unix nanoseconds when the last call ended
	idle     *time.Timer  // nil without an idle timeout
	probing  atomic.Bool  // a hang probe is under way
	dropped  bool         // no longer the plugin's instance; under pluginProcess.mu

	perms      sdk.Permissions // what the process was started with
	sessionDir string          // the session file's directory its sandbox allows

	hostOnce sync.Once
	hostID   uint32
	hostMu   sync.Mutex
	hostSrv  *grpc.Server // nil until the Host service is up
	stopped  bool
}

func newPluginProcess(path string, logger hclog.Logger, startTimeout, idleTimeout time.Duration) *pluginProcess {
	name := filepath.Base(path)
	return &pluginProcess{
		path: path, name: name, logger: logger.Named(name),
		startTimeout: startTimeout, idleTimeout: idleTimeout,
		closing: make(chan struct{}),
	}
}

// declared sets what the plugin gets from what it declares. A process
// started before, with the defaults, that would get something else is
// stopped: the next call starts one in the sandbox the plugin is due.
func (p *pluginProcess) declared(asked sdk.Permissions) {
	perms := p.sandbox.granted(p.path, asked)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perms = perms
	if inst := p.inst; inst != nil && !samePermissions(inst.perms, perms) {
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
func (p *pluginProcess) instance(ctx context.Context) (*instance, error) {
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
			err := &disabledError{name: p.name, last: p.lastCrash}
			p.mu.Unlock()
			return nil, err
		}
		st := p.start
		if st == nil {
			st = &startAttempt{done: make(chan struct{})}
			p.start = st
			go p.restart(st, p.backoffLocked())
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
func (p *pluginProcess) release(inst *instance) {
	inst.lastUse.Store(time.Now().UnixNano())
	if inst.inflight.Add(-1) == 0 && inst.idle != nil {
		inst.idle.Reset(p.idleTimeout)
	}
}

// restart launches a new instance after delay and hands it to the
// callers waiting on st.
func (p *pluginProcess) restart(st *startAttempt, delay time.Duration) {
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
func (p *pluginProcess) backoffLocked() time.Duration {
	n := len(p.crashes)
	if n <= 1 {
		return 0
	}
	return min(backoffBase<<(n-2), backoffMax)
}

// crashedLocked counts a crash, and disables the plugin when there have
// been too many.
func (p *pluginProcess) crashedLocked(reason string) {
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
func (p *pluginProcess) reset() {
	p.mu.Lock()
	p.crashes = nil
	p.lastCrash = ""
	p.disabled = false
	p.mu.Unlock()
}

// dropLocked forgets inst, counting a crash when reason is not empty, and
// stops it in the background.
func (p *pluginProcess) dropLocked(inst *instance, reason string) {
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
	go inst.stop(reason != "")
}

// drop is dropLocked for callers without the lock.
func (p *pluginProcess) drop(inst *instance, reason string) {
	p.mu.Lock()
	p.dropLocked(inst, reason)
	p.mu.Unlock()
}

// idleCheck stops inst if no call has used it for idleTimeout.
func (p *pluginProcess) idleCheck(inst *instance) {
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
func (p *pluginProcess) probe(inst *instance, deadline bool) {
	if !inst.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer inst.probing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), hangGrace)
		defer cancel()
		go func() {
			select {
			case <-p.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := inst.conn.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
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

// stopped reports whether inst is no longer in use: the plugin was
// closed, or inst dropped (idle, replaced) or being stopped.
func (p *pluginProcess) stopped(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || inst.dropped {
		return true
	}
	inst.hostMu.Lock()
	defer inst.hostMu.Unlock()
	return inst.stopped
}

// launch starts a new instance of the plugin. The binary is opened once:
// what is checked (who may write it, its SHA-256 against the lock) is
// what runs (see openedBinary). The plugin gets a scrubbed environment
// (pluginEnv): the host's own is not passed, only the allow-list and the
// variables of Options.PluginEnv, plus go-plugin's, which come last so
// that none passed through can override them.
func (p *pluginProcess) launch() (*instance, error) {
	bin, err := openBinary(p.path, p.lock, p.allowInsecure)
	if err != nil {
		return nil, err
	}
	defer bin.close() // the process has its own once it started
	exe, extra, err := bin.execPath(p.lock != nil)
	if err != nil {
		return nil, err
	}
	env := pluginEnv(p.pluginEnv)
	p.mu.Lock()
	perms := p.perms
	p.mu.Unlock()
	inst := &instance{perms: perms, sessionDir: p.sandbox.sessionDir(perms)}
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{}),
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			policy, err := p.sandbox.policy(bin, socketDir, perms)
			if err != nil {
				return nil, err
			}
			cmd.Path = exe
			cmd.Args = []string{p.path}
			cmd.ExtraFiles = extra
			if policy != nil {
				env = append(env, sandboxEnvValue(perms))
			}
			cmd.Env = slices.Concat(env, cmd.Env)
			r, err := newGroupRunner(l, cmd, p.path)
			if r != nil {
				r.policy = policy
			}
			inst.runner = r
			return r, err
		},
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     p.startTimeout,
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           quietLogger{p.logger},
	}
	inst.client = plugin.NewClient(cfg)
	rpc, err := inst.client.Client()
	if err != nil {
		err = launchError(err, inst, p.startTimeout)
		inst.stop(true)
		return nil, err
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		inst.stop(true)
		return nil, err
	}
	conn, ok := raw.(*wire.Client)
	if !ok {
		inst.stop(true)
		return nil, fmt.Errorf("unexpected plugin client %T", raw)
	}
	inst.conn = conn
	return inst, nil
}

// dead reports whether the instance's process has ended.
func (inst *instance) dead() bool {
	if inst.runner != nil {
		if dead, _ := inst.runner.exited(); dead {
			return true
		}
	}
	return inst.client.Exited()
}

// exitReason is " (how it ended)", or "" when that is not known.
func (inst *instance) exitReason() string {
	if inst.runner == nil {
		return ""
	}
	if dead, how := inst.runner.exited(); dead && how != nil {
		return " (" + how.Error() + ")"
	}
	return ""
}

// describe asks the plugin what it serves.
func (p *pluginProcess) describe(ctx context.Context) (*toolv1.DescribeResponse, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(inst)
	resp, err := inst.conn.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		return nil, p.callError(ctx, inst, err)
	}
	return resp, nil
}

// execute runs one of the plugin's tools.
func (p *pluginProcess) execute(ctx context.Context, tool string, args []byte) (string, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		var off *disabledError
		switch {
		case errors.As(err, &off):
			return "", err
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		return "", fmt.Errorf("plugin %s could not be started: %w", p.name, err)
	}
	defer p.release(inst)
	if len(args) > wire.MaxMessageSize {
		return "", errors.New(wire.ArgumentsTooLarge(len(args)))
	}
	callID := p.nextCall.Add(1)
	p.calls.Store(callID, ctx)
	defer p.calls.Delete(callID)

	resp, err := inst.conn.Execute(ctx, &toolv1.ExecuteRequest{
		Tool:           tool,
		Arguments:      args,
		HostServiceId:  inst.hostService(p),
		CallId:         callID,
		WorkspaceRoots: sdk.Roots(ctx),
	})
	if err != nil {
		return "", p.callError(ctx, inst, err)
	}
	if msg := resp.GetError(); msg != "" {
		return "", errors.New(msg)
	}
	return resp.GetResult(), nil
}

// callError explains a failed RPC. A broken connection means the plugin
// died: its instance is thrown away so that the next call starts afresh.
// A call that ended at its deadline has the plugin probed, in the
// background, for a hang.
func (p *pluginProcess) callError(ctx context.Context, inst *instance, err error) error {
	st, _ := status.FromError(err)
	// The plugin's end of the call keeps the same deadline, and may see it
	// pass a moment before this end does: then the deadline is the cause.
	if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil && st.Code() != codes.Unavailable && time.Until(dl) < time.Second {
		select {
		case <-ctx.Done():
		case <-inst.runner.done:
		case <-time.After(time.Until(dl) + 50*time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		if !inst.dead() {
			p.probe(inst, errors.Is(ctx.Err(), context.DeadlineExceeded))
		}
		return ctx.Err()
	}
	if st.Code() == codes.ResourceExhausted {
		// gRPC refused a message over the size limit: the arguments were
		// checked before sending, so it is the result.
		return errors.New(wire.ResultTooLarge(0))
	}
	if st.Code() != codes.Unavailable && st.Code() != codes.Canceled && !inst.client.Exited() {
		return fmt.Errorf("plugin %s: %s", p.name, st.Message())
	}
	// Give the process a moment to be reaped, so the message can say how
	// it ended.
	select {
	case <-inst.runner.done:
	case <-time.After(250 * time.Millisecond):
	}
	if dead, _ := inst.runner.exited(); dead {
		p.drop(inst, "exited during a call"+inst.exitReason())
		p.logger.Warn("plugin died during a call; the next call starts it again", "error", err)
		return fmt.Errorf("plugin %s exited during the call%s", p.name, inst.exitReason())
	}
	p.drop(inst, "stopped answering: "+st.Message())
	p.logger.Warn("plugin stopped answering during a call; the next call starts it again", "error", err)
	return fmt.Errorf("plugin %s stopped answering: %s", p.name, st.Message())
}

// close stops the running instance, if any, and refuses new ones. A
// launch under way is waited for, within stopTimeout, and stopped.
func (p *pluginProcess) close() {
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
}

// hostService starts, once per instance, the Host service that answers the
// plugin's questions about the host's state, and returns its broker id.
func (inst *instance) hostService(p *pluginProcess) uint32 {
	inst.hostOnce.Do(func() {
		inst.hostID = inst.conn.Broker.NextId()
		go inst.serveHost(p)
	})
	return inst.hostID
}

// serveHost serves the Host service on the broker until the instance
// stops. Failures are the plugin going away, so they are logged quietly.
func (inst *instance) serveHost(p *pluginProcess) {
	l, err := inst.conn.Broker.Accept(inst.hostID)
	if err != nil {
		p.logger.Debug("host service not started", "error", err)
		return
	}
	s := wire.NewServer(nil)
	toolv1.RegisterHostServer(s, &hostServer{p: p})
	inst.hostMu.Lock()
	if inst.stopped {
		inst.hostMu.Unlock()
		l.Close()
		return
	}
	inst.hostSrv = s
	inst.hostMu.Unlock()
	if err := s.Serve(l); err != nil {
		p.logger.Debug("host service stopped", "error", err)
	}
}

// stop ends the instance within stopTimeout+reapTimeout: go-plugin's
// graceful shutdown (unless force, for a plugin that crashed or hung),
// then the process group is killed, taking any children the plugin
// started with it. A stopped (SIGSTOP) plugin is continued first, so that
// it can shut down gracefully; one that still does not is killed.
func (inst *instance) stop(force bool) {
	inst.hostMu.Lock()
	inst.stopped = true
	if inst.hostSrv != nil {
		inst.hostSrv.Stop()
	}
	inst.hostMu.Unlock()
	if inst.idle != nil {
		inst.idle.Stop()
	}
	r := inst.runner
	if r != nil && r.pid != 0 {
		if force {
			_ = r.killGroup()
		} else {
			_ = r.signalGroup(syscall.SIGCONT)
		}
	}

	done := make(chan struct{})
	go func() {
		inst.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
	}
	if r == nil {
		return
	}
	_ = r.killGroup()
	select {
	case <-done:
	case <-time.After(reapTimeout):
	}
}

// hostServer answers a plugin's questions about the call it is serving.
type hostServer struct {
	toolv1.UnimplementedHostServer
	p *pluginProcess
}

func (h *hostServer) GetState(_ context.Context, req *toolv1.GetStateRequest) (*toolv1.GetStateResponse, error) {
	v, ok := h.p.calls.Load(req.GetCallId())
	if !ok {
		return nil, status.Error(codes.NotFound, "no call in flight with that id")
	}
	st, err := sdk.HostState(v.(context.Context))
	if errors.Is(err, sdk.ErrNoHostState) {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &toolv1.GetStateResponse{
		SystemPrompt:           st.SystemPrompt,
		SessionContext:         st.SessionContext,
		SessionContextFilePath: st.SessionContextFilePath,
	}, nil
}
