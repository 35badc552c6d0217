package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/agenthost/agenthost/sdk/toolv1"
)

// cookieRefused is what a plugin started without the handshake cookie
// says on stderr before it exits; go-plugin's words, which the host
// recognises.
const cookieRefused = "This binary is a plugin. These are not meant to be executed directly.\n" +
	"Please execute the program that consumes these plugins, which will\n" +
	"load any plugins automatically\n"

// unixSocketDirEnv is go-plugin's variable naming the directory where an
// older host expects a plugin's socket.
const unixSocketDirEnv = "PLUGIN_UNIX_SOCKET_DIR"

// ServeOptions configure Serve.
type ServeOptions struct {
	// Logger receives why the plugin could not serve.
	Logger hclog.Logger
	// Version is the protocol version the plugin speaks; zero means
	// ProtocolVersion. Only tests speak another.
	Version int
}

// Serve serves srv as a plugin process, and returns the process's exit
// status once the host has gone (hostGone) or asked it to stop:
//  1. without the handshake cookie in its environment, it says it is a
//     plugin and returns 1;
//  2. it serves gRPC on the host's connection (ConnEnv) or, from a host
//     that passes none (before protocol 1.5), on a unix socket of its
//     own in PLUGIN_UNIX_SOCKET_DIR;
//  3. it prints the handshake line, CORE|VERSION|unix|ADDRESS|grpc, on
//     stdout, and from then on points os.Stdout at stderr, where the host
//     logs what arrives;
//  4. it serves the tool protocol, go-plugin's controller (Shutdown) and
//     the health service until the connection ends (the host closed it,
//     or died) or the host asks it to shut down.
//
// Interrupts (SIGINT) are ignored, as go-plugin's plugins ignore them: a
// plugin ends when its host says so.
func Serve(srv toolv1.ToolPluginServer, opts ServeOptions) (code int, hostGone bool) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if os.Getenv(CookieKey) != CookieValue {
		fmt.Fprint(os.Stderr, cookieRefused)
		return 1, false
	}
	version := opts.Version
	if version == 0 {
		version = ProtocolVersion
	}
	if !offered(os.Getenv("PLUGIN_PROTOCOL_VERSIONS"), version) {
		// Said anyway, as go-plugin does: the host refuses it in its own
		// words.
		logger.Warn("the host does not offer this plugin's protocol version", "version", version, "offered", os.Getenv("PLUGIN_PROTOCOL_VERSIONS"))
	}
	lis, err := hostListener()
	if err != nil {
		logger.Error("plugin init error", "error", err)
		return 1, false
	}
	defer lis.Close()
	s := NewGRPCServer(srv)
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	fmt.Printf("%d|%d|%s|%s|grpc\n", CoreProtocolVersion, version, lis.Addr().Network(), lis.Addr().String())
	_ = os.Stdout.Sync()
	os.Stdout = os.Stderr
	// Serve returns nil once Shutdown stopped the server; an error once
	// the host's connection ended, which closes its listener.
	if err := s.Serve(lis); err != nil {
		if !errors.Is(err, net.ErrClosed) {
			logger.Debug("the host's connection ended", "error", err)
		}
		return 0, true
	}
	return 0, false
}

// offered reports whether versions, go-plugin's comma-separated
// PLUGIN_PROTOCOL_VERSIONS, holds v; a host that says nothing offers
// every version.
func offered(versions string, v int) bool {
	if versions == "" {
		return true
	}
	return slices.Contains(strings.Split(versions, ","), strconv.Itoa(v))
}

// NewGRPCServer is the gRPC server of a plugin: srv's tool protocol,
// go-plugin's controller, whose Shutdown stops the server (and so ends
// the calls under way), and the health service, which go-plugin's Ping
// asks about the service "plugin".
func NewGRPCServer(srv toolv1.ToolPluginServer) *grpc.Server {
	s := NewServer(nil)
	toolv1.RegisterToolPluginServer(s, srv)
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	s.RegisterService(&controllerDesc, controller{s})
	return s
}

// controller is go-plugin's controller service, whose one method asks
// the plugin to shut down.
type controller struct{ s *grpc.Server }

// controllerDesc describes plugin.GRPCController, whose request and
// answer are empty messages, as Empty is.
var controllerDesc = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCController",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Shutdown",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			// Stopped once the answer is on its way: Stop closes the
			// connection the answer travels on.
			go srv.(controller).s.Stop()
			return new(emptypb.Empty), nil
		},
	}},
	Metadata: "grpc_controller.proto",
}

// hostListener is where the plugin serves: the host's connection, or a
// socket of its own for an older host.
func hostListener() (net.Listener, error) {
	if v, ok := os.LookupEnv(ConnEnv); ok {
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			return nil, fmt.Errorf("%s=%q does not name a descriptor", ConnEnv, v)
		}
		return ConnListener(fd)
	}
	dir := os.Getenv(unixSocketDirEnv)
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "plugin"); err != nil {
			return nil, err
		}
	}
	return net.Listen("unix", filepath.Join(dir, "plugin-"+strconv.Itoa(os.Getpid())+".sock"))
}

// ConnListener is a listener that accepts, once, the connection on
// descriptor fd, and then nothing: it is closed when that connection
// is, so that a server on it stops when its one client goes. Its address
// is "fd:N".
func ConnListener(fd int) (net.Listener, error) {
	f := os.NewFile(uintptr(fd), "host")
	if f == nil {
		return nil, fmt.Errorf("descriptor %d is not open", fd)
	}
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("the host's connection (descriptor %d): %w", fd, err)
	}
	l := &connListener{addr: connAddr(ConnAddrPrefix + strconv.Itoa(fd)), next: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.next <- &listenedConn{Conn: c, l: l}
	return l, nil
}

type connListener struct {
	addr   connAddr
	next   chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.next:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		select {
		case c := <-l.next:
			c.Close()
		default:
		}
	})
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// listenedConn closes its listener when it is closed.
type listenedConn struct {
	net.Conn
	l *connListener
}

func (c *listenedConn) Close() error {
	err := c.Conn.Close()
	c.l.Close()
	return err
}

// connAddr is the address "fd:N" of the host's connection.
type connAddr string

func (connAddr) Network() string  { return "unix" }
func (a connAddr) String() string { return string(a) }
