package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

type moveInput struct {
	Source      string `json:"source" jsonschema:"Path of the file, directory or symbolic link to move."`
	Destination string `json:"destination" jsonschema:"Its new path (the full new name, not a directory to move it into). Missing parent directories are created."`
	Overwrite   bool   `json:"overwrite,omitempty" jsonschema:"Replace an existing destination. Default false: an existing destination is an error."`
}

var move = sdk.NewTool(sdk.Info{
	Name: "move",
	Description: "Move or rename a file, directory or symbolic link (a link is moved itself, not what it points to). Missing parent directories of the destination are created. " +
		"An existing destination is never replaced unless overwrite is true. Moves across file systems copy and then remove the source.",
	Annotations: sdk.Annotations{Destructive: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in moveInput) (string, error) {
	givenSrc, src, err := resolve(w, in.Source, false)
	if err != nil {
		return "", err
	}
	givenDst, dst, err := resolve(w, in.Destination, false)
	if err != nil {
		return "", err
	}
	if givenSrc.IsRoot() || src.IsRoot() {
		return "", fmt.Errorf("refusing to move the workspace root %s", in.Source)
	}
	if givenDst.IsRoot() || dst.IsRoot() {
		return "", fmt.Errorf("refusing to replace the workspace root %s", in.Destination)
	}
	info, err := src.Root.Lstat(src.Rel)
	if err != nil {
		return "", pathErr(src, err)
	}
	if sameFile(src, dst) {
		return "", fmt.Errorf("source and destination are the same path: %s", givenSrc.Display())
	}
	if info.IsDir() && within(dst, src) {
		return "", fmt.Errorf("cannot move %s into itself (%s)", in.Source, in.Destination)
	}
	if err := dst.Root.MkdirAll(filepath.Dir(dst.Rel), 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) && !workspace.IsEscape(err) {
			// The parent is there, and not a directory.
			return "", fmt.Errorf("%s: not a directory", dst.Arg)
		}
		return "", pathErr(dst, err)
	}
	err = renameAt(src, dst, in.Overwrite)
	if errors.Is(err, syscall.EXDEV) {
		err = moveByCopy(ctx, src, dst, in.Overwrite)
	}
	if err != nil {
		return "", moveErr(err, src, dst)
	}
	return fmt.Sprintf("Moved %s to %s", givenSrc.Display(), givenDst.Display()), nil
}))

// moveErr says what went wrong with a move in the model's terms.
func moveErr(err error, src, dst workspace.Path) error {
	switch {
	case errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("destination %s already exists: set overwrite to true to replace it", dst.Arg)
	case errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("cannot replace %s: it is a directory that is not empty", dst.Arg)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("cannot replace the directory %s with a file", dst.Arg)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot replace %s with a directory: it is not a directory", dst.Arg)
	}
	var re *renameError
	if errors.As(err, &re) {
		if re.dst {
			return pathErr(dst, re.err)
		}
		return pathErr(src, re.err)
	}
	return fmt.Errorf("cannot move %s to %s: %w", src.Arg, dst.Arg, err)
}

// renameError marks which side of a move an error is about.
type renameError struct {
	dst bool
	err error
}

func (e *renameError) Error() string { return e.err.Error() }
func (e *renameError) Unwrap() error { return e.err }

// moveByCopy moves src to dst where no rename can: it copies src (a
// file with its mode, a symbolic link as a link, a directory recursively)
// through the roots to a temporary name beside dst, renames that into
// place with renameAt (so an existing dst is replaced only with
// overwrite, and never by a race), and then removes src.
func moveByCopy(ctx context.Context, src, dst workspace.Path, overwrite bool) error {
	dir := filepath.Dir(dst.Rel)
	var tmp workspace.Path
	for range 100 {
		tmp = dst
		tmp.Rel = filepath.Join(dir, "."+filepath.Base(dst.Rel)+".move-"+strconv.FormatUint(rand.Uint64(), 36))
		tmp.Abs = filepath.Join(dst.RootPath, tmp.Rel)
		if _, err := dst.Root.Lstat(tmp.Rel); errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err := copyTree(ctx, src.Root, src.Rel, dst.Root, tmp.Rel); err != nil {
		dst.Root.RemoveAll(tmp.Rel)
		return err
	}
	if err := renameAt(tmp, dst, overwrite); err != nil {
		dst.Root.RemoveAll(tmp.Rel)
		return err
	}
	if err := src.Root.RemoveAll(src.Rel); err != nil {
		return fmt.Errorf("copied %s to %s but could not remove the source: %w", src.Arg, dst.Arg, pathErr(src, err))
	}
	return nil
}

// copyTree copies the file, link or directory srel of sr to drel of dr,
// which must not exist. Symbolic links are copied as links, never
// followed; other special files are refused.
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
		if err := out.Chmod(mode.Perm()); err != nil {
			return &renameError{dst: true, err: err}
		}
		return nil
	case mode.IsRegular():
		return copyFile(sr, srel, dr, drel, mode.Perm())
	}
	return fmt.Errorf("cannot copy %s: it is a %s", srel, kindOf(mode))
}

// copyFile copies a regular file's content and permission bits to a new
// file.
func copyFile(sr *os.Root, srel string, dr *os.Root, drel string, perm fs.FileMode) (err error) {
	in, err := sr.OpenFile(srel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &renameError{err: err}
	}
	defer in.Close()
	if info, err := in.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("cannot copy %s: it changed while it was copied", srel)
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
	if _, err := io.Copy(out, in); err != nil {
		return &renameError{dst: true, err: err}
	}
	if err := out.Chmod(perm); err != nil {
		return &renameError{dst: true, err: err}
	}
	return nil
}
