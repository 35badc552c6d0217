package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type mkdirInput struct {
	Path string `json:"path" jsonschema:"Path of the directory to create. Missing parent directories are created too."`
}

var mkdir = checked(sdk.NewTool(sdk.Info{
	Name:        "mkdir",
	Title:       "Create directory",
	Description: "Create a directory and any missing parents, like mkdir -p. A directory that already exists is not an error.",
	Annotations: sdk.Annotations{Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in mkdirInput) (string, error) {
	given, p, err := w.ResolveFollow(in.Path, true)
	if err != nil {
		return "", err
	}
	info, err := p.Root.Lstat(p.Rel)
	switch {
	case err == nil && info.IsDir():
		return fmt.Sprintf("Directory %s already exists", textsafe.Name(given.Display())), nil
	case err == nil:
		return "", fmt.Errorf("%s already exists and is not a directory", textsafe.Name(p.Arg))
	case !errors.Is(err, fs.ErrNotExist) || workspace.IsEscape(err):
		return "", pathErr(p, err)
	}
	if _, err := atomicfile.MkdirAll(p.Root, p.Rel, 0o755); err != nil {
		return "", pathErr(p, err)
	}
	return fmt.Sprintf("Created directory %s", textsafe.Name(given.Display())), nil
})))
