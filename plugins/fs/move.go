package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type moveInput struct {
	Source      string `json:"source" jsonschema:"Path of the file, directory or symbolic link to move."`
	Destination string `json:"destination" jsonschema:"Its new path (the full new name, not a directory to move it into). Missing parent directories are created."`
	Overwrite   bool   `json:"overwrite,omitempty" jsonschema:"Replace an existing destination. Default false: an existing destination is an error."`
}

var move = checked(sdk.NewTool(sdk.Info{
	Name:  "move",
	Title: "Move or rename",
	Description: "Move or rename a file, directory or symbolic link (a link is moved itself, not what it points to). Missing parent directories of the destination are created. " +
		"An existing destination is never replaced unless overwrite is true. Moves across file systems copy and then remove the source; a move that fails or times out leaves the source as it was.",
	Annotations: sdk.Annotations{Destructive: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in moveInput) (string, error) {
	givenSrc, src, err := w.ResolveFollow(in.Source, false)
	if err != nil {
		return "", err
	}
	givenDst, dst, err := w.ResolveFollow(in.Destination, false)
	if err != nil {
		return "", err
	}
	if givenSrc.IsRoot() || src.IsRoot() {
		return "", fmt.Errorf("refusing to move the workspace root %s", textsafe.Name(in.Source))
	}
	if givenDst.IsRoot() || dst.IsRoot() {
		return "", fmt.Errorf("refusing to replace the workspace root %s", textsafe.Name(in.Destination))
	}
	for _, p := range []workspace.Path{givenSrc, src} {
		if held := w.RootsWithin(p); len(held) > 0 {
			return "", fmt.Errorf("refusing to move %s: it holds the workspace root %s", textsafe.Name(in.Source), textsafe.Name(held[0]))
		}
	}
	info, err := src.Root.Lstat(src.Rel)
	if err != nil {
		return "", pathErr(src, err)
	}
	if sameFile(src, dst) {
		return "", fmt.Errorf("source and destination are the same path: %s", textsafe.Name(givenSrc.Display()))
	}
	if info.IsDir() && within(dst, src) {
		return "", fmt.Errorf("cannot move %s into itself (%s)", textsafe.Name(in.Source), textsafe.Name(in.Destination))
	}
	undo, err := atomicfile.MkdirAll(dst.Root, filepath.Dir(dst.Rel), 0o755)
	if err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
			if !workspace.IsEscape(err) {
				// The parent is there, and not a directory.
				return "", fmt.Errorf("%s: not a directory", textsafe.Name(dst.Arg))
			}
		}
		return "", pathErr(dst, err)
	}
	err = renameAt(src, dst, in.Overwrite)
	if errors.Is(err, syscall.EXDEV) {
		err = moveByCopy(ctx, src, dst, in.Overwrite)
	}
	if err != nil {
		var done *partialMove
		if !errors.As(err, &done) {
			undo()
		}
		return "", moveErr(err, src, dst)
	}
	return fmt.Sprintf("Moved %s to %s", textsafe.Name(givenSrc.Display()), textsafe.Name(givenDst.Display())), nil
})))

// moveErr says what went wrong with a move in the model's terms.
func moveErr(err error, src, dst workspace.Path) error {
	var done *partialMove
	var re *renameError
	switch {
	case errors.As(err, &done):
		return done
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, atomicfile.ErrNoTime):
		return fmt.Errorf("cannot move %s to %s: %v, so nothing was moved; give the call more time", textsafe.Name(src.Arg), textsafe.Name(dst.Arg), err)
	case errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("destination %s already exists: set overwrite to true to replace it", textsafe.Name(dst.Arg))
	case errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("cannot replace %s: it is a directory that is not empty", textsafe.Name(dst.Arg))
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("cannot replace the directory %s with a file", textsafe.Name(dst.Arg))
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot replace %s with a directory: it is not a directory", textsafe.Name(dst.Arg))
	case errors.As(err, &re):
		if re.dst {
			return pathErr(dst, re.err)
		}
		return pathErr(src, re.err)
	case workspace.IsEscape(err):
		return workspace.OutsideError(src.Arg)
	}
	return fmt.Errorf("cannot move %s to %s: %s", textsafe.Name(src.Arg), textsafe.Name(dst.Arg), workspace.Reason(err))
}

// renameError marks which side of a move an error is about.
type renameError struct {
	dst bool
	err error
}

func (e *renameError) Error() string { return e.err.Error() }
func (e *renameError) Unwrap() error { return e.err }

// partialMove is the error of a move by copy that put the copy in place
// but could not finish: it says what was done, for the model.
type partialMove struct{ msg string }

func (e *partialMove) Error() string { return e.msg }

