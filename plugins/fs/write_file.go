package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type writeFileInput struct {
	Path     string `json:"path" jsonschema:"Path of the file to write. Parent directories are created."`
	Content  string `json:"content" jsonschema:"The complete new content of the file: utf-8 text, or with encoding base64 the bytes base64-encoded."`
	Encoding string `json:"encoding,omitempty" jsonschema:"How content is given: utf-8 (the default) for text, base64 for bytes."`
}

var writeFile = checked(sdk.NewTool(sdk.Info{
	Name:  "write_file",
	Title: "Write file",
	Description: "Write content to a file, replacing it if it exists and creating it and its parent directories if not. The write is atomic: readers see the old content or the new, never a mix. " +
		"An existing file keeps its permissions, owner and group. Use encoding base64 to write bytes that are not utf-8 text.",
	Annotations: sdk.Annotations{Destructive: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in writeFileInput) (string, error) {
	encoding, err := normalizeEncoding(in.Encoding)
	if err != nil {
		return "", err
	}
	data := []byte(in.Content)
	if encoding == "base64" {
		data, err = base64.StdEncoding.DecodeString(strings.TrimSpace(in.Content))
		if err != nil {
			return "", fmt.Errorf("content is not valid base64: %v", err)
		}
	}
	if err := notDirName(in.Path); err != nil {
		return "", err
	}
	given, p, err := w.ResolveFollow(in.Path, true)
	if err != nil {
		return "", err
	}
	res, err := atomicfile.WriteFile(ctx, p.Root, p.Rel, data, atomicfile.Options{Perm: 0o644})
	if err != nil {
		return "", workspace.WriteErr(p, err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s%s", len(data), textsafe.Name(given.Display()), linksNote(res)), nil
})))

// notDirName refuses a path that names a directory by its form: a
// trailing slash, or a last component of "." or "..".
func notDirName(arg string) error {
	base := arg[strings.LastIndexByte(arg, '/')+1:]
	switch {
	case strings.HasSuffix(arg, "/"):
		return fmt.Errorf("%s ends with a slash, which names a directory: give the file's name (mkdir creates directories)", textsafe.Name(arg))
	case base == "." || base == "..":
		return fmt.Errorf("%s names a directory: give the file's name", textsafe.Name(arg))
	}
	return nil
}

// linksNote tells the model what a replace did to a file's other hard
// links.
func linksNote(res atomicfile.Result) string {
	if res.Links > 1 {
		return fmt.Sprintf(" (the file had %d hard links: this name now has the new content, the other %d keep the old)", res.Links, res.Links-1)
	}
	return ""
}
