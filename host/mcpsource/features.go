package mcpsource

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// watch sets the handlers of the client's requests and of the
// notifications about prompts and resources, as opts asks.
func (s *Session) watch(c *mcp.ClientOptions, opts Options) {
	if f := opts.OnPromptsChanged; f != nil {
		c.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { f() }
	}
	if f := opts.OnResourcesChanged; f != nil {
		c.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { f() }
	}
	if f := opts.OnResourceUpdated; f != nil {
		c.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil && req.Params.URI != "" {
				f(req.Params.URI)
			}
		}
	}
	if opts.Sampling {
		// Declared without tools or context: the client in front may
		// offer neither; what the server sends is passed on as it is.
		c.Capabilities.Sampling = &mcp.SamplingCapabilities{}
		c.CreateMessageWithToolsHandler = s.fronts.createMessage
	}
	if opts.Elicitation {
		c.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		c.ElicitationHandler = s.fronts.elicit
	}
}

// receive has the server's elicitation/create go to the client in front
// as the server sent it: the SDK's client would check the form's schema
// first, and refuse the kinds of choices it does not know (titled
// multiple choices, say), and then check the answer against it, which is
// the server's to do.
func (s *Session) receive(client *mcp.Client, opts Options) {
	if !opts.Elicitation {
		return
	}
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" && r.Params != nil {
				return s.fronts.elicit(ctx, r)
			}
			return next(ctx, method, req)
		}
	})
}

// Features is what a server offers besides tools, as it declared in the
// handshake.
type Features struct {
	// Prompts and Resources: it serves prompts, resources (and maybe
	// resource templates). Subscribe: it takes subscriptions to resources.
	Prompts, Resources, Subscribe bool
	// Completions: it completes the arguments of prompts and templates.
	Completions bool
}

// Features says what the server declared it offers besides tools.
func (s *Session) Features() Features {
	res := s.cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return Features{}
	}
	c := res.Capabilities
	return Features{
		Prompts:     c.Prompts != nil,
		Resources:   c.Resources != nil,
		Subscribe:   c.Resources != nil && c.Resources.Subscribe,
		Completions: c.Completions != nil,
	}
}

// Prompts lists the server's prompts, every page, bounded as Tools
// bounds a list of tools.
func (s *Session) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	return listAll(ctx, s, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// Resources lists the server's resources, every page, bounded as Tools
// bounds a list of tools.
func (s *Session) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	return listAll(ctx, s, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

// ResourceTemplates lists the server's resource templates, every page,
// bounded as Tools bounds a list of tools.
func (s *Session) ResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	return listAll(ctx, s, "resource templates", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

// listAll gets every page of a list: at most Options.MaxTools items and
// Options.MaxListBytes bytes of their JSON, in at most 1,000 pages whose
// cursors do not repeat.
func listAll[T any](ctx context.Context, s *Session, what string, page func(context.Context, string) ([]T, string, error)) ([]T, error) {
	ctx, stop := s.bind(ctx)
	defer stop()
	var all []T
	size := 0
	seen := map[string]bool{}
	cursor := ""
	for n := 1; ; n++ {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, describe(ctx, s.t, s.done, "listing the "+what+" failed", err)
		}
		if len(all)+len(items) > s.maxTools {
			return nil, fmt.Errorf("listing the %s failed: the server lists more than %d", what, s.maxTools)
		}
		for _, item := range items {
			data, err := json.Marshal(item)
			if err != nil {
				return nil, fmt.Errorf("listing the %s failed: %v", what, err)
			}
			if size += len(data); size > s.maxBytes {
				return nil, fmt.Errorf("listing the %s failed: they take more than %d bytes, by page %d", what, s.maxBytes, n)
			}
			all = append(all, item)
		}
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("listing the %s failed: the server sent page %d's cursor before, so its list would never end", what, n)
		}
		if n == maxPages {
			return nil, fmt.Errorf("listing the %s failed: the server's list goes on past %d pages", what, maxPages)
		}
		seen[next] = true
		cursor = next
	}
}

// GetPrompt gets the prompt name with args. Its messages' text and data
// are bounded by Options.MaxResult.
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	ctx, stop := s.bind(ctx)
	defer stop()
	res, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, describe(ctx, s.t, s.done, "getting the prompt failed", err)
	}
	size := len(res.Description)
	for _, m := range res.Messages {
		if m != nil {
			size += contentSize(m.Content)
		}
	}
	if size > s.maxResult {
		return nil, fmt.Errorf("getting the prompt failed: its messages are %d bytes, more than the limit of %d bytes", size, s.maxResult)
	}
	return res, nil
}

// ReadResource reads the resource at uri. Its contents' text and data
// are bounded by Options.MaxResult.
func (s *Session) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	ctx, stop := s.bind(ctx)
	defer stop()
	res, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, describe(ctx, s.t, s.done, "reading the resource failed", err)
	}
	size := 0
	for _, c := range res.Contents {
		if c != nil {
			size += len(c.Text) + len(c.Blob)
		}
	}
	if size > s.maxResult {
		return nil, fmt.Errorf("reading the resource failed: its contents are %d bytes, more than the limit of %d bytes", size, s.maxResult)
	}
	return res, nil
}

// Subscribe asks the server for notifications/resources/updated about
// the resource at uri (see Options.OnResourceUpdated).
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	ctx, stop := s.bind(ctx)
	defer stop()
	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return describe(ctx, s.t, s.done, "subscribing to the resource failed", err)
	}
	return nil
}

// Unsubscribe ends a subscription of Subscribe.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	ctx, stop := s.bind(ctx)
	defer stop()
	if err := s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		return describe(ctx, s.t, s.done, "unsubscribing from the resource failed", err)
	}
	return nil
}

// Complete asks the server to complete an argument of a prompt or a
// resource template.
func (s *Session) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	ctx, stop := s.bind(ctx)
	defer stop()
	res, err := s.cs.Complete(ctx, params)
	if err != nil {
		return nil, describe(ctx, s.t, s.done, "completing the argument failed", err)
	}
	return res, nil
}

// contentSize is the bytes of text and data of one content block.
func contentSize(c mcp.Content) int {
	switch c := c.(type) {
	case *mcp.TextContent:
		return len(c.Text)
	case *mcp.ImageContent:
		return len(c.Data)
	case *mcp.AudioContent:
		return len(c.Data)
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return len(c.Resource.Text) + len(c.Resource.Blob)
		}
	}
	return 0
}
