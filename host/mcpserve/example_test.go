package mcpserve_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcpserve"
	"github.com/agenthost/agenthost/sdk"
)

// greeter is a registry of one in-process tool, greet.
func greeter() *host.ToolRegistry {
	reg := host.NewToolRegistry(nil)
	greet := sdk.NewTool(sdk.Info{Name: "greet", Description: "Greet someone by name."},
		func(_ context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "Hello, " + in.Name + "!", nil
		})
	if err := reg.Register(greet); err != nil {
		log.Fatal(err)
	}
	return reg
}

// A registry's tools served over the SDK's in-memory transports, to the
// SDK's client in the same process.
func ExampleServer_Connect() {
	ctx := context.Background()
	srv := mcpserve.New(greeter(), nil)
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverTransport, nil); err != nil {
		log.Fatal(err)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, clientTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("server:", cs.InitializeResult().ServerInfo.Name)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range list.Tools {
		fmt.Printf("tool: %s (read-only: %v)\n", tool.Name, tool.Annotations.ReadOnlyHint)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shout", Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)

	cs.Close()
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// server: agenthost
	// tool: greet (read-only: false)
	// Hello, Ada!
	// true Error: tool not found: shout
}

// A registry's tools served over the streamable HTTP transport by an
// http.Server of the program's own, to the SDK's client.
func ExampleServer_Handler() {
	ctx := context.Background()
	srv := mcpserve.New(greeter(), &mcpserve.Options{
		Implementation: &mcp.Implementation{Name: "greeter", Version: "v1"},
	})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("server:", cs.InitializeResult().ServerInfo.Name)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Grace"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	// The calls in flight finish, the sessions close; then the
	// http.Server goes.
	cs.Close()
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// server: greeter
	// Hello, Grace!
}
