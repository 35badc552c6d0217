package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/mcpsource"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// What the registry's MCP servers offer besides tools: their prompts,
// resources and resource templates, listed, got and read through the
// registry for agenthost mcp to pass on. A prompt is named as the
// server's tools are (its mcpServers entry's prefix, PREFIX_NAME); a
// resource and a template keep their URIs, and their names take the
// prefix. When two servers offer a prompt of the same name, or a
// resource of the same URI, the first in the configuration's order is
// offered.
//
// Listing asks every server that declares the feature, starting those
// that are not running; a server that has never run since its tools were
// cached is started once to learn what it declares (the description
// cache keeps that too). Reading a resource goes to the server that
// lists its URI, else to the one whose template matches it, else, when
// only one server serves resources, to that one. None of it passes the
// registry's interceptors: those are for tool calls.

// MCPEventKind says what changed (MCPEvent).
type MCPEventKind int

// The kinds of MCPEvent.
const (
	// MCPPromptsChanged: a server's list of prompts changed.
	MCPPromptsChanged MCPEventKind = iota + 1
	// MCPResourcesChanged: a server's list of resources changed.
	MCPResourcesChanged
	// MCPResourceUpdated: a resource subscribed to (MCPSubscribe)
	// changed.
	MCPResourceUpdated
)

// MCPEvent is a change an MCP server announced.
type MCPEvent struct {
	Kind MCPEventKind
	// URI is the resource's, for MCPResourceUpdated.
	URI string
}

// mcpFeatures is what an MCP server declared besides tools, as the
// description cache keeps it.
type mcpFeatures struct {
	Prompts     bool `json:"prompts,omitempty"`
	Resources   bool `json:"resources,omitempty"`
	Subscribe   bool `json:"subscribe,omitempty"`
	Completions bool `json:"completions,omitempty"`
}

func featuresOf(f mcpsource.Features) *mcpFeatures {
	return &mcpFeatures{Prompts: f.Prompts, Resources: f.Resources, Subscribe: f.Subscribe, Completions: f.Completions}
}

// mcpCatalog is where the registry's MCP servers' prompts and resources
// are found: what each server declared, and which serves each prompt,
// resource and template, as last listed.
type mcpCatalog struct {
	mu        sync.Mutex
	features  map[*toolSource]*mcpFeatures
	prompts   map[string]promptRoute
	resources map[string]*toolSource
	templates []templateRoute
	// subs are the resources subscribed to, by URI: renewed when their
	// server starts again.
	subs map[string]*subscription

	listenMu  sync.Mutex
	listeners map[int]func(MCPEvent)
	next      int
}

type promptRoute struct {
	source *toolSource
	remote string
}

type templateRoute struct {
	source   *toolSource
	template string
	match    *regexp.Regexp
}

type subscription struct {
	source *toolSource
	count  int
}

// OnMCPEvent has f called when an MCP server of the registry announces
// that its prompts or resources changed, or a resource subscribed to
// was updated. f runs on the goroutine that delivers the server's
// notifications; it should return soon. The returned function stops the
// calls.
func (r *ToolRegistry) OnMCPEvent(f func(MCPEvent)) (stop func()) {
	c := &r.catalog
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	if c.listeners == nil {
		c.listeners = map[int]func(MCPEvent){}
	}
	id := c.next
	c.next++
	c.listeners[id] = f
	return func() {
		c.listenMu.Lock()
		delete(c.listeners, id)
		c.listenMu.Unlock()
	}
}

// emit calls the OnMCPEvent functions.
func (c *mcpCatalog) emit(ev MCPEvent) {
	c.listenMu.Lock()
	fs := make([]func(MCPEvent), 0, len(c.listeners))
	for _, f := range c.listeners {
		fs = append(fs, f)
	}
	c.listenMu.Unlock()
	for _, f := range fs {
		f(ev)
	}
}

// HasMCPServers reports whether the registry has MCP servers, whose
// prompts and resources it may offer.
func (r *ToolRegistry) HasMCPServers() bool { return len(r.mcpSources()) > 0 }

// mcpSources are the registry's MCP servers, in the configuration's
// order.
func (r *ToolRegistry) mcpSources() []*toolSource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*toolSource
	for _, p := range r.plugins {
		if _, ok := p.kind.(mcpKind); ok {
			out = append(out, p)
		}
	}
	return out
}

