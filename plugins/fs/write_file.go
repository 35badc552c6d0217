package main

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type writeFileInput struct {
	Path    string `json:"path" jsonschema:"Path of the file to write. Parent directories are created."`
	Content string `json:"content" jsonschema:"The complete new content of the file."`
}

var writeFile = sdk.NewTool(sdk.Info{
	Name:        "write_file",
	Description: "Write content to a file, replacing it if it exists and creating it and its parent directories if not. The write is atomic: readers see the old content or the new, never a mix. An existing file keeps its permissions.",
	Annotations: sdk.Annotations{Destructive: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in writeFileInput) (string, error) {
	given, p, err := resolve(w, in.Path, true)
	if err != nil {
		return "", err
	}
	if err := atomicfile.WriteIn(p.Root, p.Rel, []byte(in.Content), 0o644); err != nil {
		return "", pathErr(p, err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s", len(in.Content), given.Display()), nil
}))
