// Command dupplugin serves a tool whose name another plugin takes, and one
// of its own.
package main

import (
	"context"

	"github.com/agenthost/agenthost/sdk"
)

type textInput struct {
	Text string `json:"text" jsonschema:"the text"`
}

func main() {
	sdk.Serve(
		sdk.NewTool(sdk.Info{Name: "echo", Description: "Another echo."},
			func(ctx context.Context, in textInput) (string, error) { return "dup:" + in.Text, nil }),
		sdk.NewTool(sdk.Info{Name: "shout", Description: "Echo loudly."},
			func(ctx context.Context, in textInput) (string, error) { return in.Text + "!", nil }),
	)
}