// mcpStarted learns what a server that has just started declares, and
// renews the subscriptions to its resources.
func (p *toolSource) mcpStarted(inst *instance) {
	c := p.catalog
	if c == nil {
		return
	}
	f := featuresOf(inst.mcp.Features())
	c.mu.Lock()
	if c.features == nil {
		c.features = map[*toolSource]*mcpFeatures{}
	}
	c.features[p] = f
	var uris []string
	for uri, s := range c.subs {
		if s.source == p {
			uris = append(uris, uri)
		}
	}
	c.mu.Unlock()
	if len(uris) == 0 || !f.Subscribe {
		return
	}
	p.life.Go(func() {
		ctx, cancel := p.bounded(p.startTimeout)
		defer cancel()
		for _, uri := range uris {
			if err := inst.mcp.Subscribe(ctx, uri); err != nil {
				p.logger.Warn("could not renew a subscription to a resource", "uri", textsafe.Name(uri), "error", err)
			}
		}
	})
}

// mcpEvent passes on a change the server announced.
func (p *toolSource) mcpEvent(ev MCPEvent) {
	if p.catalog != nil {
		p.catalog.emit(ev)
	}
}

// offers reports whether the server p may offer what want picks: what it
// declared when it last started, else what the description cache says,
// else (not known) yes.
func (r *ToolRegistry) offers(p *toolSource, want func(*mcpFeatures) bool) bool {
	c := &r.catalog
	c.mu.Lock()
	f := c.features[p]
	c.mu.Unlock()
	if f == nil {
		if desc := r.cache.lookupID(p.cacheID); desc != nil {
			f = desc.MCP
		}
	}
	return f == nil || want(f)
}

// onServers runs ask with a running instance of each MCP server that
// may offer what want picks, in parallel, and returns the results in the
// configuration's order. A server that fails is left out, with a
// warning.
func onServers[T any](ctx context.Context, r *ToolRegistry, what string, want func(*mcpFeatures) bool, ask func(context.Context, *toolSource, *instance) (T, error)) ([]*toolSource, []T) {
	sources := r.mcpSources()
	results := make([]T, len(sources))
	ok := make([]bool, len(sources))
	var wg sync.WaitGroup
	for i, p := range sources {
		if !r.offers(p, want) {
			continue
		}
		wg.Go(func() {
			v, err := onServer(ctx, p, want, ask)
			if err != nil {
				if !errors.Is(err, errNotOffered) && ctx.Err() == nil {
					r.logger.Warn("could not list what an MCP server offers", "server", p.name, "what", what, "error", err)
				}
				return
			}
			results[i], ok[i] = v, true
		})
	}
	wg.Wait()
	var srcs []*toolSource
	var out []T
	for i := range sources {
		if ok[i] {
			srcs = append(srcs, sources[i])
			out = append(out, results[i])
		}
	}
	return srcs, out
}

// errNotOffered: the server does not declare the feature.
var errNotOffered = errors.New("the server does not offer it")

// onServer runs ask with a running instance of p, starting one if need
// be, when it declares what want picks.
func onServer[T any](ctx context.Context, p *toolSource, want func(*mcpFeatures) bool, ask func(context.Context, *toolSource, *instance) (T, error)) (T, error) {
	var zero T
	inst, err := p.instance(ctx)
	if err != nil {
		return zero, p.startFailure(ctx, err)
	}
	defer p.release(inst)
	if !want(featuresOf(inst.mcp.Features())) {
		return zero, errNotOffered
	}
	v, err := ask(ctx, p, inst)
	if err != nil {
		return zero, p.mcpFeatureError(ctx, inst, err)
	}
	return v, nil
}

// mcpFeatureError words a failed request of a server's prompts or
// resources: the server's own error answer keeps its code, in a
// *jsonrpc.Error whose message names the server; any other failure is
// worded as a call's (mcpCallError).
func (p *toolSource) mcpFeatureError(ctx context.Context, inst *instance, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && ctx.Err() == nil && !inst.Dead() {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: fmt.Sprintf("%s answered: %s", p.what(), rpcErr.Message), Data: rpcErr.Data}
	}
	return p.mcpCallError(ctx, inst, err)
}

