//go:build unix

// Command agenthost-plugin-wc counts the lines, words and bytes of a file
// in the workspace: a whole plugin, and its test.
package sdk_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/sdktest"
)

type wcInput struct {
	Path string `json:"path" jsonschema:"the file to count, relative to the workspace"`
}

func wc(ctx context.Context, in wcInput) (string, error) {
	// The path is the model's: it stays inside the workspace roots, and
	// errors name it in the built-in tools' words.
	ws, err := sdk.OpenWorkspace(ctx)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	data, err := ws.ReadFile(in.Path)
	if err != nil {
		return "", err
	}
	lines, words := bytes.Count(data, []byte("\n")), len(bytes.Fields(data))
	sdk.Logger(ctx).Debug("counted", "path", in.Path, "lines", lines)
	return fmt.Sprintf("%d lines, %d words, %d bytes", lines, words, len(data)), nil
}

// wcPlugin is what the binary serves, in a variable its tests reach.
var wcPlugin = sdk.Plugin{
	Tools: []sdk.Tool{sdk.NewTool(sdk.Info{
		Name:        "wc",
		Description: "Count the lines, words and bytes of a file.",
		Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
	}, wc)},
	// It reads the workspace, and nothing else.
	Permissions: sdk.Permissions{Roots: sdk.RootsRead},
}

// In the plugin's package main, main is one call.
func main() { sdk.ServePlugin(wcPlugin) }

// Its test calls the tool through the host, and reads what a model would
// (a test function would use sdktest.New(t, wcPlugin, ...), which stops
// it when the test ends).
func Example_plugin() {
	dir, err := os.MkdirTemp("", "wc")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	poem := "The fog comes\non little cat feet.\n"
	if err := os.WriteFile(filepath.Join(dir, "fog.txt"), []byte(poem), 0o644); err != nil {
		log.Fatal(err)
	}

	h, err := sdktest.Start(wcPlugin, sdktest.Options{Roots: []string{dir}})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	fmt.Println(h.Call("wc", `{"path":"fog.txt"}`))
	fmt.Println(h.Call("wc", `{"path":"nope.txt"}`))
	fmt.Println(h.Call("wc", `{"path":"../fog.txt"}`))
	fmt.Println(h.Call("wc", `{"file":"fog.txt"}`))
	fmt.Println(h.Call("cat", `{"path":"fog.txt"}`))
	// Output:
	// 2 lines, 7 words, 34 bytes
	// Error executing wc: file not found: nope.txt
	// Error executing wc: path "../fog.txt" is outside the workspace roots
	// Error executing wc: invalid arguments: unexpected additional properties ["file"]
	// Error: tool not found: cat
}
