// Package kit is a plugin with a tool for each way a call can end, which
// the tests of sdktest serve both in-process and as a binary
// (testdata/kit) to show that both give the same answers.
package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/sdk"
)

type greetInput struct {
	Name string `json:"name" jsonschema:"who to greet"`
	Loud bool   `json:"loud,omitempty" jsonschema:"shout the greeting"`
}

type none struct{}

// Plugin is the plugin.
var Plugin = sdk.Plugin{
	Tools: []sdk.Tool{
		sdk.NewTool(sdk.Info{Name: "greet", Description: "Greet someone by name."}, func(ctx context.Context, in greetInput) (string, error) {
			if in.Name == "" {
				return "", errors.New("name is empty")
			}
			sdk.Logger(ctx).Info("greeting", "name", in.Name)
			if in.Loud {
				return "HELLO, " + in.Name + "!", nil
			}
			return "Hello, " + in.Name + ".", nil
		}),
		sdk.NewTool(sdk.Info{Name: "boom", Description: "Panic."}, func(context.Context, none) (string, error) {
			panic("kaboom")
		}),
		sdk.NewTool(sdk.Info{Name: "garbled", Description: "Fail with bytes that are not UTF-8."}, func(context.Context, none) (string, error) {
			return "", errors.New("bad \xff byte")
		}),
		sdk.NewTool(sdk.Info{Name: "wait", Description: "Wait for the call to end."}, func(ctx context.Context, _ none) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		sdk.NewTool(sdk.Info{Name: "state", Description: "Tell the agent's state."}, func(ctx context.Context, _ none) (string, error) {
			st, err := sdk.HostState(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%q %q %q", st.SystemPrompt, st.SessionContext, st.SessionContextFilePath), nil
		}),
		sdk.NewTool(sdk.Info{Name: "roots", Description: "Tell the workspace roots."}, func(ctx context.Context, _ none) (string, error) {
			return strings.Join(sdk.Roots(ctx), "\n"), nil
		}),
		sdk.NewTool(sdk.Info{Name: "big", Description: "Answer 5 MiB."}, func(context.Context, none) (string, error) {
			return strings.Repeat("x", 5<<20), nil
		}),
		sdk.NewTool(sdk.Info{Name: "remove_all", Description: "An opt-in tool.", Annotations: sdk.Annotations{Destructive: true, OptIn: true}}, func(context.Context, none) (string, error) {
			return "removed", nil
		}),
		plain{},
	},
	Permissions: sdk.Permissions{Roots: sdk.RootsNone},
}

// plain is a tool written by hand rather than with sdk.NewTool: the host
// checks its arguments.
type plain struct{}

func (plain) Name() string { return "plain" }

func (plain) Schema() sdk.ChatTool {
	return sdk.NewChatTool("plain", "Echo the arguments.", json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}},"required":["n"],"additionalProperties":false}`))
}

func (plain) Execute(_ context.Context, args json.RawMessage) (string, error) {
	return "plain ran with " + string(args), nil
}
