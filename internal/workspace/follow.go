package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// MaxLinkHops bounds the symbolic links followed for one path, as Linux's
// own limit (ELOOP after 40) does.
const MaxLinkHops = 40

// Follow resolves the symbolic links of p, one component at a time,
// through its root: every link's target is placed in the workspace again
// (it may lead to another root), and a target outside the roots is the
// outside error for p. With last false the final component is not
// followed: the result names it, link or not (for removing or moving a
// link itself). Components that do not exist end the walk; the result
// names them unresolved, for a caller that will create them.
//
// The result keeps p.Arg, so that its errors name the path as the caller
// gave it. Its Rel has no symbolic link in its directories at the time of
// the walk; a later swap is caught by os.Root when the caller uses it.
func (w *Workspace) Follow(p Path, last bool) (Path, error) {
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
				return Path{}, p.Err(err)
			}
			if info.Mode()&fs.ModeSymlink == 0 {
				done = next
				continue
			}
			if hops++; hops > MaxLinkHops {
				return Path{}, fmt.Errorf("%s: too many levels of symbolic links", textsafe.Name(p.Arg))
			}
			target, err := cur.Root.Readlink(next)
			if errors.Is(err, syscall.EINVAL) {
				// No longer a link: it changed since Lstat. Walk
				// again; the hop still counts, so this ends.
				continue walk
			}
			if err != nil {
				return Path{}, p.Err(err)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur.RootPath, done, target)
			}
			target = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			np, err := w.Resolve(target)
			if err != nil {
				if errors.Is(err, ErrOutside) {
					return Path{}, OutsideError(p.Arg)
				}
				return Path{}, fmt.Errorf("%s: %w", textsafe.Name(p.Arg), err)
			}
			cur = np
			continue walk
		}
		return Path{
			Arg:      p.Arg,
			Abs:      filepath.Join(cur.RootPath, done),
			Rel:      done,
			Root:     cur.Root,
			RootPath: cur.RootPath,
		}, nil
	}
}

// ResolveFollow places arg in a root (Resolve) and follows its links
// (Follow; the last one too when last is true). It returns the path as
// given, for answers, and the resolved path, for file operations.
func (w *Workspace) ResolveFollow(arg string, last bool) (given, real Path, err error) {
	given, err = w.Resolve(arg)
	if err != nil {
		return given, real, err
	}
	real, err = w.Follow(given, last)
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

// NotFoundError is the error for a file to read that does not exist:
// "file not found: P", P the path as the caller gave it.
func NotFoundError(arg string) error {
	return fmt.Errorf("file not found: %s", textsafe.Name(arg))
}

// OpenRegular opens a resolved path for reading through its root, with
// errors that say plainly what is wrong: the outside error, "file not
// found: P", "P is a directory, not a file", "P is a fifo, not a regular
// file", or "P: what went wrong". It opens without blocking, so a FIFO
// swapped in cannot hang the caller, and refuses anything but a regular
// file. It returns the file and its size.
func OpenRegular(p Path) (*os.File, int64, error) {
	f, err := p.Root.OpenFile(p.Rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) && !IsEscape(err) {
		return nil, 0, NotFoundError(p.Arg)
	}
	if err != nil {
		return nil, 0, p.Err(err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, p.Err(err)
	}
	switch {
	case info.IsDir():
		f.Close()
		return nil, 0, fmt.Errorf("%s is a directory, not a file", textsafe.Name(p.Arg))
	case !info.Mode().IsRegular():
		f.Close()
		return nil, 0, fmt.Errorf("%s is a %s, not a regular file", textsafe.Name(p.Arg), Kind(info.Mode()))
	}
	return f, info.Size(), nil
}

// Kind names the kind of a file that is neither a regular file nor a
// directory: "fifo", "socket", "character device", "device", or
// "special file".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
