package sdktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/internal/inprocess"
)

// The host's end of a plugin served in the test's process is the host's
// own: the registry attaches to it (host.ToolRegistry.AttachPlugin) as
// it would reattach to a plugin binary's socket, and calls it as it calls
// a plugin binary. Only the process is missing: the plugin "exits" when
// it stops serving.

// serve serves p in this process, its tools logging to logger, and has
// reg attach to it, so that its tools are registered as the host
// registers a plugin's. stop stops serving; closing reg first asks the
// plugin to stop.
func serve(p sdk.Plugin, reg *host.ToolRegistry, logger hclog.Logger) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "sdktest")
	if err != nil {
		return nil, fmt.Errorf("serving the plugin: %w", err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "plugin.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("serving the plugin: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	closed := inprocess.Serve(ctx, p, lis, logger)
	stop = func() {
		cancel()
		<-closed
		os.RemoveAll(dir)
	}
	rc := &plugin.ReattachConfig{
		Protocol:        plugin.ProtocolGRPC,
		ProtocolVersion: wire.ProtocolVersion,
		Addr:            lis.Addr(),
		Pid:             os.Getpid(),
		Test:            true,
		ReattachFunc:    func() (runner.AttachedRunner, error) { return attached{closed}, nil },
	}
	// The plugin calls itself by the test binary's name, as sdk.Serve
	// does: so does the host.
	if err := reg.AttachPlugin(ctx, filepath.Base(os.Args[0]), rc); err != nil {
		reg.Close()
		stop()
		return nil, err
	}
	return stop, nil
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
