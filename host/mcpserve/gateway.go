package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// gateway passes on to the MCP clients what the registry's MCP servers
// offer besides tools, and what they say and ask during a call:
//   - their prompts, resources and resource templates (listed, got, read,
//     subscribed to and completed through the registry; see
//     host.ToolRegistry.MCPPrompts), with notifications/prompts/list_changed,
//     notifications/resources/list_changed and
//     notifications/resources/updated as the servers send them;
//   - during a tools/call, the server's notifications/progress (when the
//     call has a progress token), its notifications/message (at the level
//     the client set with logging/setLevel), and its
//     sampling/createMessage and elicitation/create requests, when the
//     client declared those capabilities and its session can be sent
//     requests (not Stateless, protocol before 2026-07-28); otherwise the
//     server is told they are not supported. See host.MCPPeer for how a
//     server's request finds its call.
//
// A registry without MCP servers offers none of it: the methods are not
// found, as for a tools-only server.
type gateway struct {
	reg    *host.ToolRegistry
	server *mcp.Server
	// on: the registry has MCP servers.
	on bool

	mu     sync.Mutex
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

// pulseName is the name (and URI) of the prompt and resource added to
// the SDK's server and removed at once to have it tell the clients that
// the list changed: the lists themselves are the registry's, answered by
// the middleware.
const pulseName = "agenthost:list-changed"

// capabilities are what the server declares: tools, and with MCP servers
// behind it, prompts, resources (with subscriptions), completions and
// logging.
func (g *gateway) capabilities() *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	if g.on {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
		caps.Completions = &mcp.CompletionCapabilities{}
		caps.Logging = &mcp.LoggingCapabilities{}
	}
	return caps
}

// options sets the handlers of the server's options that the gateway
// answers through the SDK: subscriptions, whose sessions the SDK keeps
// for notifications/resources/updated, and completions.
func (g *gateway) options(opts *mcp.ServerOptions) {
	if !g.on {
		return
	}
	opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
		return g.reg.MCPSubscribe(ctx, req.Params.URI)
	}
	opts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		return g.reg.MCPUnsubscribe(ctx, req.Params.URI)
	}
	opts.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return g.reg.MCPComplete(ctx, req.Params)
	}
}

// serves reports whether the gateway answers method, which a tools-only
// server does not find.
func (g *gateway) serves(method string) bool {
	if !g.on {
		return false
	}
	switch method {
	case "logging/setLevel", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete":
		return true
	}
	return false
}

// follow passes on the servers' announcements until the returned
// function is called.
func (g *gateway) follow() (stop func()) {
	if !g.on {
		return func() {}
	}
	return g.reg.OnMCPEvent(func(ev host.MCPEvent) {
		switch ev.Kind {
		case host.MCPPromptsChanged:
			g.server.AddPrompt(&mcp.Prompt{Name: pulseName}, nil)
			g.server.RemovePrompts(pulseName)
		case host.MCPResourcesChanged:
			g.server.AddResource(&mcp.Resource{URI: pulseName, Name: pulseName}, nil)
			g.server.RemoveResources(pulseName)
		case host.MCPResourceUpdated:
			_ = g.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: ev.URI})
		}
	})
}

// middleware answers the methods of prompts and resources from the
// registry, keeps each session's log level, and puts the client in
// front of each of its tools/call (host.WithMCPPeer).
func (g *gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !g.on {
			return next(ctx, method, req)
		}
		switch req := req.(type) {
		case *mcp.CallToolRequest:
			if method == "tools/call" && req.Session != nil {
				ctx = host.WithMCPPeer(ctx, g.peer(ctx, req))
			}
		case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
			res, err := next(ctx, method, req)
			if err == nil && req.Params != nil && req.Session != nil {
				g.setLevel(req.Session, req.Params.Level)
			}
			return res, err
		case *mcp.ListPromptsRequest:
			return &mcp.ListPromptsResult{Prompts: orEmpty(g.reg.MCPPrompts(ctx))}, nil
		case *mcp.GetPromptRequest:
			if req.Params == nil {
				return nil, invalidParams("prompts/get: missing params")
			}
			return g.reg.MCPGetPrompt(ctx, req.Params.Name, req.Params.Arguments)
		case *mcp.ListResourcesRequest:
			return &mcp.ListResourcesResult{Resources: orEmpty(g.reg.MCPResources(ctx))}, nil
		case *mcp.ListResourceTemplatesRequest:
			return &mcp.ListResourceTemplatesResult{ResourceTemplates: orEmpty(g.reg.MCPResourceTemplates(ctx))}, nil
		case *mcp.ReadResourceRequest:
			if req.Params == nil {
				return nil, invalidParams("resources/read: missing params")
			}
			return g.reg.MCPReadResource(ctx, req.Params.URI)
		}
		return next(ctx, method, req)
	}
}

// invalidParams is the error answer to a request without what it needs.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// orEmpty is list, or an empty list for nil: the results' lists are
// required.
func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// setLevel keeps the log level a session's client set, until the
// session ends.
func (g *gateway) setLevel(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.levels == nil {
		g.levels = map[*mcp.ServerSession]mcp.LoggingLevel{}
	}
	if _, known := g.levels[ss]; !known {
		go func() {
			ss.Wait()
			g.mu.Lock()
			delete(g.levels, ss)
			g.mu.Unlock()
		}()
	}
	g.levels[ss] = level
}