// moveByCopy moves src to dst where no rename can. It copies src (a file
// with its mode, owner where it may and times, a symbolic link as a link,
// a directory recursively) through the roots to a temporary name beside
// dst, syncing every file and directory it writes, and renames that into
// place with renameAt (so an existing dst is replaced only with
// overwrite, and never by a race). Only then, with the copy synced to
// disk, does it remove src.
//
// Until the rename it stops when ctx ends, removes the partial copy and
// leaves src alone: a move that fails changed nothing. It does not start
// the rename within atomicfile.CommitMargin of ctx's deadline. After the rename
// the move completes; if removing src then fails the error says that the
// copy is in place.
func moveByCopy(ctx context.Context, src, dst workspace.Path, overwrite bool) error {
	dir := filepath.Dir(dst.Rel)
	atomicfile.Sweep(dst.Root, dir)
	tmp := dst
	tmp.Rel = filepath.Join(dir, atomicfile.TempName("move"))
	tmp.Abs = filepath.Join(dst.RootPath, tmp.Rel)
	fail := func(err error) error {
		dst.Root.RemoveAll(tmp.Rel)
		return err
	}
	if err := copyTree(ctx, src.Root, src.Rel, dst.Root, tmp.Rel); err != nil {
		return fail(err)
	}
	if err := atomicfile.SyncDir(dst.Root, dir); err != nil {
		return fail(&renameError{dst: true, err: err})
	}
	if err := atomicfile.Commit(ctx); err != nil {
		return fail(err)
	}
	if err := renameAt(tmp, dst, overwrite); err != nil {
		return fail(err)
	}
	// The copy is in place: from here on the move completes.
	if err := atomicfile.SyncDir(dst.Root, dir); err != nil {
		return &partialMove{fmt.Sprintf("copied %s to %s, but syncing the copy to disk failed (%s), so the source was kept: both exist now",
			textsafe.Name(src.Arg), textsafe.Name(dst.Arg), workspace.Reason(err))}
	}
	if err := src.Root.RemoveAll(src.Rel); err != nil {
		return &partialMove{fmt.Sprintf("copied %s to %s, but could not remove the source: %v",
			textsafe.Name(src.Arg), textsafe.Name(dst.Arg), pathErr(src, err))}
	}
	atomicfile.SyncDir(src.Root, filepath.Dir(src.Rel))
	return nil
}

// copyTree copies the file, link or directory srel of sr to drel of dr,
// which must not exist, syncing what it writes. Symbolic links are
// copied as links, never followed; other special files are refused.
func copyTree(ctx context.Context, sr *os.Root, srel string, dr *os.Root, drel string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	info, err := sr.Lstat(srel)
	if err != nil {
		return &renameError{err: err}
	}
	mode := info.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := sr.Readlink(srel)
		if err != nil {
			return &renameError{err: err}
		}
		if err := dr.Symlink(target, drel); err != nil {
			return &renameError{dst: true, err: err}
		}
		keepOwner(dr, drel, info, true)
		return nil
	case mode.IsDir():
		if err := dr.Mkdir(drel, 0o700); err != nil {
			return &renameError{dst: true, err: err}
		}
		d, err := sr.Open(srel)
		if err != nil {
			return &renameError{err: err}
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return &renameError{err: err}
		}
		for _, name := range names {
			if err := copyTree(ctx, sr, filepath.Join(srel, name), dr, filepath.Join(drel, name)); err != nil {
				return err
			}
		}
		out, err := dr.Open(drel)
		if err != nil {
			return &renameError{dst: true, err: err}
		}
		defer out.Close()
		keepOwner(dr, drel, info, false)
		if err := out.Chmod(mode.Perm() | mode&(fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return &renameError{dst: true, err: err}
		}
		if err := out.Sync(); err != nil {
			return &renameError{dst: true, err: err}
		}
		dr.Chtimes(drel, info.ModTime(), info.ModTime())
		return nil
	case mode.IsRegular():
		return copyFile(ctx, sr, srel, dr, drel, info)
	}
	return fmt.Errorf("cannot copy %s: it is a %s", textsafe.Name(srel), workspace.Kind(mode))
}

// copyFile copies a regular file's content, mode, owner (where it may)
// and modification time to a new file, and syncs it. It stops when ctx
// ends.
func copyFile(ctx context.Context, sr *os.Root, srel string, dr *os.Root, drel string, info fs.FileInfo) (err error) {
	in, err := sr.OpenFile(srel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &renameError{err: err}
	}
	defer in.Close()
	if now, err := in.Stat(); err != nil || !now.Mode().IsRegular() {
		return fmt.Errorf("cannot copy %s: it changed while it was copied", textsafe.Name(srel))
	}
	out, err := dr.OpenFile(drel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return &renameError{dst: true, err: err}
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = &renameError{dst: true, err: cerr}
		}
	}()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return &renameError{dst: true, err: err}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return &renameError{err: rerr}
		}
	}
	keepOwner(dr, drel, info, false)
	mode := info.Mode()
	if err := out.Chmod(mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return &renameError{dst: true, err: err}
	}
	if err := out.Sync(); err != nil {
		return &renameError{dst: true, err: err}
	}
	dr.Chtimes(drel, info.ModTime(), info.ModTime())
	return nil
}

// keepOwner gives a copy the owner and group of its original where this
// process may (as mv does): as root always, otherwise the copy is the
// mover's.
func keepOwner(dr *os.Root, drel string, info fs.FileInfo, link bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid()) {
		return
	}
	if link {
		dr.Lchown(drel, int(st.Uid), int(st.Gid))
		return
	}
	dr.Chown(drel, int(st.Uid), int(st.Gid))
}
