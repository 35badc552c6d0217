// Package goplugin is the host's end of the tool protocol over
// hashicorp/go-plugin: the handshake that go-plugin's client checks, and
// the plugin set whose client speaks the tool protocol. The plugin's end
// (internal/wire.Serve) does without go-plugin.
package goplugin

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// Handshake is go-plugin's handshake for the tool protocol.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  wire.ProtocolVersion,
	MagicCookieKey:   wire.CookieKey,
	MagicCookieValue: wire.CookieValue,
}

// Client is the host's end of a plugin connection.
type Client struct {
	toolv1.ToolPluginClient
}

// Plugin is the go-plugin plugin of the tool protocol, on the host's
// side: it makes clients, and serves nothing.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

var _ plugin.GRPCPlugin = Plugin{}

// GRPCServer refuses: the host serves no plugin.
func (Plugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("the tool protocol is served by internal/wire.Serve")
}

// GRPCClient returns a *Client.
func (Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{ToolPluginClient: toolv1.NewToolPluginClient(conn)}, nil
}

// PluginSets are the plugin sets by protocol version, for go-plugin's
// VersionedPlugins.
func PluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{wire.ProtocolVersion: {wire.PluginName: Plugin{}}}
}