// peer is the client in front of a tools/call: it takes the call's
// progress (when it gave a progress token) and the servers' log messages
// (at the level it set), and answers sampling and elicitation requests
// when it declared them and its session can be sent requests.
func (g *gateway) peer(ctx context.Context, req *mcp.CallToolRequest) *host.MCPPeer {
	ss := req.Session
	p := &host.MCPPeer{Key: ss}
	if req.Params != nil {
		if token := req.Params.GetProgressToken(); token != nil {
			p.Progress = func(n *mcp.ProgressNotificationParams) {
				_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n.Progress, Total: n.Total, Message: n.Message})
			}
		}
	}
	// The level the client set for its session, or (protocol 2026-07-28
	// and later) in the request's _meta.
	g.mu.Lock()
	level, set := g.levels[ss]
	g.mu.Unlock()
	if req.Params != nil {
		if l, ok := req.Params.GetMeta()[mcp.MetaKeyLogLevel].(string); ok && l != "" {
			level, set = mcp.LoggingLevel(l), true
		}
	}
	if set {
		p.LogLevel = level
		p.Log = func(m *mcp.LoggingMessageParams) { _ = ss.Log(ctx, m) }
	}
	init := ss.InitializeParams()
	if ctx.Value(noServerRequests{}) != nil || req.ProtocolVersion() >= firstSessionless || init == nil || init.Capabilities == nil {
		return p
	}
	if init.Capabilities.Sampling != nil {
		p.CreateMessage = func(asked context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
			ctx, stop := within(ctx, asked)
			defer stop()
			return ss.CreateMessageWithTools(ctx, params)
		}
	}
	if formElicitation(init) {
		p.Elicit = func(asked context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			ctx, stop := within(ctx, asked)
			defer stop()
			answer := &elicitAnswer{}
			res, err := ss.Elicit(context.WithValue(ctx, elicitAnswerKey{}, answer), params)
			if err != nil && answer.res != nil {
				// The SDK checks the answer against the form's schema,
				// and refuses the kinds of choices it does not know: the
				// server that asked checks it.
				return answer.res, nil
			}
			return res, err
		}
	}
	return p
}

// elicitAnswer is where sending keeps the client's answer to an
// elicitation/create passed on from a server.
type elicitAnswer struct{ res *mcp.ElicitResult }

type elicitAnswerKey struct{}

// sending keeps the client's answer to an elicitation/create that the
// gateway passes on (elicitAnswer), as the client sent it.
func (g *gateway) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if a, ok := ctx.Value(elicitAnswerKey{}).(*elicitAnswer); ok && err == nil && method == "elicitation/create" {
			a.res, _ = res.(*mcp.ElicitResult)
		}
		return res, err
	}
}

// within returns the call's context ctx (over HTTP, the SDK sends a
// request in the stream of the request whose context it is given),
// ended also when asked ends.
func within(ctx, asked context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(asked, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// callContent is a result's content parts as MCP content for a client of
// protocol version: a part that version has no type for (audio before
// 2025-03-26, a resource link before 2025-06-18) is a text that says what
// it was.
func callContent(parts []host.Content, version string) []mcp.Content {
	out := make([]mcp.Content, 0, len(parts))
	for _, c := range parts {
		ann := annotations(c.Annotations)
		meta := meta(c.Meta)
		switch {
		case c.Type == host.ContentText:
			out = append(out, &mcp.TextContent{Text: c.Text, Annotations: ann, Meta: meta})
		case c.Type == host.ContentImage:
			out = append(out, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType, Annotations: ann, Meta: meta})
		case c.Type == host.ContentAudio && version >= "2025-03-26":
			out = append(out, &mcp.AudioContent{Data: c.Data, MIMEType: c.MIMEType, Annotations: ann, Meta: meta})
		case c.Type == host.ContentResourceLink && version >= "2025-06-18":
			out = append(out, &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description,
				MIMEType: c.MIMEType, Size: c.Size, Annotations: ann, Meta: meta})
		case c.Type == host.ContentResource:
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Data}, Annotations: ann, Meta: meta})
		case c.Type == host.ContentAudio:
			out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[audio: %d bytes, %s]", len(c.Data), textsafe.Name(c.MIMEType))})
		case c.Type == host.ContentResourceLink:
			out = append(out, &mcp.TextContent{Text: "[resource link: " + textsafe.Name(c.URI) + "]"})
		}
	}
	return out
}

// annotations decodes a part's MCP annotations; nil for none.
func annotations(raw json.RawMessage) *mcp.Annotations {
	if raw == nil {
		return nil
	}
	a := &mcp.Annotations{}
	if json.Unmarshal(raw, a) != nil {
		return nil
	}
	return a
}

// meta decodes a part's _meta; nil for none.
func meta(raw json.RawMessage) mcp.Meta {
	if raw == nil {
		return nil
	}
	var m mcp.Meta
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
