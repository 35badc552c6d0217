package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// An embedding program loads the plugins, lets the user opt in to a tool,
// hands the schemas to its model, and runs the model's calls.
func ExampleNewDefaultToolRegistry() {
	ctx := context.Background()
	reg, err := host.NewDefaultToolRegistry(ctx, "bin/plugins", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()

	if err := reg.Enable("remove"); err != nil {
		log.Print(err)
	}
	schemas, _ := json.Marshal(reg.EnabledSchemas())
	fmt.Printf("tools for the model: %s\n", schemas)
	fmt.Println(reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"README.md","limit":3}`)))
}

type addInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

// Tools can be registered in-process as well; they behave exactly like
// plugin tools.
func ExampleToolRegistry_Register() {
	reg := host.NewToolRegistry(nil)
	add := sdk.NewTool(sdk.Info{Name: "add", Description: "Add two integers."},
		func(_ context.Context, in addInput) (string, error) { return fmt.Sprint(in.A + in.B), nil })
	if err := reg.Register(add); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	fmt.Println(reg.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`)))
	fmt.Println(reg.Execute(ctx, "add", json.RawMessage(`{"a":2}`)))
	fmt.Println(reg.Register(add))
	// Output:
	// 5
	// Error executing add: invalid arguments: required: missing properties: ["b"]
	// tool already exists: add (register it under a different name, such as add_v2)
}
