//go:build unix

package sdk

import (
	"context"
	"io"
	"os"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/workspace"
)

// Workspace is the workspace roots of one call, open: what a tool that
// takes a path from the model uses to stay inside them, with the
// confinement and the error texts of the built-in file tools (read_file,
// write_file, ...), which share its implementation.
//
// A path is placed lexically first: made absolute against the first root,
// cleaned, and matched to the root that holds it. Its symbolic links are
// then followed one at a time, each target placed in the roots again (a
// link may lead into another root), and every file operation goes through
// that root's [os.Root], which resolves each component with openat and
// refuses anything that leaves the root: "..", an absolute path
// elsewhere, a symbolic link pointing outside, a path swapped for a link
// between the check and the use. No string prefix is trusted on its own.
//
// A path outside the roots is refused with an error wrapping
// [ErrOutsideWorkspace], whose text is
//
//	path "P" is outside the workspace roots
//
// and which the model reads as "Error executing NAME: path "P" is outside
// the workspace roots" when the tool returns it. Other errors name the
// path as the model gave it and say what is wrong in plain words
// ("file not found: P", "P is a directory, not a file", "P: permission
// denied"), never with a system call's name or an absolute path the
// model did not give.
//
// A Workspace holds the roots open: Close it before the call returns.
type Workspace struct {
	w *workspace.Workspace
}

// ErrOutsideWorkspace is wrapped by every error of a [Workspace] about a
// path outside the workspace roots.
var ErrOutsideWorkspace = workspace.ErrOutside

// OpenWorkspace opens the workspace roots of the call in ctx (see
// [Roots]):
//
//	ws, err := sdk.OpenWorkspace(ctx)
//	if err != nil {
//		return "", err
//	}
//	defer ws.Close()
//	data, err := ws.ReadFile(in.Path)
//
// It fails when the host set no roots, or a root cannot be opened.
func OpenWorkspace(ctx context.Context) (*Workspace, error) {
	w, err := workspace.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	return &Workspace{w: w}, nil
}

// Close closes the roots.
func (w *Workspace) Close() error { return w.w.Close() }

// Resolve places path in the roots and follows its symbolic links, the
// last one too, and returns the root it leads into and the path relative
// to that root, "." for the root itself. Missing components are kept as
// they are, for a caller that creates them. Do every operation on the
// path through root:
//
//	root, rel, err := ws.Resolve(in.Path)
//	if err != nil {
//		return "", err
//	}
//	entries, err := fs.ReadDir(root.FS(), rel)
//	if err != nil {
//		return "", sdk.FileError(in.Path, err)
//	}
//
// root belongs to the Workspace: do not close it. An error of an
// operation through root is worded with [FileError].
func (w *Workspace) Resolve(path string) (root *os.Root, rel string, err error) {
	_, p, err := w.w.ResolveFollow(path, true)
	if err != nil {
		return nil, "", err
	}
	return p.Root, p.Rel, nil
}

// Open opens the regular file at path for reading. A missing file is
// "file not found: P"; a directory "P is a directory, not a file"; a
// FIFO, socket or device "P is a fifo, not a regular file" (and so on):
// Open never blocks on one.
func (w *Workspace) Open(path string) (*os.File, error) {
	_, p, err := w.w.ResolveFollow(path, true)
	if err != nil {
		return nil, err
	}
	f, _, err := workspace.OpenRegular(p)
	return f, err
}

// ReadFile reads the whole regular file at path, with Open's errors. It
// reads all of it: a tool that returns the content to the model bounds it
// first (the built-in read_file returns at most 256 KiB of text a call).
func (w *Workspace) ReadFile(path string) ([]byte, error) {
	_, p, err := w.w.ResolveFollow(path, true)
	if err != nil {
		return nil, err
	}
	f, _, err := workspace.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, p.Err(err)
	}
	return data, nil
}

// WriteFile replaces the file at path with data, or creates it and its
// missing parent directories, as the built-in write_file does: a symbolic
// link at path is written through, never replaced; the write is atomic
// (a reader sees the old content or the new, never a part, and a write
// that succeeded survives a power cut); an existing file keeps its mode,
// owner, group and extended attributes, and a new one gets mode 0644.
// Writers of one file through WriteFile, in any plugin, take turns.
//
// ctx is the call's: a write that cannot finish before its deadline, or
// whose call is cancelled, writes nothing. Its errors say whether
// anything was written.
func (w *Workspace) WriteFile(ctx context.Context, path string, data []byte) error {
	_, p, err := w.w.ResolveFollow(path, true)
	if err != nil {
		return err
	}
	_, err = atomicfile.WriteFile(ctx, p.Root, p.Rel, data, atomicfile.Options{Perm: 0o644})
	return workspace.WriteErr(p, err)
}

// FileError words err, the error of an operation on path through the
// root that [Workspace.Resolve] returned, as the built-in tools do: an
// operation that would leave the root is the outside error for path, and
// any other failure of the file system "P: what went wrong" ("P: no such
// file or directory", "P: permission denied"), P the path as the model
// gave it, without the system call's name. Any other error is returned as
// it is, nil included.
func FileError(path string, err error) error {
	return workspace.Path{Arg: path}.Err(err)
}
