// Package wire holds what both ends of a plugin connection must agree on:
// the handshake cookie, the versions, the gRPC message limits and the
// connection the host hands a plugin; and Serve, the plugin's end of it.
// It does not import go-plugin, which only the host's end uses
// (internal/goplugin): a plugin binary links none of it.
package wire

import (
	"fmt"
	"runtime"

	"google.golang.org/grpc"
)

const (
	// ProtocolVersion is the go-plugin protocol version, the major version
	// of the tool protocol.
	ProtocolVersion = 1

	// ProtocolMinor is the minor version of the tool protocol this tree
	// speaks. Minor versions only add fields and methods.
	ProtocolMinor = 5

	// CoreProtocolVersion is go-plugin's own protocol version, the first
	// field of the handshake line.
	CoreProtocolVersion = 1

	// PluginName is the name under which a plugin serves the tool protocol.
	PluginName = "tools"

	// MaxMessageSize bounds one gRPC message, in either direction. It is
	// raised far above gRPC's 4 MiB default so that large files and results
	// travel in one call.
	MaxMessageSize = 64 << 20

	// maxMessageSize leaves room for the envelope around a payload of
	// MaxMessageSize bytes.
	maxMessageSize = MaxMessageSize + 1<<20
)

// ResultTooLarge is the error of a call whose result of n bytes is more
// than a message may carry.
func ResultTooLarge(n int) string {
	if n <= 0 {
		return fmt.Sprintf("the result is larger than the %d MiB limit", MaxMessageSize>>20)
	}
	return fmt.Sprintf("the result is %d bytes, larger than the %d MiB limit", n, MaxMessageSize>>20)
}

// ArgumentsTooLarge is the error of a call whose arguments of n bytes are
// more than a message may carry.
func ArgumentsTooLarge(n int) string {
	return fmt.Sprintf("the arguments are %d bytes, larger than the %d MiB limit", n, MaxMessageSize>>20)
}

// The handshake cookie: a plugin refuses to run unless its environment
// holds it. It keeps a plugin binary from being started by hand; it is
// not a security measure.
const (
	CookieKey   = "AGENTHOST_PLUGIN"
	CookieValue = "d1f4a7c2-tool-binary"
)

// ConnEnv names the environment variable through which the host tells a
// plugin the number of the descriptor that is its end of the host's
// connection: a connected unix stream socket, one of a pair the host
// made. The plugin serves gRPC on that one connection and names no
// socket another process could dial (since protocol 1.5).
const ConnEnv = "AGENTHOST_PLUGIN_CONN"

// ConnAddrPrefix starts the address in the handshake line of a plugin
// that serves on the host's connection: "fd:N".
const ConnAddrPrefix = "fd:"

// ServerOptions are the options of every gRPC server on either side.
//
// Calls are served by a few long-lived goroutines rather than a new one
// each: a tool call checks and decodes its arguments (JSON, then a JSON
// Schema walk), which grows a fresh goroutine's stack, and copying that
// stack on every call cost a plugin about a fifth of its CPU time. A call
// arriving while every worker is busy still gets a goroutine of its own,
// so a long call never holds up another.
func ServerOptions(opts []grpc.ServerOption) []grpc.ServerOption {
	return append(opts,
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.NumStreamWorkers(uint32(max(4, runtime.GOMAXPROCS(0)))),
		grpc.InitialWindowSize(windowSize),
		grpc.InitialConnWindowSize(windowSize),
	)
}

// windowSize is the HTTP/2 flow-control window of every stream and
// connection, on both sides. Setting it turns off gRPC's bandwidth
// estimation, which otherwise answers each message received with a PING
// and each PING with an ACK: two more writes per call on a socket that
// has no bandwidth to estimate, and each wakes the other process. 16 MiB
// is as far as the estimation would grow the window, so large messages
// flow as they did.
const windowSize = 16 << 20

// NewServer is a gRPC server with ServerOptions.
func NewServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(ServerOptions(opts)...)
}

// DialOptions are the options of every gRPC client connection on either
// side.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(windowSize),
		grpc.WithInitialConnWindowSize(windowSize),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
		),
	}
}
