package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/sdktest"
)

type greetInput struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// plugin is what a plugin's main serves (sdk.ServePlugin(plugin)), kept in
// a variable for its tests.
var plugin = sdk.Plugin{
	Tools: []sdk.Tool{
		sdk.NewTool(sdk.Info{Name: "greet", Description: "Greet someone by name."}, func(ctx context.Context, in greetInput) (string, error) {
			if in.Name == "" {
				return "", errors.New("name is empty")
			}
			return "Hello, " + in.Name + ".", nil
		}),
		sdk.NewTool(sdk.Info{Name: "crash", Description: "Panic."}, func(context.Context, struct{}) (string, error) {
			panic("out of cheese")
		}),
		sdk.NewTool(sdk.Info{Name: "forget", Description: "Forget everything.", Annotations: sdk.Annotations{Destructive: true, OptIn: true}}, func(context.Context, struct{}) (string, error) {
			return "Forgotten.", nil
		}),
	},
	Permissions: sdk.Permissions{Roots: sdk.RootsNone},
}

// Each call returns what the model would read: the result, or the host's
// failure text. In a test function, sdktest.New(t, plugin, opts) starts
// the same host and stops it when the test ends.
func Example() {
	h, err := sdktest.Start(plugin, sdktest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	fmt.Println(h.Call("greet", `{"name":"Ada"}`))
	fmt.Println(h.Call("greet", `{"name":""}`))
	fmt.Println(h.Call("greet", `{"name":42}`))
	fmt.Println(h.Call("greet", ``))
	fmt.Println(h.Call("crash", `{}`))
	fmt.Println(h.Call("forget", `{}`))
	fmt.Println(h.Call("greeet", `{"name":"Ada"}`))
	// Output:
	// Hello, Ada.
	// Error executing greet: name is empty
	// Error executing greet: invalid arguments: name: type: 42 has type "integer", want "string"
	// Error executing greet: invalid arguments: required: missing properties: ["name"]
	// Error executing crash: panic: out of cheese
	// Error: tool not available: forget is disabled
	// Error: tool not found: greeet
}

// The host lists the tools as a user sees them: an opt-in tool starts
// disabled, until the user enables it.
func ExampleHost_Tools() {
	h, err := sdktest.Start(plugin, sdktest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	for _, tool := range h.Tools() {
		fmt.Println(tool.Name, tool.Enabled, tool.Description)
	}
	if err := h.Registry().Enable("forget"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Call("forget", `{}`))
	// Output:
	// greet true Greet someone by name.
	// crash true Panic.
	// forget false Forget everything.
	// Forgotten.
}

// A tool reads the agent's state through sdk.HostState, a call back to the
// host; a host without an agent offers none.
func ExampleHost_SetState() {
	prompt := sdk.NewTool(sdk.Info{Name: "prompt", Description: "Tell the system prompt."}, func(ctx context.Context, _ struct{}) (string, error) {
		st, err := sdk.HostState(ctx)
		if err != nil {
			return "", err
		}
		return st.SystemPrompt, nil
	})
	h, err := sdktest.Start(sdk.Plugin{Tools: []sdk.Tool{prompt}}, sdktest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	fmt.Println(h.Call("prompt", ""))
	h.SetState(&sdk.State{SystemPrompt: "You are terse."})
	fmt.Println(h.Call("prompt", ""))
	// Output:
	// Error executing prompt: the host offers no agent state to this call
	// You are terse.
}

// Every call has a deadline, carried by the tool's context across the
// process boundary; when it passes, the model reads that the call timed
// out, whatever the tool returns.
func ExampleOptions_timeout() {
	wait := sdk.NewTool(sdk.Info{Name: "wait", Description: "Wait for the call to end."}, func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	h, err := sdktest.Start(sdk.Plugin{Tools: []sdk.Tool{wait}}, sdktest.Options{Timeout: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	fmt.Println(h.Call("wait", ""))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(h.CallContext(ctx, "wait", ""))
	// Output:
	// Error executing wait: timed out after 10ms
	// Error executing wait: canceled
}