func wantPrompts(f *mcpFeatures) bool   { return f.Prompts }
func wantResources(f *mcpFeatures) bool { return f.Resources }

// MCPPrompts lists the prompts of the registry's MCP servers, each named
// as the server's tools are (PREFIX_NAME with a prefix).
func (r *ToolRegistry) MCPPrompts(ctx context.Context) []*mcp.Prompt {
	srcs, lists := onServers(ctx, r, "prompts", wantPrompts, func(ctx context.Context, _ *toolSource, inst *instance) ([]*mcp.Prompt, error) {
		return inst.mcp.Prompts(ctx)
	})
	routes := map[string]promptRoute{}
	var out []*mcp.Prompt
	for i, list := range lists {
		p := srcs[i]
		for _, prompt := range list {
			if prompt == nil {
				continue
			}
			name := p.kind.toolName(prompt.Name)
			if _, taken := routes[name]; taken {
				r.logger.Warn("leaving out a prompt whose name is taken", "server", p.name, "prompt", textsafe.Name(name))
				continue
			}
			routes[name] = promptRoute{source: p, remote: prompt.Name}
			offered := *prompt
			offered.Name = name
			out = append(out, &offered)
		}
	}
	r.catalog.mu.Lock()
	r.catalog.prompts = routes
	r.catalog.mu.Unlock()
	return out
}

// MCPGetPrompt gets a prompt of MCPPrompts, by the name it has there,
// with args. A name no server offers is a *jsonrpc.Error of code
// CodeInvalidParams; a server's error answer is a *jsonrpc.Error with
// the server's code.
func (r *ToolRegistry) MCPGetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	route, ok := r.promptRoute(name)
	if !ok {
		r.MCPPrompts(ctx)
		if route, ok = r.promptRoute(name); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + textsafe.Name(name)}
		}
	}
	return intercepted(ctx, r, route.source, "prompts/get", map[string]any{"name": name, "arguments": args}, func(ctx context.Context) (*mcp.GetPromptResult, error) {
		return onServer(ctx, route.source, wantPrompts, func(ctx context.Context, _ *toolSource, inst *instance) (*mcp.GetPromptResult, error) {
			return inst.mcp.GetPrompt(ctx, route.remote, args)
		})
	})
}

func (r *ToolRegistry) promptRoute(name string) (promptRoute, bool) {
	r.catalog.mu.Lock()
	defer r.catalog.mu.Unlock()
	route, ok := r.catalog.prompts[name]
	return route, ok
}

// MCPResources lists the resources of the registry's MCP servers, their
// names prefixed as the server's tools are.
func (r *ToolRegistry) MCPResources(ctx context.Context) []*mcp.Resource {
	srcs, lists := onServers(ctx, r, "resources", wantResources, func(ctx context.Context, _ *toolSource, inst *instance) ([]*mcp.Resource, error) {
		return inst.mcp.Resources(ctx)
	})
	routes := map[string]*toolSource{}
	var out []*mcp.Resource
	for i, list := range lists {
		p := srcs[i]
		for _, res := range list {
			if res == nil {
				continue
			}
			if _, taken := routes[res.URI]; taken {
				r.logger.Warn("leaving out a resource whose URI another server offers", "server", p.name, "uri", textsafe.Name(res.URI))
				continue
			}
			routes[res.URI] = p
			offered := *res
			offered.Name = p.kind.toolName(res.Name)
			out = append(out, &offered)
		}
	}
	r.catalog.mu.Lock()
	r.catalog.resources = routes
	r.catalog.mu.Unlock()
	return out
}

// MCPResourceTemplates lists the resource templates of the registry's
// MCP servers, their names prefixed as the server's tools are.
func (r *ToolRegistry) MCPResourceTemplates(ctx context.Context) []*mcp.ResourceTemplate {
	srcs, lists := onServers(ctx, r, "resource templates", wantResources, func(ctx context.Context, _ *toolSource, inst *instance) ([]*mcp.ResourceTemplate, error) {
		return inst.mcp.ResourceTemplates(ctx)
	})
	var routes []templateRoute
	seen := map[string]bool{}
	var out []*mcp.ResourceTemplate
	for i, list := range lists {
		p := srcs[i]
		for _, t := range list {
			if t == nil || seen[t.URITemplate] {
				continue
			}
			seen[t.URITemplate] = true
			routes = append(routes, templateRoute{source: p, template: t.URITemplate, match: templatePattern(t.URITemplate)})
			offered := *t
			offered.Name = p.kind.toolName(t.Name)
			out = append(out, &offered)
		}
	}
	r.catalog.mu.Lock()
	r.catalog.templates = routes
	r.catalog.mu.Unlock()
	return out
}

