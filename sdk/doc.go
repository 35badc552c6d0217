// Package sdk is what a tool author imports to ship a tool binary for
// agenthost. A plugin is a program whose main is one call to [Serve] or
// [ServePlugin]; the host finds it in its plugins directory (its file name
// starts with "agenthost-plugin-"), asks it which tools it serves, and
// from then on registers, enables, disables and calls them exactly like
// the built-in tools, which are written the same way.
//
// A complete plugin:
//
//	// Command agenthost-plugin-greet greets people.
//	package main
//
//	import (
//		"context"
//		"errors"
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
//			return "", errors.New("name is empty")
//		}
//		sdk.Logger(ctx).Debug("greeting", "name", in.Name)
//		if in.Loud {
//			return "HELLO, " + in.Name + "!", nil
//		}
//		return "Hello, " + in.Name + ".", nil
//	}
//
//	// plugin is what main serves, in a variable that tests reach too.
//	var plugin = sdk.Plugin{
//		Tools: []sdk.Tool{sdk.NewTool(sdk.Info{
//			Name:        "greet",
//			Description: "Greet someone by name.",
//			Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
//		}, greet)},
//		Permissions: sdk.Permissions{Roots: sdk.RootsNone}, // touches no file
//	}
//
//	func main() { sdk.ServePlugin(plugin) }
//
// Build it into the plugins directory and it is there:
//
//	go build -o plugins/agenthost-plugin-greet .
//	agenthost call greet '{"name":"Ada"}'
//
// # What the model reads
//
// A model calls a tool by name with a JSON object of arguments, and reads
// back one string: the tool's result as it returned it, or one of the
// host's failure texts:
//
//	Error: tool not found: NAME
//	Error: tool not available: NAME is disabled
//	Error executing NAME: MESSAGE
//
// The first two are the host's alone: the plugin never sees such a call.
// The third is every failure of a call that reached the tool, MESSAGE
// cut at 4 KiB:
//
//   - Arguments that do not match the schema: "invalid arguments: " and
//     what is wrong, naming the argument ("invalid arguments: name: type:
//     7 has type "integer", want "string"", "invalid arguments: required:
//     missing properties: ["name"]"); the handler does not run. A tool
//     built with [NewTool] checks its arguments itself, against the
//     schema inferred from its input struct, and its plugin tells the
//     host so, which then does not check them again; it takes a null for
//     an optional property as its absence. The host checks the
//     arguments of any other [Tool] against its Schema, to the letter,
//     before the call reaches the plugin. Absent arguments (none, or
//     null) arrive as {}.
//   - A returned error: its Error() text. It is a failure of the call,
//     not of the plugin, which goes on serving.
//   - A panic: "panic: VALUE". The plugin recovers it, logs it with its
//     stack, and goes on serving.
//   - The deadline: "timed out after 30s". Every call has one: the host's
//     default, 30 seconds, or the tool's own [Annotations.Timeout], or
//     what the user set. It is the deadline of the handler's context,
//     across the process boundary; when it passes, the model reads the
//     timeout whatever the handler returns, and a plugin that still does
//     not answer is killed, its process group with it, and started again
//     on the next call.
//   - Cancellation: "canceled". The call's context is cancelled when the
//     caller gives up: the user stops the answer, an MCP client cancels
//     the request.
//
// A result reaches the model as it is, but for bytes that are not UTF-8,
// which become U+FFFD; a result over 64 MiB is a failure. A plugin that
// exits or crashes during a call fails that call, and the next call
// starts it again.
//
// # Titles and structured results
//
// [Info.Title] is a short title for people ("Read file"), which MCP
// clients show in place of the tool's name.
//
// A tool whose answer has a structure (records, matches, an exit code)
// can return it as data besides its text: [NewStructuredTool] takes a
// handler that returns the text and an Out, a struct, from which the
// tool's output schema is inferred as the parameter schema is from In.
// Models read the text, as from any tool, so it says everything; MCP
// clients get the Out too, as the result's structuredContent, and the
// output schema in tools/list. The host checks each structured result
// against the output schema before it passes it on: a call whose
// structured result does not conform fails, with a text that says so.
// A failed call has no structured result.
//
//	type countOutput struct {
//		Lines int `json:"lines" jsonschema:"how many lines the file has"`
//	}
//
//	countLines := sdk.NewStructuredTool(sdk.Info{Name: "count_lines", Title: "Count lines"},
//		func(ctx context.Context, in countInput) (string, countOutput, error) {
//			n, err := count(ctx, in.Path)
//			return fmt.Sprintf("%d lines", n), countOutput{Lines: n}, err
//		})
//
// A tool of another kind has a title by implementing [Titler], and
// structured results by implementing [StructuredTool].
//
// # Inside a call
//
// The handler's context carries the call:
//
//   - [Roots] are the workspace roots, the directories a tool that
//     touches files must stay inside. [OpenWorkspace] opens them, and its
//     [Workspace] places a path the model gave in them and opens, reads
//     and writes through them, refusing a path outside with the very
//     texts of the built-in file tools (path "P" is outside the workspace
//     roots).
//   - [HostState] asks the host for the agent's live state: its system
//     prompt, session context and session file. It is a call back to the
//     host over the plugin's connection, made only when a tool asks; a
//     host with no agent (agenthost call, agenthost mcp) answers
//     [ErrNoHostState].
//   - [Logger] logs into the host's log: its lines travel on the plugin's
//     stderr, with their level, the tool's name and their fields, and the
//     host writes them to its log at its log level (agenthost
//     --log-level; warn by default).
//
// The plugin's stdout belongs to go-plugin's handshake: a plugin never
// writes to it, and a process a tool starts must not inherit it. Its
// stderr carries the log: write to it through Logger only (other lines
// reach the host's log as plain text). The plugin has no stdin. When the
// host dies, the plugin's process group is killed with it.
//
// # Permissions
//
// A plugin declares what its process needs (access to the workspace
// roots, other paths, the network, other programs) by serving with
// [ServePlugin] and a [Permissions]; the host confines the process to that
// declaration and what the user grants (on Linux with Landlock), and shows
// it to the user. [Serve] declares nothing, which leaves the host's
// defaults: the roots read and write, the system read-only. Declare what
// the tools touch, and no more.
//
// # Testing a tool
//
// Package sdktest calls a plugin's tools through the host, in an ordinary
// go test, and returns exactly what a model would read:
//
//	func TestGreet(t *testing.T) {
//		h := sdktest.New(t, plugin, sdktest.Options{})
//		if got := h.Call("greet", `{"name":"Ada"}`); got != "Hello, Ada." {
//			t.Errorf("greet = %q", got)
//		}
//	}
//
// sdktest.New serves the plugin in the test's process over the real
// protocol; sdktest.Binary loads a built binary as the host does, in its
// sandbox.
//
// # The protocol
//
// The wire protocol is in the toolv1 package: a plugin in another
// language implements its ToolPlugin service behind go-plugin's
// handshake.
package sdk
