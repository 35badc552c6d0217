package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
)

// Every tool here works the same way: it opens the call's workspace roots,
// places each path the model gave in a root (workspace.Resolve, which
// refuses "..", absolute paths elsewhere and the prefix trick), resolves
// the path's symbolic links itself with follow, and then does every file
// operation through the os.Root of the resolved path. os.Root resolves
// each component with openat and refuses anything that leaves the root,
// so a path swapped for a symbolic link between follow and the operation
// is refused too.
//
// Errors name the path as the model gave it (Path.Arg); answers name it
// as Path.Display shows it: relative to its root.

// maxLinkHops bounds the symbolic links followed for one path, as Linux's
// own limit (ELOOP after 40) does.
const maxLinkHops = 40

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

// follow resolves the symbolic links of p, one component at a time,
// through its root: every link's target is placed in the workspace again
// (it may lead to another root), and a target outside the roots is the
// outside error for p. With last false the final component is not
// followed: the result names it, link or not (for remove and move, which
// act on a link itself). Components that do not exist end the walk; the
// result names them unresolved, for a caller that will create them.
//
// The result keeps p.Arg, so that its errors name the path as the model
// gave it. Its Rel has no symbolic link in its directories at the time of
// the walk; a later swap is caught by os.Root when the caller uses it.
func follow(w *workspace.Workspace, p workspace.Path, last bool) (workspace.Path, error) {
	cur := p
	hops := 0
walk:
	for {
		parts := splitRel(cur.Rel)
		done := "."
		for i, name := range parts {
			next := filepath.Join(done, name)
			if i == len(parts)-1 && !last {
				done = next
				break
			}
			info, err := cur.Root.Lstat(next)
			if errors.Is(err, fs.ErrNotExist) {
				done = filepath.Join(append([]string{done}, parts[i:]...)...)
				break
			}
			if err != nil {
				return workspace.Path{}, pathErr(p, err)
			}
			if info.Mode()&fs.ModeSymlink == 0 {
				done = next
				continue
			}
			if hops++; hops > maxLinkHops {
				return workspace.Path{}, fmt.Errorf("%s: too many levels of symbolic links", textsafe.Name(p.Arg))
			}
			target, err := cur.Root.Readlink(next)
			if errors.Is(err, syscall.EINVAL) {
				// No longer a link: it changed since Lstat. Walk
				// again; the hop still counts, so this ends.
				continue walk
			}
			if err != nil {
				return workspace.Path{}, pathErr(p, err)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur.RootPath, done, target)
			}
			target = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			np, err := w.Resolve(target)
			if err != nil {
				if errors.Is(err, workspace.ErrOutside) {
					return workspace.Path{}, workspace.OutsideError(p.Arg)
				}
				return workspace.Path{}, fmt.Errorf("%s: %w", textsafe.Name(p.Arg), err)
			}
			cur = np
			continue walk
		}
		return workspace.Path{
			Arg:      p.Arg,
			Abs:      filepath.Join(cur.RootPath, done),
			Rel:      done,
			Root:     cur.Root,
			RootPath: cur.RootPath,
		}, nil
	}
}

// resolve places arg in the workspace and follows its links (the last one
// too when last is true). It returns the path as given, for answers, and
// the resolved path, for file operations.
func resolve(w *workspace.Workspace, arg string, last bool) (given, real workspace.Path, err error) {
	given, err = w.Resolve(arg)
	if err != nil {
		return given, real, err
	}
	real, err = follow(w, given, last)
	return given, real, err
}

// splitRel splits a clean root-relative path into its components; the
// root itself (".") has none.
func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, string(filepath.Separator))
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

// writeErr is pathErr for a write through atomicfile, which says in
// every case whether anything was written.
func writeErr(p workspace.Path, err error) error {
	name := textsafe.Name(p.Arg)
	switch {
	case errors.Is(err, atomicfile.ErrChanged):
		return fmt.Errorf("%s changed while it was being edited (another program wrote it meanwhile): nothing was written; read it again and redo the change", name)
	case errors.Is(err, atomicfile.ErrOwner):
		return fmt.Errorf("%s: %v: only root can give a file to another user, so nothing was written", name, err)
	case errors.Is(err, atomicfile.ErrXattr):
		return fmt.Errorf("%s: %v: nothing was written", name, err)
	case errors.Is(err, atomicfile.ErrNoTime):
		return fmt.Errorf("%s: %v, so nothing was written; give the call more time", name, err)
	case errors.Is(err, atomicfile.ErrNotDurable):
		return fmt.Errorf("%s was written, but syncing its directory to disk failed (%s): the change may not survive a power cut", name, workspace.Reason(err))
	}
	return pathErr(p, err)
}
