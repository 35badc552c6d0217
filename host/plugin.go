package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/agenthost/agenthost/host/internal/proc"
	"github.com/agenthost/agenthost/internal/goplugin"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// launchPlugin starts a new instance of the plugin. The binary is opened once:
// what is checked (who may write it, its SHA-256 against the lock) is
// what runs (see openedBinary). The plugin gets a scrubbed environment
// (pluginEnv): the host's own is not passed, only the allow-list and the
// variables of Options.PluginEnv, plus go-plugin's, which come last so
// that none passed through can override them.
func (p *toolSource) launchPlugin() (*instance, error) {
	bin, err := openBinary(p.path, p.lock, p.allowInsecure)
	if err != nil {
		return nil, err
	}
	defer bin.close() // the process has its own once it started
	exe, extra, err := bin.execPath(p.lock != nil)
	if err != nil {
		return nil, err
	}
	env := proc.Env(p.pluginEnv)
	perms := p.permissions()
	inst := &instance{perms: perms, sessionDirs: p.sandbox.sessionDirs(perms)}
	hostEnd, pluginEnd, err := proc.Pair()
	if err != nil {
		return nil, err
	}
	// The host's end goes to gRPC when go-plugin dials; the plugin's, to
	// the plugin, once it has started.
	defer pluginEnd.Close()
	conn := proc.NewConn(hostEnd)
	defer conn.CloseUnused()
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  goplugin.Handshake,
		VersionedPlugins: goplugin.PluginSets(),
		RunnerFunc: func(l hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			// The plugin serves on the host's connection: the directory
			// go-plugin made for a socket goes unused, and at once.
			_ = os.Remove(socketDir)
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR=") })
			prof := p.sandbox.profile(perms)
			policy, err := p.sandbox.policy(bin, perms, p.sandbox.limits(p.path, p.grant), prof)
			if err != nil {
				return nil, err
			}
			cmd.Path = exe
			cmd.Args = []string{p.path}
			cmd.ExtraFiles = append(slices.Clone(extra), pluginEnd)
			conn.FD = 2 + len(cmd.ExtraFiles)
			env = append(env, wire.ConnEnv+"="+strconv.Itoa(conn.FD))
			if policy != nil {
				env = append(env, sandboxEnvValue(perms, prof, policy))
				if prof != nil {
					env = append(env, prof.env...)
				}
			}
			cmd.Env = slices.Concat(env, cmd.Env)
			r, err := proc.NewRunner(l, cmd, p.path)
			if r != nil {
				r.Policy = policy
				r.Conn = conn
				// The name go-plugin would log the plugin's lines under.
				r.SpeaksGoPlugin(p.logger.Named(p.name))
			}
			inst.runner = r
			return r, err
		},
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     p.startTimeout,
		GRPCDialOptions:  append(wire.DialOptions(), grpc.WithContextDialer(conn.Dial)),
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: p.sandbox.runDir()},
		Logger:           proc.QuietLogger{Logger: p.logger},
	}
	l := &goPluginLink{client: plugin.NewClient(cfg)}
	inst.link = l
	rpc, err := l.client.Client()
	if err != nil {
		err = p.launchError(err, inst)
		inst.Stop(true)
		return nil, err
	}
	if g, ok := rpc.(*plugin.GRPCClient); ok {
		l.grpc = g.Conn
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		inst.Stop(true)
		return nil, err
	}
	client, ok := raw.(*goplugin.Client)
	if !ok {
		inst.Stop(true)
		return nil, fmt.Errorf("unexpected plugin client %T", raw)
	}
	inst.conn = client
	return inst, nil
}

// termGrace is how long a plugin that serves calls, but not go-plugin's
// controller, has to exit after SIGTERM before its process group is
// killed.
const termGrace = 500 * time.Millisecond

// controllerShutdown is the method of go-plugin's controller service
// (plugin.GRPCController) that asks a plugin to shut down.
const controllerShutdown = "/plugin.GRPCController/Shutdown"

// shutdown asks a plugin that serves calls to shut down, which ends them.
// go-plugin's Kill asks through go-plugin's controller service, and then
// waits two seconds for the process to exit before it kills it; a plugin
// that does not serve the controller, as one written without go-plugin
// need not, would sit out those two seconds at every such stop. So the
// host asks first, and a plugin that answers that it has no controller
// gets SIGTERM, its whole process group, and is killed termGrace later if
// it has not exited by then. A plugin that has the controller is left to
// go-plugin's Kill, which follows.
func (l *goPluginLink) shutdown(inst *instance) {
	r := inst.runner
	if l.grpc == nil || r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	// go-plugin's request and answer are empty messages, as Empty is.
	err := l.grpc.Invoke(ctx, controllerShutdown, &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Unimplemented {
		return
	}
	_ = r.SignalGroup(syscall.SIGTERM)
	grace := time.NewTimer(termGrace)
	defer grace.Stop()
	select {
	case <-r.Done():
	case <-grace.C:
		_ = r.KillGroup()
	}
}

// describe asks the plugin what it serves.
func (p *toolSource) describePlugin(ctx context.Context) (*description, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(inst)
	resp, err := inst.conn.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		return nil, p.callError(ctx, inst, err)
	}
	return descriptionFromProto(resp), nil
}

