// Package workspace confines the file tools to the host's workspace roots.
//
// A path is first placed lexically: made absolute against the first root,
// cleaned, and matched to the root that contains it (the deepest, when
// roots nest). Every file operation then goes through that root's
// os.Root, which resolves each component with openat and refuses any
// symbolic link, "..", or swap between check and use that would leave
// the root. No string prefix is ever trusted on its own.
//
// The sdk's Workspace (sdk.OpenWorkspace) is built on this package, so a
// third-party tool confines the paths it is given, and words its errors,
// exactly as the built-in file tools do.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/internal/errs"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
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

// MaxPath is the longest absolute path a workspace path may have, in
// bytes: Linux's PATH_MAX (4096) less the NUL that ends a path handed to
// the kernel. os.Root walks a path one name at a time, so it could
// create a file deeper than that, and leave a tree that the tools which
// take whole paths (rm, cd, most programs) cannot reach.
const MaxPath = 4095

// TooLongError is the error for a path whose absolute form is n bytes,
// more than MaxPath. It matches syscall.ENAMETOOLONG with errors.Is.
type TooLongError struct{ Len int }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("path is %d bytes long as an absolute path, more than the %d bytes the system allows (PATH_MAX 4096, less one for the terminating NUL)", e.Len, MaxPath)
}

func (e *TooLongError) Is(target error) bool { return target == syscall.ENAMETOOLONG }

// Workspace is a set of open roots. Close it after the call.
type Workspace struct {
	roots []*root
}

type root struct {
	path string // as the host gave it, cleaned
	real string // with its symbolic links resolved
	os   *os.Root
}

// Open opens the roots, absolute directory paths. A root given through a
// symbolic link is opened at its real path, and both the path given and
// the real one lead into it.
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
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %s: %w", p, errs.Innermost(err))
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %s: %w", p, errs.Innermost(err))
		}
		w.roots = append(w.roots, &root{path: filepath.Clean(p), real: filepath.Clean(real), os: r})
	}
	return w, nil
}

// FromContext opens the roots of a call (sdk.Roots, read here from the
// same context key, since the sdk builds its own helper on this package).
func FromContext(ctx context.Context) (*Workspace, error) {
	roots, _ := ctx.Value(toolcall.RootsKey{}).([]string)
	return Open(roots)
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
//
// The path is made absolute against the first root and cleaned. A path
// under a root's path as given or under its real path is in that root;
// where roots nest, the deepest holds it, compared by real paths. The
// result's Abs is the root's path as given joined with Rel, so one place
// always has one Abs.
//
// A path whose absolute form is longer than MaxPath, under the root's
// path as given or under its real path (the longer counts), is refused
// with a TooLongError: the kernel could not open it by that path.
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
	real, ok := w.realPath(abs)
	if !ok {
		return Path{}, OutsideError(arg)
	}
	var best *root
	var bestRel string
	for _, r := range w.roots {
		rel, ok := relWithin(r.real, real)
		if ok && (best == nil || len(r.real) > len(best.real)) {
			best, bestRel = r, rel
		}
	}
	abs = filepath.Join(best.path, bestRel)
	if n := max(len(abs), len(real)); n > MaxPath {
		return Path{}, &TooLongError{Len: n}
	}
	return Path{Arg: arg, Abs: abs, Rel: bestRel, Root: best.os, RootPath: best.path}, nil
}

// realPath rewrites a clean absolute path under a root's path as given to
// the same place under its real path (the longest match decides). It
// reports false for a path under no root.
func (w *Workspace) realPath(abs string) (string, bool) {
	best, bestLen := "", -1
	for _, r := range w.roots {
		for _, alias := range []string{r.path, r.real} {
			if rel, ok := relWithin(alias, abs); ok && len(alias) > bestLen {
				best, bestLen = filepath.Join(r.real, rel), len(alias)
			}
		}
	}
	return best, bestLen >= 0
}

