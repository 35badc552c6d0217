package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/internal/inprocess"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// The host's end of a plugin served in the test's process. A host reaches
// a plugin binary the same way, through go-plugin's client: what differs
// is how the connection is made (reattaching to a socket, instead of
// starting a process and reading its address), not what travels over it.
// Each call is an Execute carrying the call's deadline and workspace
// roots, and the plugin asks for the agent's state on a Host service that
// this end serves on the go-plugin broker.

// conn is a plugin served in this process, connected.
type conn struct {
	name   string // what the plugin calls itself
	client *wire.Client
	rpc    plugin.ClientProtocol
	stop   context.CancelFunc
	closed <-chan struct{} // closed once the plugin stopped serving

	nextCall atomic.Uint64
	calls    sync.Map // call id → the call's context

	hostOnce sync.Once
	hostID   uint32
	hostMu   sync.Mutex
	hostSrv  *grpc.Server
	stopped  bool
}

// serve serves p in this process, its tools logging to logger, and
// registers its tools in reg as the host registers a plugin's.
func serve(p sdk.Plugin, reg *host.ToolRegistry, logger hclog.Logger) (*conn, error) {
	ctx, stop := context.WithCancel(context.Background())
	rc, closed, err := inprocess.Serve(ctx, p, logger)
	if err != nil {
		stop()
		return nil, fmt.Errorf("serving the plugin: %w", err)
	}
	c := &conn{stop: stop, closed: closed}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: wire.Handshake,
		// A client that reattaches negotiates no version: it speaks
		// the one of the plugin set it is given.
		Plugins: wire.PluginSets(&wire.Plugin{})[wire.ProtocolVersion],
		Reattach: &plugin.ReattachConfig{
			Protocol:        rc.Protocol,
			ProtocolVersion: rc.ProtocolVersion,
			Addr:            rc.Addr,
			Test:            true,
			ReattachFunc: func() (runner.AttachedRunner, error) {
				return attached{closed}, nil
			},
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := client.Client()
	if err != nil {
		c.close()
		return nil, fmt.Errorf("connecting to the plugin: %w", err)
	}
	c.rpc = rpc
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("connecting to the plugin: %w", err)
	}
	c.client = raw.(*wire.Client)
	desc, err := c.client.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("describing the plugin: %w", err)
	}
	c.name = desc.GetPluginName()
	if err := c.register(reg, desc); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// register registers the plugin's tools in reg, holding them to the
