// Command rawecho is the floor of the plugin benchmarks: a plain gRPC
// server on a unix socket serving toolv1.ToolPlugin's Execute, which
// echoes its arguments. No go-plugin, no JSON, no registry: what is left
// is one process boundary and one gRPC round trip, with the same server
// options as a plugin (wire.NewServer).
//
// Usage: rawecho SOCKET. It prints "READY" once it listens, and exits when
// its stdin closes, so it never outlives the benchmark that started it.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

type echo struct {
	toolv1.UnimplementedToolPluginServer
}

func (echo) Execute(_ context.Context, req *toolv1.ExecuteRequest) (*toolv1.ExecuteResponse, error) {
	return &toolv1.ExecuteResponse{Result: string(req.GetArguments())}, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rawecho SOCKET")
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawecho:", err)
		os.Exit(1)
	}
	s := wire.NewServer(nil)
	toolv1.RegisterToolPluginServer(s, echo{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		s.Stop()
		os.Remove(os.Args[1])
		os.Exit(0)
	}()
	fmt.Println("READY")
	if err := s.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "rawecho:", err)
		os.Exit(1)
	}
}
