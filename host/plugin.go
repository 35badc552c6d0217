package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// stopTimeout bounds how long stopping one plugin may take: a graceful
// shutdown first, then the process group is killed.
const stopTimeout = 3 * time.Second

// pluginProcess is one plugin binary and, while it runs, its process. A
// go-plugin client cannot be restarted, so a plugin that died is replaced
// by a new instance on the next call.
type pluginProcess struct {
	path         string
	name         string
	logger       hclog.Logger
	startTimeout time.Duration

	calls    sync.Map // call id → the call's context, for the Host service
	nextCall atomic.Uint64

	mu     sync.Mutex
	inst   *instance
	closed bool
}

// instance is one running process of a plugin.
type instance struct {
	client *plugin.Client
	runner *groupRunner
	conn   *wire.Client
	stderr lastLine

	hostOnce sync.Once
	hostID   uint32
	hostMu   sync.Mutex
	hostSrv  *grpc.Server // nil until the Host service is up
	stopped  bool
}

func newPluginProcess(path string, logger hclog.Logger, startTimeout time.Duration) *pluginProcess {
	name := filepath.Base(path)
	return &pluginProcess{path: path, name: name, logger: logger.Named(name), startTimeout: startTimeout}
}

// instance returns the running instance, launching one if there is none or
// the last one died.
func (p *pluginProcess) instance() (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("the host is shutting down")
	}
	if p.inst != nil {
		if dead, _ := p.inst.runner.exited(); !dead && !p.inst.client.Exited() {
			return p.inst, nil
		}
		p.logger.Warn("plugin exited; starting it again")
		go p.inst.stop()
		p.inst = nil
	}
	inst, err := p.launch()
	if err != nil {
		return nil, err
	}
	p.inst = inst
	return inst, nil
}

func (p *pluginProcess) launch() (*instance, error) {
	inst := &instance{}
	inst.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{}),
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			cmd.Path = p.path
			cmd.Args = []string{p.path}
			r, err := newGroupRunner(l, cmd)
			inst.runner = r
			return r, err
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     p.startTimeout,
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           quietLogger{p.logger},
		Stderr:           &inst.stderr,
	})
	rpc, err := inst.client.Client()
	if err != nil {
		err = launchError(err, inst, p.startTimeout)
		inst.stop()
		return nil, err
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		inst.stop()
		return nil, err
	}
	conn, ok := raw.(*wire.Client)
	if !ok {
		inst.stop()
		return nil, fmt.Errorf("unexpected plugin client %T", raw)
	}
	inst.conn = conn
	return inst, nil
}

// describe asks the plugin what it serves.
func (p *pluginProcess) describe(ctx context.Context) (*toolv1.DescribeResponse, error) {
	inst, err := p.instance()
	if err != nil {
		return nil, err
	}
	resp, err := inst.conn.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		return nil, p.callError(ctx, inst, err)
	}
	return resp, nil
}

// execute runs one of the plugin's tools.
func (p *pluginProcess) execute(ctx context.Context, tool string, args []byte) (string, error) {
	inst, err := p.instance()
	if err != nil {
		return "", fmt.Errorf("plugin %s could not be started: %w", p.name, err)
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
		return ctx.Err()
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
	p.discard(inst)
	p.logger.Warn("plugin died during a call; the next call starts it again", "error", err)
	if dead, how := inst.runner.exited(); dead {
		if how == nil {
			return fmt.Errorf("plugin %s exited during the call", p.name)
		}
		return fmt.Errorf("plugin %s exited during the call (%v)", p.name, how)
	}
	return fmt.Errorf("plugin %s stopped answering: %s", p.name, st.Message())
}

// discard stops inst and forgets it, if it is still the current instance.
func (p *pluginProcess) discard(inst *instance) {
	p.mu.Lock()
	if p.inst == inst {
		p.inst = nil
	}
	p.mu.Unlock()
	go inst.stop()
}

// close stops the running instance, if any, and refuses new ones.
func (p *pluginProcess) close() {
	p.mu.Lock()
	inst := p.inst
	p.inst = nil
	p.closed = true
	p.mu.Unlock()
	if inst != nil {
		inst.stop()
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

// stop ends the instance within stopTimeout: go-plugin's graceful
// shutdown, then the process group is killed, taking any children the
// plugin started with it.
func (inst *instance) stop() {
	inst.hostMu.Lock()
	inst.stopped = true
	if inst.hostSrv != nil {
		inst.hostSrv.Stop()
	}
	inst.hostMu.Unlock()

	done := make(chan struct{})
	go func() {
		inst.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
	}
	if inst.runner != nil {
		_ = inst.runner.killGroup()
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