// limits the host holds a plugin's tools to.
func (c *conn) register(reg *host.ToolRegistry, desc *toolv1.DescribeResponse) error {
	if n := len(desc.GetTools()); n > host.MaxToolsPerPlugin {
		return fmt.Errorf("the host skips the plugin: it declares %d tools, more than the %d a plugin may serve", n, host.MaxToolsPerPlugin)
	}
	var errs []error
	for _, spec := range desc.GetTools() {
		name := spec.GetName()
		var err error
		switch {
		case len(spec.GetParametersSchema()) > host.MaxSchemaSize:
			err = fmt.Errorf("its parameters schema is %d bytes, more than the %d allowed", len(spec.GetParametersSchema()), host.MaxSchemaSize)
		case len(spec.GetDescription()) > host.MaxDescriptionSize:
			err = fmt.Errorf("its description is %d bytes, more than the %d allowed", len(spec.GetDescription()), host.MaxDescriptionSize)
		default:
			err = reg.Register(c.tool(spec))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("the host refuses tool %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// tool is the host's end of one of the plugin's tools.
func (c *conn) tool(spec *toolv1.ToolSpec) sdk.Tool {
	a := spec.GetAnnotations()
	t := &remoteTool{
		c:      c,
		schema: sdk.NewChatTool(spec.GetName(), spec.GetDescription(), json.RawMessage(spec.GetParametersSchema())),
		ann: sdk.Annotations{
			ReadOnly:    a.GetReadOnly(),
			Destructive: a.GetDestructive(),
			Idempotent:  a.GetIdempotent(),
			OpenWorld:   a.GetOpenWorld(),
			OptIn:       spec.GetOptIn(),
			Timeout:     min(time.Duration(spec.GetTimeoutMs())*time.Millisecond, host.MaxToolTimeout),
		},
	}
	if spec.GetChecksArguments() {
		return checkedTool{t}
	}
	return t
}

// remoteTool is a tool of the plugin. The registry checks its arguments
// against its schema before it runs, as it checks a plugin tool's.
type remoteTool struct {
	c      *conn
	schema sdk.ChatTool
	ann    sdk.Annotations
}

func (t *remoteTool) Name() string                 { return t.schema.Function.Name }
func (t *remoteTool) Schema() sdk.ChatTool         { return t.schema }
func (t *remoteTool) Annotations() sdk.Annotations { return t.ann }

func (t *remoteTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	return t.c.execute(ctx, t.Name(), args)
}

// checkedTool is a tool whose plugin checks the arguments against its
// schema itself (a typed sdk tool): the registry leaves them to it, as
// it does for a plugin tool that says so.
type checkedTool struct{ *remoteTool }

func (t checkedTool) PrepareCall(args json.RawMessage) (toolcall.Func, error) {
	return func(ctx context.Context) (string, error) { return t.Execute(ctx, args) }, nil
}

// execute runs one of the plugin's tools, as the host runs a plugin's.
func (c *conn) execute(ctx context.Context, tool string, args []byte) (string, error) {
	if len(args) > wire.MaxMessageSize {
		return "", errors.New(wire.ArgumentsTooLarge(len(args)))
	}
	id := c.nextCall.Add(1)
	c.calls.Store(id, ctx)
	defer c.calls.Delete(id)
	resp, err := c.client.Execute(ctx, &toolv1.ExecuteRequest{
		Tool:           tool,
		Arguments:      args,
		HostServiceId:  c.hostService(),
		CallId:         id,
		WorkspaceRoots: sdk.Roots(ctx),
	})
	if err != nil {
		return "", c.callError(ctx, err)
	}
	if msg := resp.GetError(); msg != "" {
		return "", errors.New(msg)
	}
	return resp.GetResult(), nil
}

// callError explains a failed RPC as the host does: the call's deadline
// or cancellation is reported as such, whatever the plugin made of it.
func (c *conn) callError(ctx context.Context, err error) error {
	st, _ := status.FromError(err)
	if _, ok := ctx.Deadline(); ok && st.Code() == codes.DeadlineExceeded {
		// The plugin's end of the call has the same deadline, and may
		// see it pass a moment before this end does.
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if st.Code() == codes.ResourceExhausted {
		return errors.New(wire.ResultTooLarge(0))
	}
	return fmt.Errorf("plugin %s: %s", c.name, st.Message())
}

// hostService starts, once, the Host service that answers the plugin's
// questions about the agent's state, and returns its broker id.
func (c *conn) hostService() uint32 {
	c.hostOnce.Do(func() {
		c.hostID = c.client.Broker.NextId()
		go c.serveHost()
	})
	return c.hostID
}

func (c *conn) serveHost() {
	l, err := c.client.Broker.Accept(c.hostID)
	if err != nil {
		return
	}
	s := wire.NewServer(nil)
	toolv1.RegisterHostServer(s, hostServer{c: c})
	c.hostMu.Lock()
	if c.stopped {
		c.hostMu.Unlock()
		l.Close()
		return
	}
	c.hostSrv = s
	c.hostMu.Unlock()
	s.Serve(l)
}

// hostServer answers the plugin's questions about the call it serves.
type hostServer struct {
	toolv1.UnimplementedHostServer
	c *conn
}

func (h hostServer) GetState(_ context.Context, req *toolv1.GetStateRequest) (*toolv1.GetStateResponse, error) {
	v, ok := h.c.calls.Load(req.GetCallId())
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

// close stops the plugin, then the connection to it. The plugin's server
// stops first, so that it is not told to stop twice.
func (c *conn) close() {
	c.hostMu.Lock()
	c.stopped = true
	srv := c.hostSrv
	c.hostMu.Unlock()
	if srv != nil {
		srv.Stop()
	}
	c.stop()
	<-c.closed
	if c.rpc != nil {
		c.rpc.Close()
	}
}

// attached stands for the plugin's process, which is this one, to
// go-plugin's client: it "exits" when the plugin stops serving.
type attached struct{ closed <-chan struct{} }

func (a attached) Wait(context.Context) error {
	<-a.closed
	return nil
}

func (attached) Kill(context.Context) error { return nil }
func (attached) ID() string                 { return "in-process" }

func (attached) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (attached) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