// MCPReadResource reads the resource at uri from the server that serves
// it. A URI that no server is found to serve is mcp.ResourceNotFoundError;
// a server's error answer is a *jsonrpc.Error with the server's code.
func (r *ToolRegistry) MCPReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	p := r.resourceSource(ctx, uri)
	if p == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return intercepted(ctx, r, p, "resources/read", map[string]any{"uri": uri}, func(ctx context.Context) (*mcp.ReadResourceResult, error) {
		return onServer(ctx, p, wantResources, func(ctx context.Context, _ *toolSource, inst *instance) (*mcp.ReadResourceResult, error) {
			return inst.mcp.ReadResource(ctx, uri)
		})
	})
}

// codeDenied is the JSON-RPC error code of a request the registry's
// interceptors refused (a policy's denial).
const codeDenied = -31002

// intercepted runs a request for what a server serves besides tools (a
// resource read, a prompt) through the registry's interceptors, as a
// call named what (resources/read, prompts/get) of the server's source,
// with args as its arguments: a policy decides it (mcp:SERVER rules, and
// mcp:SERVER(uri=GLOB)), and a record has it, as for a tool. A request
// an interceptor refuses is a *jsonrpc.Error with its text.
func intercepted[T any](ctx context.Context, r *ToolRegistry, p *toolSource, what string, args any, run func(context.Context) (T, error)) (T, error) {
	var out T
	var runErr error
	raw, err := json.Marshal(args)
	if err != nil {
		return out, err
	}
	call := &Call{Tool: what, Source: p.name, Args: raw, Annotations: Annotations{ReadOnly: true}, Roots: slices.Clone(r.roots)}
	call.Caller, _ = ctx.Value(callerKey{}).(string)
	res := r.intercept(ctx, call, func(ctx context.Context, _ *Call) Result {
		if out, runErr = run(ctx); runErr != nil {
			return Result{Text: failure(what, runErr), IsError: true}
		}
		return Result{}
	})
	switch {
	case runErr != nil:
		return out, runErr
	case res.IsError:
		var none T
		return none, &jsonrpc.Error{Code: codeDenied, Message: res.Text}
	}
	return out, nil
}

// resourceSource finds the server of the resource at uri: the one that
// lists it, else the one with a template that matches it (the lists
// are asked for once when neither is known), else the only server that
// serves resources. Nil when none is.
func (r *ToolRegistry) resourceSource(ctx context.Context, uri string) *toolSource {
	if p := r.knownResource(uri); p != nil {
		return p
	}
	r.MCPResources(ctx)
	r.MCPResourceTemplates(ctx)
	if p := r.knownResource(uri); p != nil {
		return p
	}
	var only *toolSource
	for _, p := range r.mcpSources() {
		if !r.offers(p, wantResources) {
			continue
		}
		if only != nil {
			return nil
		}
		only = p
	}
	return only
}

// knownResource is the server that last listed uri, or whose template
// matches it.
func (r *ToolRegistry) knownResource(uri string) *toolSource {
	c := &r.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.resources[uri]; p != nil {
		return p
	}
	for _, t := range c.templates {
		if t.match != nil && t.match.MatchString(uri) {
			return t.source
		}
	}
	return nil
}

// MCPSubscribe subscribes to updates of the resource at uri, at the
// server that serves it (see OnMCPEvent, MCPResourceUpdated). Each
// subscription is counted: the server is asked to end it when
// MCPUnsubscribe has been called as many times.
func (r *ToolRegistry) MCPSubscribe(ctx context.Context, uri string) error {
	p := r.resourceSource(ctx, uri)
	if p == nil {
		return mcp.ResourceNotFoundError(uri)
	}
	c := &r.catalog
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]*subscription{}
	}
	s := c.subs[uri]
	if s != nil && s.source == p {
		s.count++
		c.mu.Unlock()
		return nil
	}
	c.subs[uri] = &subscription{source: p, count: 1}
	c.mu.Unlock()
	_, err := onServer(ctx, p, func(f *mcpFeatures) bool { return f.Subscribe }, func(ctx context.Context, _ *toolSource, inst *instance) (struct{}, error) {
		return struct{}{}, inst.mcp.Subscribe(ctx, uri)
	})
	if err != nil {
		c.mu.Lock()
		if c.subs[uri] != nil && c.subs[uri].count == 1 {
			delete(c.subs, uri)
		}
		c.mu.Unlock()
		if errors.Is(err, errNotOffered) {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s takes no subscriptions to resources", p.what())}
		}
	}
	return err
}

