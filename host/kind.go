package host

import (
	"context"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// A sourceKind is what one kind of tool source does its own way: how an
// instance of it is launched and how a call reaches it, how it is named
// in messages and reports, and what its configuration says of its tools.
// Everything else (one launch shared by waiting callers, backoff and the
// breaker, idle stop, the hang probe, a bounded close) is the lifecycle
// of toolSource, the same for every kind. There are three: a plugin
// binary the host starts (pluginKind), a plugin already running that the
// host attaches to (attachedKind), and an MCP server (mcpKind).
type sourceKind interface {
	// noun is "plugin" or "MCP server".
	noun() string
	// label names the source in messages: "plugin NAME".
	label(p *toolSource) string
	// launch starts (or connects to) a new instance of the source.
	launch(p *toolSource) (*instance, error)
	// call runs one of the source's tools: its text, its structured
	// result (nil when it has none) and its content parts (nil when the
	// text says all).
	call(ctx context.Context, p *toolSource, tool string, args []byte, wantStructured bool) (string, []byte, []Content, error)
	// describe asks the source what it serves.
	describe(ctx context.Context, p *toolSource) (*description, error)
	// hostStarted: the host starts the source's processes, in its
	// sandbox, and may restart them.
	hostStarted() bool
	// report adds what the kind knows to the source's report.
	report(rep *SourceReport)
	// toolName is the name a tool the source calls name registers under.
	toolName(name string) string
	// toolTimeout is the deadline the configuration sets for the
	// source's tools; 0: the tools' own.
	toolTimeout() time.Duration
	// renameHint says how a tool of the source whose name is taken could
	// be registered all the same.
	renameHint(name string) string
}

// pluginKind is a plugin binary of the plugins directory (plugin.go).
type pluginKind struct{}

func (pluginKind) noun() string                            { return "plugin" }
func (pluginKind) label(p *toolSource) string              { return "plugin " + p.name }
func (pluginKind) hostStarted() bool                       { return true }
func (pluginKind) report(*SourceReport)                    {}
func (pluginKind) toolName(name string) string             { return name }
func (pluginKind) toolTimeout() time.Duration              { return 0 }
func (pluginKind) launch(p *toolSource) (*instance, error) { return p.launchPlugin() }

func (pluginKind) call(ctx context.Context, p *toolSource, tool string, args []byte, wantStructured bool) (string, []byte, []Content, error) {
	text, structured, err := p.execute(ctx, tool, args, wantStructured)
	return text, structured, nil, err
}

func (pluginKind) describe(ctx context.Context, p *toolSource) (*description, error) {
	return p.describePlugin(ctx)
}

func (pluginKind) renameHint(name string) string {
	return "register it under a different name, such as " + name + "_v2"
}

// attachedKind is a plugin that was running already, which the host
// connects to once (AttachPlugin, attach.go) and neither starts nor
// stops; it is spoken to as a plugin binary is.
type attachedKind struct{ pluginKind }

func (attachedKind) launch(p *toolSource) (*instance, error) { return p.attach() }
func (attachedKind) hostStarted() bool                       { return false }

// mcpKind is an MCP server of the configuration (mcp.go), over stdio or
// HTTP.
type mcpKind struct{ server *MCPServer }

func (k mcpKind) noun() string                            { return "MCP server" }
func (k mcpKind) label(*toolSource) string                { return "MCP server " + textsafe.Name(k.server.Name) }
func (k mcpKind) hostStarted() bool                       { return true }
func (k mcpKind) toolTimeout() time.Duration              { return k.server.Timeout }
func (k mcpKind) launch(p *toolSource) (*instance, error) { return p.launchMCPRepairing(k.server) }

func (k mcpKind) call(ctx context.Context, p *toolSource, tool string, args []byte, _ bool) (string, []byte, []Content, error) {
	return p.callMCP(ctx, tool, args)
}

func (k mcpKind) describe(ctx context.Context, p *toolSource) (*description, error) {
	return p.describeMCP(ctx)
}

func (k mcpKind) report(rep *SourceReport) {
	rep.MCP, rep.Remote = k.server.Name, k.server.transport() != "stdio"
}

func (k mcpKind) toolName(name string) string {
	if k.server.Prefix != "" {
		return k.server.Prefix + "_" + name
	}
	return name
}

func (k mcpKind) renameHint(name string) string { return k.prefixHint(name) }

// A link is how the host holds a running instance: a go-plugin client of
// a process it started, a connection to an attached plugin, or an MCP
// session. An instance has none until its launch got that far.
type link interface {
	// ended reports whether the other side is gone.
	ended(inst *instance) bool
	// ping checks that the instance still answers.
	ping(ctx context.Context, inst *instance) error
	// idleKill: with no call in flight, the instance has nothing left to
	// finish, and its process group may be killed at once.
	idleKill() bool
	// close ends the link, and with it the instance; graceful: calls are
	// in flight, which the instance is asked to end first.
	close(inst *instance, graceful bool)
}

// goPluginLink is go-plugin's client of a plugin process the host
// started, and the gRPC connection under it.
type goPluginLink struct {
	client *plugin.Client
	grpc   *grpc.ClientConn // nil until the client connected
}

func (l *goPluginLink) ended(*instance) bool { return l.client.Exited() }
func (l *goPluginLink) idleKill() bool       { return true }

// ping asks for the plugin's description, which every plugin serves.
func (l *goPluginLink) ping(ctx context.Context, inst *instance) error {
	_, err := inst.conn.Describe(ctx, &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	return err
}

func (l *goPluginLink) close(inst *instance, graceful bool) {
	if graceful {
		l.shutdown(inst)
	}
	l.client.Kill()
}

// attachedLink is the connection to an attached plugin, whose process is
// not the host's: it is spoken to as a started plugin is, but never
// killed.
type attachedLink struct{ goPluginLink }

func (l *attachedLink) idleKill() bool { return false }

// close disconnects. The plugin is not the host's to stop.
func (l *attachedLink) close(*instance, bool) { l.grpc.Close() }

// mcpLink is an MCP server's session (inst.mcp).
type mcpLink struct{}

func (mcpLink) idleKill() bool { return false }

func (mcpLink) ended(inst *instance) bool {
	select {
	case <-inst.mcp.Done():
		return true
	default:
		return false
	}
}

func (mcpLink) ping(ctx context.Context, inst *instance) error { return inst.mcp.Ping(ctx) }

// close asks an MCP server over stdio to stop as MCP's stdio transport
// says: its stdin closed (the session's Close does), then, if it has not
// exited termGrace later, SIGTERM to its process group; Stop kills the
// group once the time a plugin has to exit is over. A server with a
// request of its own under way when its stdin closes (a roots/list it
// sent as the session ended, say) waits for the answer that cannot come,
// and would sit out that time at every stop.
func (mcpLink) close(inst *instance, _ bool) {
	inst.mcp.Close()
	r := inst.runner
	if r == nil {
		return
	}
	grace := time.NewTimer(termGrace)
	defer grace.Stop()
	select {
	case <-r.Done():
		return
	case <-grace.C:
	}
	_ = r.SignalGroup(syscall.SIGTERM)
	<-r.Done()
}
