package sdk

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/internal/buildinfo"
	"github.com/agenthost/agenthost/internal/toolcall"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/internal/inprocess"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// Serve serves tools to the host that started this process, until the
// host ends it. A plugin's main is one call:
//
//	func main() { sdk.Serve(readFile, writeFile) }
//
// Serve declares no [Permissions]: the host gives the process its
// defaults. A plugin that needs less or more says so with [ServePlugin].
// Serve is ServePlugin(Plugin{Tools: tools}).
func Serve(tools ...Tool) {
	ServePlugin(Plugin{Tools: tools})
}

// Plugin is what a plugin binary serves: its tools, and the permissions
// its process needs to run them. A plugin keeps it in a package variable,
// which main serves with [ServePlugin] and its tests with sdktest.New.
type Plugin struct {
	// Tools are the tools the plugin serves. Each has a valid name of its
	// own (see toolcall.ValidName), and its schema names the tool's function.
	Tools []Tool

	// Permissions declare what the plugin's process needs beyond what the
	// host gives every plugin. The host may confine the process to them
	// (on Linux with Landlock), so a tool that reaches further fails with
	// a permission error; declare what the tools touch, and no more. The
	// zero value asks for nothing beyond the host's defaults.
	Permissions Permissions
}

// ServePlugin serves p to the host that started this process, until the
// host ends it. A plugin's main is one call:
//
//	func main() {
//		sdk.ServePlugin(sdk.Plugin{
//			Tools:       []sdk.Tool{readConfig},
//			Permissions: sdk.Permissions{Roots: sdk.RootsNone, Read: []string{"~/.config/mytool"}},
//		})
//	}
//
// A panic inside a tool becomes that call's error; the plugin keeps
// serving. ServePlugin panics if two tools share a name, a tool's schema
// names another function, or the permissions are malformed (see
// [Permissions.Validate]): all are programming errors.
//
// A host ends a plugin with no call under way by killing its process
// group; only a plugin shut down while it serves calls sees ServePlugin
// return. Nothing after it is sure to run, so a plugin keeps nothing that
// needs cleaning up at exit.
//
// Run by hand rather than by a host, the binary says so and exits.
func ServePlugin(p Plugin) {
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       filepath.Base(os.Args[0]),
		Level:      hclog.Trace,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	srv := newServer(logger, p)
	exitWithHost()
	code, hostGone := wire.Serve(srv, wire.ServeOptions{Logger: logger})
	if hostGone {
		leave(code)
	}
	os.Exit(code)
}

func init() { inprocess.Serve = serveInProcess }

// serveInProcess serves p as ServePlugin does, but inside the calling
// process and on lis, for sdktest, until ctx ends. The returned channel
// is closed once it has stopped serving.
func serveInProcess(ctx context.Context, p any, lis net.Listener, logger hclog.Logger) <-chan struct{} {
	s := wire.NewGRPCServer(newServer(logger, p.(Plugin)))
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = s.Serve(lis)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-closed:
		}
	}()
	return closed
}

// server is the plugin's end of the tool protocol.
type server struct {
	toolv1.UnimplementedToolPluginServer

	logger hclog.Logger
	tools  []Tool
	perms  Permissions
	byName map[string]servedTool

	// host is the host's end of the Host stream, once the host opened it.
	host hostLink
}

// servedTool is a tool with the logger its calls write to.
type servedTool struct {
	Tool
	logger hclog.Logger
}

func newServer(logger hclog.Logger, p Plugin) *server {
	if err := p.Permissions.Validate(); err != nil {
		panic("sdk.ServePlugin: " + err.Error())
	}
	s := &server{
		logger: logger,
		tools:  p.Tools,
		perms:  p.Permissions,
		byName: make(map[string]servedTool, len(p.Tools)),
		host:   hostLink{ready: make(chan struct{})},
	}
	for _, t := range p.Tools {
		name := t.Name()
		if !toolcall.ValidName(name) {
			panic(fmt.Sprintf("sdk.ServePlugin: invalid tool name %q", name))
		}
		if fn := t.Schema().Function.Name; fn != name {
			panic(fmt.Sprintf("sdk.ServePlugin: tool %q has a schema for function %q", name, fn))
		}
		if _, dup := s.byName[name]; dup {
			panic(fmt.Sprintf("sdk.ServePlugin: two tools named %q", name))
		}
		s.byName[name] = servedTool{Tool: t, logger: logger.Named(name)}
	}
	return s
}

