// Package workspace confines the file tools to the host's workspace roots.
//
// A path is first placed lexically: made absolute against the first root,
// cleaned, and matched to the root that contains it (the deepest, when
// roots nest). Every file operation then goes through that root's
// os.Root, which resolves each component with openat and refuses any
// symbolic link, "..", or swap between check and use that would leave
// the root. No string prefix is ever trusted on its own.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/sdk"
)

// ErrOutside is wrapped by every error about a path outside the roots.
var ErrOutside = errors.New("outside the workspace roots")

// OutsideError is the error for a path outside the roots.
func OutsideError(path string) error {
	return &outsideError{path: path}
}

type outsideError struct{ path string }

func (e *outsideError) Error() string { return fmt.Sprintf("path %q is %s", e.path, ErrOutside) }
func (e *outsideError) Unwrap() error { return ErrOutside }

// Workspace is a set of open roots. Close it after the call.
type Workspace struct {
	roots []*root
}

type root struct {
	path string
	os   *os.Root
}

// Open opens the roots, absolute directory paths.
func Open(paths []string) (*Workspace, error) {
	if len(paths) == 0 {
		return nil, errors.New("the host set no workspace roots")
	}
	w := &Workspace{}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			w.Close()
			return nil, fmt.Errorf("workspace root %q is not an absolute path", p)
		}
		r, err := os.OpenRoot(p)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %s: %w", p, errors.Unwrap(err))
		}
		w.roots = append(w.roots, &root{path: filepath.Clean(p), os: r})
	}
	return w, nil
}

// FromContext opens the roots of a call (sdk.Roots).
func FromContext(ctx context.Context) (*Workspace, error) {
	return Open(sdk.Roots(ctx))
}

// Close closes the roots.
func (w *Workspace) Close() error {
	var errs []error
	for _, r := range w.roots {
		errs = append(errs, r.os.Close())
	}
	return errors.Join(errs...)
}

// First is the first root's path: where relative paths resolve.
func (w *Workspace) First() string { return w.roots[0].path }

// Path is a path placed in a root.
type Path struct {
	// Arg is the path as the caller gave it.
	Arg string
	// Abs is the cleaned absolute path.
	Abs string
	// Rel is the path relative to its root, "." for the root itself.
	Rel string
	// Root is the root the path is in.
	Root *os.Root
	// RootPath is the root's path.
	RootPath string
}

// IsRoot reports whether the path is a workspace root itself.
func (p Path) IsRoot() bool { return p.Rel == "." }

// Display is how a tool reports the path: relative to its root when that
// is shorter than the absolute path.
func (p Path) Display() string {
	if len(p.Rel) < len(p.Abs) {
		return p.Rel
	}
	return p.Abs
}

// Join returns the path of a name inside p.
func (p Path) Join(name string) Path {
	q := p
	q.Arg = filepath.Join(p.Arg, name)
	q.Abs = filepath.Join(p.Abs, name)
	q.Rel = filepath.Join(p.Rel, name)
	return q
}

// Resolve places a path given by the model in a root, or fails with an
// error wrapping ErrOutside.
func (w *Workspace) Resolve(arg string) (Path, error) {
	if arg == "" {
		return Path{}, errors.New("path is empty")
	}
	if strings.ContainsRune(arg, 0) {
		return Path{}, fmt.Errorf("path %q contains a NUL byte", arg)
	}
	abs := arg
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.roots[0].path, abs)
	}
	abs = filepath.Clean(abs)
	var best *root
	var bestRel string
	for _, r := range w.roots {
		rel, err := filepath.Rel(r.path, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if best == nil || len(r.path) > len(best.path) {
			best, bestRel = r, rel
		}
	}
	if best == nil {
		return Path{}, OutsideError(arg)
	}
	return Path{Arg: arg, Abs: abs, Rel: bestRel, Root: best.os, RootPath: best.path}, nil
}

// Err rewrites an error of an os.Root operation on p: an escape becomes
// the outside error, and the root-relative name in a PathError becomes
// the path as the caller gave it.
func (p Path) Err(err error) error {
	if err == nil {
		return nil
	}
	if IsEscape(err) {
		return OutsideError(p.Arg)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(pe.Err, fs.ErrNotExist):
			return fmt.Errorf("%s: no such file or directory", p.Arg)
		case errors.Is(pe.Err, fs.ErrPermission):
			return fmt.Errorf("%s: permission denied", p.Arg)
		}
		return fmt.Errorf("%s %s: %v", pe.Op, p.Arg, pe.Err)
	}
	return err
}

// IsEscape reports whether err is os.Root refusing a path that leaves the
// root (through "..", or a symbolic link).
func IsEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}
