package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type removeInput struct {
	Path string `json:"path" jsonschema:"Path of the file or directory to remove. A directory is removed with everything in it."`
}

var remove = sdk.NewTool(sdk.Info{
	Name: "remove",
	Description: "Remove a file, or a directory and everything in it (like rm -rf). This cannot be undone. A path that does not exist is not an error. " +
		"A symbolic link is removed itself, never what it points to. A workspace root cannot be removed.",
	Annotations: sdk.Annotations{Destructive: true, OptIn: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in removeInput) (string, error) {
	given, p, err := resolve(w, in.Path, false)
	if err != nil {
		return "", err
	}
	if given.IsRoot() || p.IsRoot() {
		return "", fmt.Errorf("refusing to remove the workspace root %s", in.Path)
	}
	for _, r := range sdk.Roots(ctx) {
		if r = filepath.Clean(r); r == p.Abs || within(workspace.Path{Abs: r}, p) {
			return "", fmt.Errorf("refusing to remove %s: it holds the workspace root %s", in.Path, r)
		}
	}
	info, err := p.Root.Lstat(p.Rel)
	if errors.Is(err, fs.ErrNotExist) && !workspace.IsEscape(err) {
		return fmt.Sprintf("Nothing to remove: %s does not exist", given.Display()), nil
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
	return fmt.Sprintf("Removed %s %s", what, given.Display()), nil
}))
