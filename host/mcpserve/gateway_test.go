package mcpserve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
)

// gatewayRegistry is a registry of the MCP servers alone, closed when the
// test ends.
func gatewayRegistry(t *testing.T, servers ...host.MCPServer) *host.ToolRegistry {
	t.Helper()
	reg := host.NewToolRegistry(&host.Options{CacheDir: host.NoCache, Logger: hclog.NewNullLogger(), Roots: []string{t.TempDir()}})
	t.Cleanup(func() { reg.Close() })
	for _, rep := range reg.LoadMCPServers(t.Context(), servers) {
		if rep.Err != nil {
			t.Fatalf("%s: %v", rep.Path, rep.Err)
		}
	}
	return reg
}

// hostileServer is host/testdata/mcpserver, named name.
func hostileServer(t *testing.T, name string) host.MCPServer {
	return host.MCPServer{Name: name, Command: plugintest.Binary(t, "./host/testdata/mcpserver")}
}

// everythingServer is @modelcontextprotocol/server-everything over
// stdio, its names prefixed with prefix.
func everythingServer(t *testing.T, prefix string) host.MCPServer {
	cmd, args := mcptest.Everything(t)
	return host.MCPServer{Name: "everything", Command: cmd, Args: args, Prefix: prefix}
}

// gatewayClient connects a client of opts to a server of reg, in
// memory, with protocol version 2025-11-25: a client of a later version
// cannot be sent requests during a call.
func gatewayClient(t *testing.T, reg *host.ToolRegistry, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return gatewayClientOf(t, reg, opts, "2025-11-25")
}

