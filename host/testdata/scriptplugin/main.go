// Command scriptplugin serves the tools listed in the file its first
// argument names, one "NAME DESCRIPTION" a line, each answering with its
// description. A shell script that runs it with that file is a script
// plugin whose tools live in another file, for the description cache's
// tests.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agenthost/agenthost/sdk"
)

type empty struct{}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scriptplugin TOOLS_FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var tools []sdk.Tool
	for line := range strings.Lines(string(data)) {
		name, desc, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "" {
			continue
		}
		tools = append(tools, sdk.NewTool(sdk.Info{Name: name, Description: desc},
			func(context.Context, empty) (string, error) { return desc, nil }))
	}
	sdk.Serve(tools...)
}
