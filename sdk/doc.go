// Package sdk is what a tool author imports to ship a tool binary for
// agenthost. A plugin is a program whose main is one call to [Serve]; the
// host finds it in its plugins directory (its file name starts with
// "agenthost-plugin-"), asks it which tools it serves, and from then on
// registers, enables, disables and calls them exactly like the built-in
// tools, which are written the same way.
//
// A complete plugin:
//
//	// Command agenthost-plugin-greet greets people.
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/agenthost/agenthost/sdk"
//	)
//
//	type greetInput struct {
//		Name string `json:"name" jsonschema:"who to greet"`
//		Loud bool   `json:"loud,omitempty" jsonschema:"shout the greeting"`
//	}
//
//	func greet(ctx context.Context, in greetInput) (string, error) {
//		if in.Name == "" {
//			return "", fmt.Errorf("name is empty")
//		}
//		sdk.Logger(ctx).Debug("greeting", "name", in.Name)
//		if in.Loud {
//			return "HELLO, " + in.Name + "!", nil
//		}
//		return "Hello, " + in.Name + ".", nil
//	}
//
//	func main() {
//		sdk.Serve(sdk.NewTool(sdk.Info{
//			Name:        "greet",
//			Description: "Greet someone by name.",
//			Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
//		}, greet))
//	}
//
// Build it into the plugins directory and it is there:
//
//	go build -o plugins/agenthost-plugin-greet .
//	agenthost call greet '{"name":"Ada"}'
//
// The parameter schema comes from the input struct (see [NewTool]); the
// arguments are validated against it before the handler runs. A returned
// error is a tool failure that the model reads as
// "Error executing greet: MESSAGE"; a panic becomes the same kind of
// failure and the plugin keeps serving.
//
// Rules for a plugin:
//   - Never write to stdout: the host owns the plugin's stdout for the
//     handshake. Log with [Logger]; its lines reach the host's log.
//   - Honour the context: it carries the call's deadline and the caller's
//     cancellation.
//   - A tool that needs the agent's state (the system prompt, the session
//     context) asks for it with [HostState] during the call.
//   - A process a tool starts must not inherit the plugin's stdout or
//     stderr; when the host dies, the plugin's process group is killed.
//
// A plugin declares what its process needs (access to the workspace
// roots, other paths, the network, other programs) by serving with
// [ServePlugin] and a [Permissions]; the host may confine the process to
// that declaration and show it to the user. [Serve] declares nothing,
// which leaves the host's defaults. Declare what the tools touch, and no
// more; greet touches no file at all:
//
//	sdk.ServePlugin(sdk.Plugin{
//		Tools:       []sdk.Tool{sdk.NewTool(sdk.Info{Name: "greet", ...}, greet)},
//		Permissions: sdk.Permissions{Roots: sdk.RootsNone},
//	})
//
// The wire protocol is in the toolv1 package: a plugin in another language
// implements its ToolPlugin service behind go-plugin's handshake.
package sdk