// relWithin returns path relative to dir when path is dir or lies under
// it; both are clean and absolute.
func relWithin(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// RootsWithin returns the roots, as the host gave them, that are p itself
// or lie inside it: what removing or moving p would take away. A root
// counts when its real path lies in p's real place, or the path it was
// given by lies under p's path (it would no longer lead to it).
func (w *Workspace) RootsWithin(p Path) []string {
	var in []string
	base, ok := w.realPath(p.Abs)
	for _, r := range w.roots {
		_, inReal := relWithin(base, r.real)
		_, inGiven := relWithin(p.Abs, r.path)
		if ok && inReal || inGiven {
			in = append(in, r.path)
		}
	}
	return in
}

// Err rewrites an error of an os.Root operation on p in the tool's
// words: an escape becomes the outside error, and any other failure
// "P: what went wrong", P the path as the caller gave it (quoted when it
// holds control characters) and never the system call's name.
func (p Path) Err(err error) error {
	if err == nil {
		return nil
	}
	if IsEscape(err) {
		return OutsideError(p.Arg)
	}
	if !isOSError(err) {
		return err
	}
	return &pathError{arg: p.Arg, err: err}
}

// pathError is an os error about the path arg, in the tool's words. It
// unwraps to the os error, so errors.Is still finds the errno.
type pathError struct {
	arg string
	err error
}

func (e *pathError) Error() string { return textsafe.Name(e.arg) + ": " + Reason(e.err) }
func (e *pathError) Unwrap() error { return e.err }

// isOSError reports whether err is an error of an os operation: one that
// names an operation and a path that the caller must not see.
func isOSError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno)
}

// Reason says what went wrong in an os error, without the operation's
// name or its path: "no such file or directory", "permission denied",
// "too many levels of symbolic links", ...
func Reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if text, ok := errnoText[errno]; ok {
			return text
		}
		return errno.Error()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errnoText[syscall.ENOENT]
	case errors.Is(err, fs.ErrPermission):
		return errnoText[syscall.EACCES]
	case errors.Is(err, fs.ErrExist):
		return errnoText[syscall.EEXIST]
	}
	for {
		var pe *fs.PathError
		var le *os.LinkError
		var se *os.SyscallError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		case errors.As(err, &se):
			err = se.Err
		default:
			return err.Error()
		}
	}
}

// errnoText words the errors a file tool meets.
var errnoText = map[syscall.Errno]string{
	syscall.ENOENT:       "no such file or directory",
	syscall.EACCES:       "permission denied",
	syscall.EPERM:        "operation not permitted",
	syscall.ELOOP:        "too many levels of symbolic links",
	syscall.ENOTDIR:      "not a directory",
	syscall.ENAMETOOLONG: "file name too long (a name has at most 255 bytes)",
	syscall.ENOSPC:       "no space left on the device",
	syscall.EDQUOT:       "disk quota exceeded",
	syscall.EROFS:        "read-only file system",
	syscall.EISDIR:       "is a directory",
	syscall.EXDEV:        "on a different file system",
	syscall.EEXIST:       "already exists",
	syscall.ENOTEMPTY:    "directory not empty",
	syscall.EBUSY:        "in use",
	syscall.ETXTBSY:      "the file of a running program",
	syscall.EIO:          "input/output error",
	syscall.EFBIG:        "file too large",
	syscall.EMLINK:       "too many links",
	syscall.EINVAL:       "invalid argument",
	syscall.EMFILE:       "too many open files",
	syscall.ENFILE:       "too many open files in the system",
	syscall.EAGAIN:       "resource temporarily unavailable",
	syscall.ENXIO:        "no such device or address",
	syscall.ENODEV:       "no such device",
}

// IsEscape reports whether err is os.Root refusing a path that leaves the
// root (through "..", or a symbolic link).
func IsEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// JoinRel joins name to dir, both relative and written with slashes; an
// empty dir is the directory itself.
func JoinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
