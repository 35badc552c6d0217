package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type removeInput struct {
	Path string `json:"path" jsonschema:"Path of the file or directory to remove. A directory is removed with everything in it."`
}

var remove = checked(sdk.NewTool(sdk.Info{
	Name:  "remove",
	Title: "Remove file or directory",
	Description: "Remove a file, or a directory and everything in it (like rm -rf). This cannot be undone. A path that does not exist is not an error. " +
		"A symbolic link is removed itself, never what it points to. A workspace root cannot be removed.",
	Annotations: sdk.Annotations{Destructive: true, OptIn: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in removeInput) (string, error) {
	given, p, err := w.ResolveFollow(in.Path, false)
	if err != nil {
		return "", err
	}
	if given.IsRoot() || p.IsRoot() {
		return "", fmt.Errorf("refusing to remove the workspace root %s", textsafe.Name(in.Path))
	}
	if held := w.RootsWithin(p); len(held) > 0 {
		return "", fmt.Errorf("refusing to remove %s: it holds the workspace root %s", textsafe.Name(in.Path), textsafe.Name(held[0]))
	}
	info, err := p.Root.Lstat(p.Rel)
	if errors.Is(err, fs.ErrNotExist) && !workspace.IsEscape(err) {
		return fmt.Sprintf("Nothing to remove: %s does not exist", textsafe.Name(given.Display())), nil
	}
	if err != nil {
		return "", pathErr(p, err)
	}
	if err := p.Root.RemoveAll(p.Rel); err != nil {
		return "", pathErr(p, err)
	}
	what := "file"
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		what = "symbolic link"
	case info.IsDir():
		what = "directory"
	}
	return fmt.Sprintf("Removed %s %s", what, textsafe.Name(given.Display())), nil
})))
