// Command bareplugin is an agenthost plugin written the way one in another
// language is: without go-plugin and without the sdk, from
// docs/PROTOCOL.md alone. It checks the handshake cookie, serves
// agenthost.tool.v1.ToolPlugin and grpc.health.v1.Health with
// google.golang.org/grpc on the connection the host passes it
// (AGENTHOST_PLUGIN_CONN), and prints its handshake line itself. It serves
// none of go-plugin's own services (controller, broker, stdio).
//
// Its tools:
//
//	bare_pid    its process id
//	bare_wait   writes the file its "started" argument names, then waits
//	            until the call is canceled
//	bare_log    writes each of its "lines" to stderr, as they are
//	bare_state  the host's system prompt and session context, asked of
//	            the host on the Host stream
//
// Each call remembers the host's first workspace root. On SIGTERM it
// writes its process id to the file "sigterm" there and exits with status
// 0; installed under a name ending in "-stubborn" it writes the file and
// carries on, so that only SIGKILL ends it. Installed under a name ending
// in "-host" it serves the Host stream, on which bare_state asks the host;
// otherwise the stream is unimplemented and bare_state fails.
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
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agenthost/agenthost/sdk/toolv1"
)

const schema = `{"type":"object","properties":{"started":{"type":"string"},"lines":{"type":"array","items":{"type":"string"}}}}`

type server struct {
	toolv1.UnimplementedToolPluginServer
	// host is the Host stream, once the host opened it; nil for a plugin
	// that serves none.
	host chan toolv1.ToolPlugin_HostServer
	// ask takes one question at a time: the stream's Send and Recv are
	// this plugin's alone while it asks.
	ask sync.Mutex

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
		return &toolv1.ExecuteResponse{Result: pidAnswer(os.Getpid())}, nil
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

// Host keeps the stream the host opens, until it ends.
func (s *server) Host(stream toolv1.ToolPlugin_HostServer) error {
	if s.host == nil {
		return s.UnimplementedToolPluginServer.Host(stream)
	}
	s.host <- stream
	<-stream.Context().Done()
	return nil
}

// hostState asks the host, on the Host stream, for its state during the
// call req.
func (s *server) hostState(ctx context.Context, req *toolv1.ExecuteRequest) (*toolv1.GetStateResponse, error) {
	if s.host == nil || req.GetHostServiceId() == 0 {
		return nil, errors.New("this plugin does not ask the host")
	}
	var stream toolv1.ToolPlugin_HostServer
	select {
	case stream = <-s.host:
		s.host <- stream // for the next question
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.ask.Lock()
	defer s.ask.Unlock()
	q := &toolv1.HostQuestion{Id: req.GetCallId(), Question: &toolv1.HostQuestion_GetState{GetState: &toolv1.GetStateRequest{CallId: req.GetCallId()}}}
	if err := stream.Send(q); err != nil {
		return nil, err
	}
	a, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := a.GetError(); e != nil {
		return nil, errors.New(e.GetMessage())
	}
	return a.GetState(), nil
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
			_ = os.WriteFile(filepath.Join(root, "sigterm"), []byte(pidAnswer(os.Getpid())), 0o644)
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

	fd, err := strconv.Atoi(os.Getenv("AGENTHOST_PLUGIN_CONN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareplugin: the host passed no connection")
		os.Exit(1)
	}
	conn, err := net.FileConn(os.NewFile(uintptr(fd), "host"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareplugin:", err)
		os.Exit(1)
	}
	g := grpc.NewServer()
	toolv1.RegisterToolPluginServer(g, s)
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	if strings.HasSuffix(name, "-host") {
		s.host = make(chan toolv1.ToolPlugin_HostServer, 1)
	}

	fmt.Printf("1|1|unix|fd:%d|grpc\n", fd)
	// The server's one connection is the host's; when it ends, so does
	// the plugin.
	l := &oneConn{conn: conn, done: make(chan struct{})}
	_ = g.Serve(l)
}

// oneConn is a listener that yields the host's connection once, then
// waits until it is closed.
type oneConn struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = closing{l.conn, l} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

// closing ends the listener's wait when the connection is closed.
type closing struct {
	net.Conn
	l *oneConn
}

func (c closing) Close() error {
	err := c.Conn.Close()
	select {
	case <-c.l.done:
	default:
		close(c.l.done)
	}
	return err
}

// pidAnswer is how the plugin answers with a process id: the number and
// the PID namespace it is a number in ("12 pid:[4026531836]"), which a
// sandboxed plugin has of its own; the tests find the process by both
// (plugintest.HostPID).
func pidAnswer(pid int) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return strconv.Itoa(pid) + " " + ns
}