// execute runs one of the plugin's tools: its text and, when
// wantStructured, its structured result, which the registry checks
// (ToolRegistry.ExecuteResult).
func (p *toolSource) execute(ctx context.Context, tool string, args []byte, wantStructured bool) (string, []byte, error) {
	inst, err := p.instance(ctx)
	if err != nil {
		return "", nil, p.startFailure(ctx, err)
	}
	defer p.release(inst)
	if len(args) > wire.MaxMessageSize {
		return "", nil, errors.New(wire.ArgumentsTooLarge(len(args)))
	}
	callID := p.nextCall.Add(1)
	p.calls.Store(callID, ctx)
	defer p.calls.Delete(callID)

	resp, err := inst.conn.Execute(ctx, &toolv1.ExecuteRequest{
		Tool:           tool,
		Arguments:      args,
		HostServiceId:  inst.hostStream(p),
		CallId:         callID,
		WorkspaceRoots: sdk.Roots(ctx),
		WantStructured: wantStructured,
	})
	if err != nil {
		return "", nil, p.callError(ctx, inst, err)
	}
	if msg := resp.GetError(); msg != "" {
		return "", nil, errors.New(msg + p.sandboxHint(inst, textLines(msg)))
	}
	return resp.GetResult(), resp.GetStructuredResult(), nil
}

// callError explains a failed RPC. A broken connection means the plugin
// died: its instance is thrown away so that the next call starts afresh.
// A call that ended at its deadline has the plugin probed, in the
// background, for a hang.
func (p *toolSource) callError(ctx context.Context, inst *instance, err error) error {
	st, _ := status.FromError(err)
	// The plugin's end of the call keeps the same deadline, and may see it
	// pass a moment before this end does: then the deadline is the cause.
	if dl, ok := ctx.Deadline(); ok && ctx.Err() == nil && st.Code() != codes.Unavailable && time.Until(dl) < time.Second {
		var exited <-chan struct{} // never, for an attached plugin
		if inst.runner != nil {
			exited = inst.runner.Done()
		}
		select {
		case <-ctx.Done():
		case <-exited:
		case <-time.After(time.Until(dl) + 50*time.Millisecond):
		}
	}
	if ctx.Err() != nil {
		if !inst.Dead() {
			p.probe(inst, errors.Is(ctx.Err(), context.DeadlineExceeded))
		}
		return ctx.Err()
	}
	if st.Code() == codes.ResourceExhausted {
		// gRPC refused a message over the size limit: the arguments were
		// checked before sending, so it is the result.
		return errors.New(wire.ResultTooLarge(0))
	}
	if st.Code() != codes.Unavailable && st.Code() != codes.Canceled && !inst.link.ended(inst) {
		return fmt.Errorf("plugin %s: %s", p.name, st.Message())
	}
	return p.lostDuringCall(inst, st.Message(), err)
}

// hostStream opens, once per instance, the Host stream on which the
// plugin asks about the host's state, and answers it until the instance
// stops; it returns the host_service_id of the instance's calls: 1 once
// the stream is open, 0 if it could not be.
func (inst *instance) hostStream(p *toolSource) uint32 {
	inst.hostOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		inst.hostMu.Lock()
		stopped := inst.stopped
		inst.hostCancel = cancel
		inst.hostMu.Unlock()
		if stopped {
			cancel()
			return
		}
		stream, err := inst.conn.Host(ctx)
		if err != nil {
			p.logger.Debug("host stream not opened", "error", err)
			cancel()
			return
		}
		inst.hostID = 1
		p.life.Go(func() { answerHost(p, stream) })
	})
	return inst.hostID
}

// answerHost answers the plugin's questions on its Host stream, one at a
// time (each is answered from memory), until the stream ends: the
// instance stopped, or the plugin does not serve it (UNIMPLEMENTED), as
// a plugin that never asks need not.
func answerHost(p *toolSource, stream toolv1.ToolPlugin_HostClient) {
	for {
		q, err := stream.Recv()
		if err != nil {
			p.logger.Debug("host stream ended", "error", err)
			return
		}
		a := p.answer(q)
		if err := stream.Send(a); err != nil {
			p.logger.Debug("host stream ended", "error", err)
			return
		}
	}
}

// answer answers a plugin's question. It may ask only about a call of its
// own, under way.
func (p *toolSource) answer(q *toolv1.HostQuestion) *toolv1.HostAnswer {
	a := &toolv1.HostAnswer{Id: q.GetId()}
	fail := func(code codes.Code, msg string) *toolv1.HostAnswer {
		a.Answer = &toolv1.HostAnswer_Error{Error: &toolv1.HostError{Code: uint32(code), Message: msg}}
		return a
	}
	if q.GetGetState() == nil {
		return fail(codes.Unimplemented, "this host answers no such question")
	}
	v, ok := p.calls.Load(q.GetGetState().GetCallId())
	if !ok {
		return fail(codes.NotFound, "no call in flight with that id")
	}
	st, err := sdk.HostState(v.(context.Context))
	if errors.Is(err, sdk.ErrNoHostState) {
		return fail(codes.FailedPrecondition, err.Error())
	}
	if err != nil {
		return fail(codes.Unknown, err.Error())
	}
	a.Answer = &toolv1.HostAnswer_State{State: &toolv1.GetStateResponse{
		SystemPrompt:           st.SystemPrompt,
		SessionContext:         st.SessionContext,
		SessionContextFilePath: st.SessionContextFilePath,
	}}
	return a
}
