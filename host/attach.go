package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/host/internal/proc"
	"github.com/agenthost/agenthost/internal/goplugin"
	"github.com/agenthost/agenthost/internal/wire"
)

// AttachPlugin registers the tools of a plugin that is already running,
// served with go-plugin on the tool protocol, which rc says how to reach
// (go-plugin's ReattachConfig; a plugin served by go-plugin in test mode,
// in this process or another, gives one). The host connects to it, asks
// it for its tools and registers them as LoadPlugins registers a plugin
// binary's, under the same limits, and calls them as it calls a plugin
// binary's: each call carries its deadline and the workspace roots, and
// the plugin asks for the agent's state (sdk.HostState) on the Host
// stream that the host opens on the connection. name stands for the
// plugin where a binary's file name would: its tools' ToolInfo.Plugin,
// its report in Plugins, and the errors of its calls.
//
// The host did not start the plugin and does not manage its process: the
// plugin runs with whatever rights and environment its own process has,
// outside the host's sandbox, and is never stopped by the host: Close
// disconnects from it, as does a plugin that does not answer after a
// call's deadline (a plugin binary would be killed). Once disconnected,
// or once the plugin stops serving, its tools fail: the host cannot
// start it again. As for Register, its tools may take any name that no
// tool holds yet.
//
// The error says why no tool was registered ("the host skips the plugin:
// REASON": the plugin could not be reached or described, or LoadPlugins
// would skip it too), or names each tool that was refused ("the host
// refuses tool NAME: REASON") while the others were registered.
func (r *ToolRegistry) AttachPlugin(ctx context.Context, name string, rc *plugin.ReattachConfig) error {
	// Never stopped when idle: the host could not start it again.
	proc := newToolSource(attachedKind{}, name, r.logger, r.startTimeout, 0)
	proc.reattach.Store(rc)
	proc.sandbox = r.sandbox
	dctx, cancel := context.WithTimeout(ctx, r.startTimeout+2*time.Second)
	defer cancel()
	desc, err := proc.describe(dctx)
	rep, refused := r.adopt(proc, desc, err)
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	r.mu.Unlock()
	var errs []error
	for _, t := range refused {
		errs = append(errs, fmt.Errorf("the host refuses tool %s: %w", t.tool, t.reason))
	}
	if rep.Err != nil {
		errs = append(errs, fmt.Errorf("the host skips the plugin: %w", rep.Err))
	}
	return errors.Join(errs...)
}

// attach connects to the plugin that AttachPlugin names, once: the host
// cannot start an attached plugin again.
func (p *toolSource) attach() (*instance, error) {
	rc := p.reattach.Swap(nil)
	if rc == nil {
		return nil, errors.New("it was attached, not started by the host, and cannot be started again")
	}
	if rc.ProtocolVersion != 0 && rc.ProtocolVersion != wire.ProtocolVersion {
		return nil, fmt.Errorf("it speaks protocol version %d; want %d", rc.ProtocolVersion, wire.ProtocolVersion)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: goplugin.Handshake,
		// A client that reattaches negotiates no version: it speaks
		// the one of the plugin set it is given.
		Plugins:          goplugin.PluginSets()[wire.ProtocolVersion],
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           proc.QuietLogger{Logger: p.logger},
	})
	rpc, err := client.Client()
	if err != nil {
		return nil, fmt.Errorf("connecting to the plugin: %w", err)
	}
	// Only gRPC is allowed.
	g := rpc.(*plugin.GRPCClient)
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		g.Conn.Close()
		return nil, fmt.Errorf("connecting to the plugin: %w", err)
	}
	return &instance{link: &attachedLink{goPluginLink{client: client, grpc: g.Conn}}, conn: raw.(*goplugin.Client)}, nil
}
