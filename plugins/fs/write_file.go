package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/sdk"
)

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"Path of the file to write. Parent directories are created."`
	Content string `json:"content" jsonschema:"The complete new content of the file."`
}

var writeFile = sdk.NewTool(sdk.Info{
	Name:        "write_file",
	Description: "Write content to a file, replacing it if it exists and creating it and its parent directories if not. The write is atomic: readers see the old content or the new, never a mix.",
	Annotations: sdk.Annotations{Destructive: true, Idempotent: true},
}, func(ctx context.Context, in writeFileInput) (string, error) {
	if in.Path == "" {
		return "", errors.New("path is empty")
	}
	if err := atomicfile.Write(in.Path, []byte(in.Content), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("Wrote %d bytes to %s", len(in.Content), in.Path), nil
})
