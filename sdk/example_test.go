package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/sdk"
)

type greetInput struct {
	Name string `json:"name" jsonschema:"who to greet"`
	Loud bool   `json:"loud,omitempty" jsonschema:"shout the greeting"`
}

func greet(ctx context.Context, in greetInput) (string, error) {
	if in.Name == "" {
		return "", fmt.Errorf("name is empty")
	}
	sdk.Logger(ctx).Debug("greeting", "name", in.Name)
	if in.Loud {
		return "HELLO, " + in.Name + "!", nil
	}
	return "Hello, " + in.Name + ".", nil
}

var greetTool = sdk.NewTool(sdk.Info{
	Name:        "greet",
	Description: "Greet someone by name.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, greet)

// A plugin's main is one call to Serve.
func ExampleServe() {
	sdk.Serve(greetTool)
}

// A plugin that declares what its process needs serves with ServePlugin:
// greet touches no file in the workspace and nothing else either.
func ExampleServePlugin() {
	sdk.ServePlugin(sdk.Plugin{
		Tools:       []sdk.Tool{greetTool},
		Permissions: sdk.Permissions{Roots: sdk.RootsNone},
	})
}

// A declaration reads as a short list, the way a host shows it.
func ExamplePermissions_String() {
	fmt.Println(sdk.Permissions{})
	fmt.Println(sdk.Permissions{
		Roots:   sdk.RootsRead,
		Read:    []string{"~/.config/greet"},
		Write:   []string{"$TMPDIR"},
		Network: true,
	})
	// Output:
	// nothing beyond the defaults
	// roots read-only, read ~/.config/greet, write $TMPDIR, network
}

// A tool built with NewTool can be called directly too, checking its
// arguments as it does in a plugin. (Package sdktest calls it through the
// host instead, and returns what a model would read.)
func ExampleNewTool() {
	out, err := greetTool.Execute(context.Background(), json.RawMessage(`{"name":"Ada","loud":true}`))
	fmt.Println(out, err)

	_, err = greetTool.Execute(context.Background(), json.RawMessage(`{"name":"Ada","volume":11}`))
	fmt.Println(err)

	schema, _ := json.Marshal(greetTool.Schema())
	fmt.Println(string(schema))
	// Output:
	// HELLO, Ada! <nil>
	// invalid arguments: unexpected additional properties ["volume"]
	// {"type":"function","function":{"name":"greet","description":"Greet someone by name.","parameters":{"type":"object","properties":{"name":{"type":"string","description":"who to greet"},"loud":{"type":"boolean","description":"shout the greeting"}},"required":["name"],"additionalProperties":false}}}
}
