// Command bareplugin is an agenthost plugin written the way one in another
// language is: without go-plugin and without the sdk, from
// docs/PROTOCOL.md alone. It checks the handshake cookie, listens on a
// unix socket in PLUGIN_UNIX_SOCKET_DIR, serves
// agenthost.tool.v1.ToolPlugin and grpc.health.v1.Health with
// google.golang.org/grpc, and prints its handshake line itself. It serves
// none of go-plugin's own services (controller, broker, stdio).
//
// Its tools:
//
//	bare_pid    its process id
//	bare_wait   writes the file its "started" argument names, then waits
//	            until the call is canceled
//	bare_log    writes each of its "lines" to stderr, as they are
//	bare_state  the host's system prompt and session context, asked of
//	            the host's Host service
//
// Each call remembers the host's first workspace root. On SIGTERM it
// writes its process id to the file "sigterm" there and exits with status
// 0; installed under a name ending in "-stubborn" it writes the file and
// carries on, so that only SIGKILL ends it. Installed under a name ending
// in "-broker" it serves go-plugin's broker (plugin.GRPCBroker), through
// which bare_state learns where the Host service is; otherwise bare_state
// fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agenthost/agenthost/sdk/toolv1"
)

const schema = `{"type":"object","properties":{"started":{"type":"string"},"lines":{"type":"array","items":{"type":"string"}}}}`

type server struct {
	toolv1.UnimplementedToolPluginServer
	broker *broker

	mu   sync.Mutex
	root string // the first workspace root of the last call
}

func (s *server) Describe(context.Context, *toolv1.DescribeRequest) (*toolv1.DescribeResponse, error) {
	resp := &toolv1.DescribeResponse{PluginName: "bare", PluginVersion: "1.0", ProtocolMinor: 3}
	for _, name := range []string{"bare_pid", "bare_wait", "bare_log", "bare_state"} {
		resp.Tools = append(resp.Tools, &toolv1.ToolSpec{Name: name, Description: "A tool.", ParametersSchema: []byte(schema)})
	}
	return resp, nil
}

func (s *server) Execute(ctx context.Context, req *toolv1.ExecuteRequest) (*toolv1.ExecuteResponse, error) {
	if roots := req.GetWorkspaceRoots(); len(roots) > 0 {
		s.mu.Lock()
		s.root = roots[0]
		s.mu.Unlock()
	}
	var args struct {
		Started string   `json:"started"`
		Lines   []string `json:"lines"`
	}
	if err := json.Unmarshal(req.GetArguments(), &args); err != nil {
		return &toolv1.ExecuteResponse{Error: "invalid arguments: " + err.Error()}, nil
	}
	switch req.GetTool() {
	case "bare_pid":
		return &toolv1.ExecuteResponse{Result: strconv.Itoa(os.Getpid())}, nil
	case "bare_wait":
		if err := os.WriteFile(args.Started, nil, 0o644); err != nil {
			return &toolv1.ExecuteResponse{Error: err.Error()}, nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	case "bare_log":
		for _, l := range args.Lines {
			fmt.Fprintln(os.Stderr, l)
		}
		return &toolv1.ExecuteResponse{Result: "logged"}, nil
	case "bare_state":
		st, err := s.hostState(ctx, req)
		if err != nil {
			return &toolv1.ExecuteResponse{Error: err.Error()}, nil
		}
		return &toolv1.ExecuteResponse{Result: st.GetSystemPrompt() + "|" + st.GetSessionContext()}, nil
	}
	return &toolv1.ExecuteResponse{Error: "unknown tool " + req.GetTool()}, nil
}

// hostState asks the host's Host service for its state, for the call req.
// The host announces where the service listens on the broker's stream:
// a ConnInfo whose service_id is req's host_service_id.
func (s *server) hostState(ctx context.Context, req *toolv1.ExecuteRequest) (*toolv1.GetStateResponse, error) {
	if s.broker == nil {
		return nil, errors.New("this plugin serves no broker")
	}
	network, address, err := s.broker.wait(ctx, req.GetHostServiceId())
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(network+":"+address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return toolv1.NewHostClient(conn).GetState(ctx, &toolv1.GetStateRequest{CallId: req.GetCallId()})
}

// onSIGTERM writes the "sigterm" file in the last root, and exits unless
// the plugin is stubborn.
func (s *server) onSIGTERM(stubborn bool) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	for range ch {
		s.mu.Lock()
		root := s.root
		s.mu.Unlock()
		if root != "" {
			_ = os.WriteFile(filepath.Join(root, "sigterm"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		if !stubborn {
			os.Exit(0)
		}
	}
}

func main() {
	if os.Getenv("AGENTHOST_PLUGIN") != "d1f4a7c2-tool-binary" {
		fmt.Fprintln(os.Stderr, "bareplugin: this is an agenthost plugin; agenthost starts it")
		os.Exit(1)
	}
	name := filepath.Base(os.Args[0])
	s := &server{}
	go s.onSIGTERM(strings.HasSuffix(name, "-stubborn"))

	sock := filepath.Join(os.Getenv("PLUGIN_UNIX_SOCKET_DIR"), "bare.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareplugin:", err)
		os.Exit(1)
	}
	g := grpc.NewServer()
	toolv1.RegisterToolPluginServer(g, s)
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	if strings.HasSuffix(name, "-broker") {
		s.broker = newBroker()
		g.RegisterService(&brokerService, s.broker)
	}

	// The socket listens before the line is printed: the host dials it as
	// soon as it reads the line.
	fmt.Printf("1|1|unix|%s|grpc\n", sock)
	if err := g.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "bareplugin:", err)
		os.Exit(1)
	}
}
