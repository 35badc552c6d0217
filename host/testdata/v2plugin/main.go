// Command v2plugin speaks only protocol version 2, which this host does
// not know.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

func main() {
	hs := wire.Handshake
	hs.ProtocolVersion = 2
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		VersionedPlugins: map[int]plugin.PluginSet{2: {wire.PluginName: &wire.Plugin{
			Impl: func(*plugin.GRPCBroker) toolv1.ToolPluginServer { return toolv1.UnimplementedToolPluginServer{} },
		}}},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}