// gatewayClientOf is gatewayClient with the protocol version version.
func gatewayClientOf(t *testing.T, reg *host.ToolRegistry, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := New(reg, nil).Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(t.Context(), clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestGatewayPassesContent: a result of an MCP server's tool reaches the
// client as the server gave it, an image as an image, while the
// registry's text stands for it; parts over host.MaxContentSize come as
// that text alone. (A message over the transport's bound, 64 MiB + 1 MiB,
// breaks the server's session before it is read: mcpsource's tests.)
func TestGatewayPassesContent(t *testing.T) {
	reg := gatewayRegistry(t, hostileServer(t, "hostile"))
	cs := gatewayClient(t, reg, nil)

	res := servetest.Call(t, cs, "image", map[string]any{})
	if len(res.Content) != 2 || res.IsError {
		t.Fatalf("image: %d parts (error %v), want a text and an image", len(res.Content), res.IsError)
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || text.Text != "a picture:" {
		t.Errorf("first part %#v, want the text", res.Content[0])
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || len(img.Data) != 68 || img.MIMEType != "image/png" {
		t.Errorf("second part %#v, want an image of 68 bytes, image/png", res.Content[1])
	}
	if got := reg.Execute(t.Context(), "image", nil); got != "a picture:\n[image: 68 bytes, image/png]" {
		t.Errorf("the registry's text = %q", got)
	}

	big := host.MaxContentSize + 1
	res = servetest.Call(t, cs, "big-image", map[string]any{"bytes": big})
	if got := servetest.Text(t, res); got != "[image: 16777217 bytes, image/png]" || res.IsError {
		t.Errorf("an image over the limit = %q (error %v), want its text alone", got, res.IsError)
	}
}

// TestGatewayPromptsAndResources: the prompts, resources and templates of
// a server behind the gateway are listed (prefixed as its tools are), got
// and read through it, and completed.
func TestGatewayPromptsAndResources(t *testing.T) {
	reg := gatewayRegistry(t, everythingServer(t, "ev"))
	cs := gatewayClient(t, reg, nil)
	ctx := t.Context()

	caps := cs.InitializeResult().Capabilities
	if caps.Prompts == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Logging == nil || caps.Completions == nil {
		t.Fatalf("capabilities %+v, want prompts, resources with subscribe, logging and completions", caps)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "ev_simple-prompt") || !slices.Contains(names, "ev_args-prompt") {
		t.Fatalf("prompts %v, want ev_simple-prompt and ev_args-prompt", names)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ev_args-prompt", Arguments: map[string]string{"city": "Lyon"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) == 0 || !strings.Contains(text(got.Messages[0].Content), "Lyon") {
		t.Errorf("ev_args-prompt with Lyon: %+v", got.Messages)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("the prompt by the server's own name: %v, want an unknown prompt", err)
	}

	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const doc = "demo://resource/static/document/features.md"
	i := slices.IndexFunc(resources.Resources, func(r *mcp.Resource) bool { return r.URI == doc })
	if i < 0 || resources.Resources[i].Name != "ev_features.md" {
		t.Fatalf("resources %v, want %s named ev_features.md", resources.Resources, doc)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || read.Contents[0].URI != doc || read.Contents[0].Text == "" {
		t.Errorf("reading %s: %+v", doc, read.Contents)
	}

	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 2 || !strings.HasPrefix(templates.ResourceTemplates[0].Name, "ev_") {
		t.Errorf("templates %+v, want the server's two, prefixed", templates.ResourceTemplates)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "7") {
		t.Errorf("reading a resource of a template: %+v", read.Contents)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://nothing/here"}); err == nil {
		t.Error("reading a resource that is not there did not fail")
	}

	// A resource link and an embedded resource come as such; to a client
	// of a version without resource links, as the text that says what
	// the link was.
	res := servetest.Call(t, cs, "ev_get-resource-links", map[string]any{"count": 1})
	if link, ok := res.Content[len(res.Content)-1].(*mcp.ResourceLink); !ok || link.URI != "demo://resource/dynamic/blob/1" || link.Name == "" {
		t.Errorf("a resource link came as %#v", res.Content[len(res.Content)-1])
	}
	res = servetest.Call(t, cs, "ev_get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1})
	if embedded, ok := res.Content[1].(*mcp.EmbeddedResource); !ok || embedded.Resource.URI != "demo://resource/dynamic/text/1" || embedded.Resource.Text == "" {
		t.Errorf("an embedded resource came as %#v", res.Content[1])
	}
	old := gatewayClientOf(t, reg, nil, "2025-03-26")
	res = servetest.Call(t, old, "ev_get-resource-links", map[string]any{"count": 1})
	if got := text(res.Content[len(res.Content)-1]); got != "[resource link: demo://resource/dynamic/blob/1]" {
		t.Errorf("a resource link to a client of 2025-03-26 came as %q", got)
	}

	done, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "ev_completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "Eng"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(done.Completion.Values, "Engineering") {
		t.Errorf("completing Eng: %v", done.Completion.Values)
	}
}

// TestGatewayFollowsLists: when a server behind the gateway adds a prompt
// and a resource, the client is told its lists changed, and finds them.
func TestGatewayFollowsLists(t *testing.T) {
	reg := gatewayRegistry(t, hostileServer(t, "hostile"))
	var mu sync.Mutex
	told := map[string]int{}
	note := func(what string) {
		mu.Lock()
		told[what]++
		mu.Unlock()
	}
	cs := gatewayClient(t, reg, &mcp.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { note("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { note("resources") },
	})
	prompts, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(prompts.Prompts) != 0 {
		t.Fatalf("prompts before: %v, %v", prompts, err)
	}
	servetest.Call(t, cs, "offer", map[string]any{"text": "fresh"})
	poll.Eventually(t, 5*time.Second, "the client is told both lists changed", func() error {
		mu.Lock()
		defer mu.Unlock()
		if told["prompts"] == 0 || told["resources"] == 0 {
			return fmt.Errorf("told %v", told)
		}
		return nil
	})
	got, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "fresh"})
	if err != nil || text(got.Messages[0].Content) != "the prompt fresh" {
		t.Errorf("the new prompt: %v, %v", got, err)
	}
	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://fresh"})
	if err != nil || read.Contents[0].Text != "the resource fresh" {
		t.Errorf("the new resource: %v, %v", read, err)
	}
}

// TestGatewaySampling: a server's sampling request during a call reaches
// the client in front when it declares sampling, and the server is told
// it is not supported when the client does not; so is an elicitation.
func TestGatewaySampling(t *testing.T) {
	reg := gatewayRegistry(t, hostileServer(t, "hostile"), everythingServer(t, "ev"))
	var asked []string
	var mu sync.Mutex
	sampling := gatewayClient(t, reg, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, text(req.Params.Messages[0].Content))
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if got := servetest.Text(t, servetest.Call(t, sampling, "ask", map[string]any{"text": "the answer?"})); got != "the model said: forty-two" {
		t.Errorf("a client that offers sampling: %q", got)
	}
	res := servetest.Call(t, sampling, "ev_trigger-sampling-request", map[string]any{"prompt": "hello"})
	if got := text(res.Content[0]); res.IsError || !strings.Contains(got, "forty-two") {
		t.Errorf("server-everything's sampling: %q (error %v)", got, res.IsError)
	}
	mu.Lock()
	if len(asked) != 2 || asked[0] != "the answer?" || !strings.Contains(asked[1], "hello") {
		t.Errorf("the client was asked %q", asked)
	}
	mu.Unlock()
	res = servetest.Call(t, sampling, "ev_trigger-elicitation-request", map[string]any{})
	if got := text(res.Content[0]); res.IsError || !strings.Contains(strings.ToLower(got), "decline") {
		t.Errorf("server-everything's elicitation: %q (error %v)", got, res.IsError)
	}

	plain := gatewayClient(t, reg, nil)
	got := servetest.Text(t, servetest.Call(t, plain, "ask", map[string]any{"text": "the answer?"}))
	if !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "sampling is not supported here: the client in front of the call does not offer it") {
		t.Errorf("a client that does not offer sampling: %q", got)
	}
}

// TestGatewayProgressAndLogs: a server's progress during a call reaches
// the client under the client's progress token, and its log messages at
// the level the client set, and not below it.
func TestGatewayProgressAndLogs(t *testing.T) {
	reg := gatewayRegistry(t, hostileServer(t, "hostile"))
	var mu sync.Mutex
	var progress []float64
	var tokens []any
	var logs []string
	cs := gatewayClient(t, reg, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			tokens = append(tokens, req.Params.ProgressToken)
			mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, string(req.Params.Level)+" "+req.Params.Data.(string))
			mu.Unlock()
		},
	})
	// Without a level set, the client takes no messages.
	params := &mcp.CallToolParams{Name: "chatter", Arguments: map[string]any{}}
	params.SetProgressToken("mine")
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "chatter", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	// The client handles notifications on a goroutine of its own, after
	// the result may have come: wait for them. What should not come would
	// have come first, in order.
	want := []string{"info a info message", "warning a warning message"}
	poll.Eventually(t, 5*time.Second, "the messages and progress arrive", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(logs) < len(want) || len(progress) < 3 {
			return fmt.Errorf("log messages %q, progress %v", logs, progress)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(logs, want) {
		t.Errorf("log messages %q, want %q", logs, want)
	}
	if !slices.Equal(progress, []float64{1, 2, 3}) || !slices.ContainsFunc(tokens, func(tok any) bool { return tok == "mine" }) || slices.ContainsFunc(tokens, func(tok any) bool { return tok != "mine" }) {
		t.Errorf("progress %v with tokens %v, want 1, 2, 3 with the client's token", progress, tokens)
	}
}

// text is the text of a text content, or "".
func text(c mcp.Content) string {
	if tc, ok := c.(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