// MCPUnsubscribe ends a subscription of MCPSubscribe.
func (r *ToolRegistry) MCPUnsubscribe(ctx context.Context, uri string) error {
	c := &r.catalog
	c.mu.Lock()
	s := c.subs[uri]
	if s == nil {
		c.mu.Unlock()
		return nil
	}
	if s.count--; s.count > 0 {
		c.mu.Unlock()
		return nil
	}
	delete(c.subs, uri)
	c.mu.Unlock()
	_, err := onServer(ctx, s.source, func(f *mcpFeatures) bool { return f.Subscribe }, func(ctx context.Context, _ *toolSource, inst *instance) (struct{}, error) {
		return struct{}{}, inst.mcp.Unsubscribe(ctx, uri)
	})
	return err
}

// MCPComplete passes a completion/complete request to the server of the
// prompt (by its name in MCPPrompts) or resource template it is about.
func (r *ToolRegistry) MCPComplete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: missing ref"}
	}
	asked := *params
	ref := *params.Ref
	asked.Ref = &ref
	var p *toolSource
	switch ref.Type {
	case "ref/prompt":
		route, ok := r.promptRoute(ref.Name)
		if !ok {
			r.MCPPrompts(ctx)
			if route, ok = r.promptRoute(ref.Name); !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + textsafe.Name(ref.Name)}
			}
		}
		p, ref.Name = route.source, route.remote
	case "ref/resource":
		p = r.templateSource(ctx, ref.URI)
		if p == nil {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: unknown ref type " + textsafe.Name(ref.Type)}
	}
	return onServer(ctx, p, func(f *mcpFeatures) bool { return f.Completions }, func(ctx context.Context, _ *toolSource, inst *instance) (*mcp.CompleteResult, error) {
		return inst.mcp.Complete(ctx, &asked)
	})
}

// templateSource is the server of a resource template (or resource) of
// that URI.
func (r *ToolRegistry) templateSource(ctx context.Context, uri string) *toolSource {
	find := func() *toolSource {
		c := &r.catalog
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, t := range c.templates {
			if t.template == uri {
				return t.source
			}
		}
		return c.resources[uri]
	}
	if p := find(); p != nil {
		return p
	}
	r.MCPResourceTemplates(ctx)
	if p := find(); p != nil {
		return p
	}
	return r.resourceSource(ctx, uri)
}

// templatePattern is a pattern of the URIs an RFC 6570 URI template
// makes, loose enough to tell which server's template a URI is of: nil
// for a template it cannot read.
func templatePattern(template string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			return nil
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		expr := rest[i+1 : i+end]
		rest = rest[i+end+1:]
		op := byte(0)
		if expr != "" {
			op = expr[0]
		}
		switch op {
		case '+', '#', '?', '&':
			b.WriteString(".*")
		case '/':
			b.WriteString("(?:/[^?#]*)*")
		case '.', ';':
			b.WriteString("(?:[.;][^/?#]*)*")
		default:
			b.WriteString("[^/?#]*")
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}

// mcpOptions sets what the session of an MCP server passes on: its
// announcements about prompts and resources, and its requests to the
// client in front of a call.
func (p *toolSource) mcpOptions(opts *mcpsource.Options) {
	opts.OnPromptsChanged = func() { p.mcpEvent(MCPEvent{Kind: MCPPromptsChanged}) }
	opts.OnResourcesChanged = func() { p.mcpEvent(MCPEvent{Kind: MCPResourcesChanged}) }
	opts.OnResourceUpdated = func(uri string) { p.mcpEvent(MCPEvent{Kind: MCPResourceUpdated, URI: uri}) }
	opts.Sampling, opts.Elicitation = true, true
}