func (s *server) Describe(context.Context, *toolv1.DescribeRequest) (*toolv1.DescribeResponse, error) {
	resp := &toolv1.DescribeResponse{
		PluginName:    filepath.Base(os.Args[0]),
		PluginVersion: buildinfo.VersionOrRevision(),
		ProtocolMinor: wire.ProtocolMinor,
		Permissions:   s.perms.Proto(),
	}
	for _, t := range s.tools {
		resp.Tools = append(resp.Tools, toolSpec(t))
	}
	return resp, nil
}

func (s *server) Execute(ctx context.Context, req *toolv1.ExecuteRequest) (*toolv1.ExecuteResponse, error) {
	t, ok := s.byName[req.GetTool()]
	if !ok {
		return &toolv1.ExecuteResponse{Error: fmt.Sprintf("this plugin serves no tool named %q", req.GetTool())}, nil
	}
	ctx = withLogger(ctx, t.logger)
	if roots := req.GetWorkspaceRoots(); len(roots) > 0 {
		ctx = WithRoots(ctx, roots)
	}
	if req.GetHostServiceId() != 0 {
		ctx = WithStateFunc(ctx, s.host.stateFunc(req.GetCallId()))
	}
	result, structured, err := s.run(ctx, t.Tool, req.GetArguments(), req.GetWantStructured())
	if err != nil && ctx.Err() != nil {
		// The call's deadline or the caller's cancellation ended it: say
		// so in the protocol, so the host reports the cause, not whatever
		// the tool made of it.
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	// Protobuf strings are UTF-8: bytes that are not reach the model as
	// U+FFFD rather than break the response.
	if err != nil {
		return &toolv1.ExecuteResponse{Error: validUTF8(err.Error())}, nil
	}
	// gRPC would refuse to send it, in its own words.
	if n := len(result) + len(structured); n > wire.MaxMessageSize {
		return &toolv1.ExecuteResponse{Error: wire.ResultTooLarge(n)}, nil
	}
	return &toolv1.ExecuteResponse{Result: validUTF8(result), StructuredResult: structured}, nil
}

// validUTF8 returns s with each run of bytes that is not UTF-8 replaced
// by U+FFFD. The check alone is much cheaper than strings.ToValidUTF8's
// walk, rune by rune, of a large result that is all UTF-8, as most are.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// run executes t, turning a panic into the call's error. A tool with an
// output schema returns its structured result too, when the host wants it.
func (s *server) run(ctx context.Context, t Tool, args []byte, wantStructured bool) (result string, structured []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("tool panicked", "tool", t.Name(), "panic", p, "stack", string(debug.Stack()))
			result, structured, err = "", nil, fmt.Errorf("panic: %v", p)
		}
	}()
	if st, ok := t.(StructuredTool); ok && wantStructured && st.OutputSchema() != nil {
		return st.ExecuteStructured(ctx, NormalizeArgs(args))
	}
	result, err = t.Execute(ctx, NormalizeArgs(args))
	return result, nil, err
}

func toolSpec(t Tool) *toolv1.ToolSpec {
	fn := t.Schema().Function
	a := AnnotationsOf(t)
	spec := &toolv1.ToolSpec{
		Name:             t.Name(),
		Description:      fn.Description,
		ParametersSchema: fn.Parameters,
		Annotations: &toolv1.Annotations{
			ReadOnly:    a.ReadOnly,
			Destructive: a.Destructive,
			Idempotent:  a.Idempotent,
			OpenWorld:   a.OpenWorld,
		},
		OptIn:        a.OptIn,
		TimeoutMs:    uint32(min(a.Timeout.Milliseconds(), math.MaxUint32)),
		Title:        TitleOf(t),
		OutputSchema: OutputSchemaOf(t),
	}
	// A typed tool checks its arguments itself: Execute validates them
	// against the very schema above.
	_, spec.ChecksArguments = t.(toolcall.Preparer)
	return spec
}
