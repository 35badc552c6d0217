package main

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/workspace"
)

// Every tool here works the same way: it opens the call's workspace roots,
// places each path the model gave in a root (workspace.Resolve, which
// refuses "..", absolute paths elsewhere and the prefix trick), resolves
// the path's symbolic links one at a time (Workspace.ResolveFollow), and
// then does every file operation through the os.Root of the resolved
// path. os.Root resolves each component with openat and refuses anything
// that leaves the root, so a path swapped for a symbolic link between the
// walk and the operation is refused too.
//
// Errors name the path as the model gave it (Path.Arg); answers name it
// as Path.Display shows it: relative to its root.

// inWorkspace adapts a handler that needs the call's workspace: it opens
// the roots before the call and closes them after.
func inWorkspace[In any](h func(ctx context.Context, w *workspace.Workspace, in In) (string, error)) func(context.Context, In) (string, error) {
	return func(ctx context.Context, in In) (string, error) {
		w, err := workspace.FromContext(ctx)
		if err != nil {
			return "", err
		}
		defer w.Close()
		return h(ctx, w, in)
	}
}

// sameFile reports whether two resolved paths name the same place.
func sameFile(a, b workspace.Path) bool {
	return a.Abs == b.Abs
}

// within reports whether the resolved path inner lies strictly inside
// outer.
func within(inner, outer workspace.Path) bool {
	return strings.HasPrefix(inner.Abs, strings.TrimSuffix(outer.Abs, string(filepath.Separator))+string(filepath.Separator))
}

// formatSize renders a size for list_dir: exact bytes under 1 KiB, then
// binary units with one decimal ("1.2 KiB", "3.0 MiB").
func formatSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
}

// pathErr says what went wrong with an operation on p in the tool's
// words (see workspace.Path.Err): an escape is the outside error, any
// other failure "P: what went wrong", P the path as the model gave it.
// The call's own end (cancellation, deadline) passes through.
func pathErr(p workspace.Path, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return p.Err(err)
}
