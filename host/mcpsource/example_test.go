package mcpsource_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host/mcpsource"
)

// A server of the Go SDK, in memory, stands for a server process here.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	type greeting struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greets someone."}, func(_ context.Context, _ *mcp.CallToolRequest, in greeting) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
	})
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()

	s, err := mcpsource.Connect(ctx, clientEnd, mcpsource.Options{Name: "agenthost", Version: "dev"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	name, version, _ := s.Server()
	fmt.Println(name, version)
	tools, err := s.Tools(ctx)
	if err != nil {
		panic(err)
	}
	for _, t := range tools {
		fmt.Printf("%s: %s destructive=%v schema=%s\n", t.Name, t.Description, t.Destructive, t.InputSchema)
	}
	text, isError, err := s.Call(ctx, "greet", json.RawMessage(`{"name":"Ada"}`))
	fmt.Println(text, isError, err)
	// A tool's failure is a result, marked as an error.
	_, isError, err = s.Call(ctx, "greet", json.RawMessage(`{"name":7}`))
	fmt.Println(isError, err)
	// A request the server refuses is a Go error.
	_, _, err = s.Call(ctx, "wave", nil)
	fmt.Println(err)
	// Output:
	// greeter 1.0.0
	// greet: Greets someone. destructive=true schema={"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}
	// Hello, Ada! false <nil>
	// true <nil>
	// the server answered: unknown tool "wave" (code -32602)
}
