package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

const (
	// maxListDepth is the deepest list_dir goes.
	maxListDepth = 5
	// defaultMaxEntries caps a listing unless the call says otherwise.
	defaultMaxEntries = 500
)

type listDirInput struct {
	Path          string `json:"path,omitempty" jsonschema:"Directory to list. Default: the first workspace root."`
	Depth         int    `json:"depth,omitempty" jsonschema:"How many levels to list, 1 to 5. Default 1: the directory's own entries. Deeper levels are shown as an indented tree."`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"List entries whose names start with a dot. Default false."`
	MaxEntries    int    `json:"max_entries,omitempty" jsonschema:"Most entries to show. Default 500."`
	NamesOnly     bool   `json:"names_only,omitempty" jsonschema:"Leave out file sizes: list names and kinds only (directories with /, links with their targets), as the directory itself records them, without examining each entry. Quicker on large directories. Default false: files with their sizes."`
}

var listDir = checked(sdk.NewTool(sdk.Info{
	Name: "list_dir",
	Description: "List a directory: entries sorted by name, one per line, directories with a trailing /, files with their size (bytes below 1 KiB, then KiB, MiB, ...), symbolic links as name -> target (never followed). " +
		"One level by default; depth up to 5 shows an indented tree. Hidden entries only with include_hidden. At most 500 entries unless max_entries says otherwise. " +
		"names_only leaves the sizes out, which is quicker on large directories.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in listDirInput) (string, error) {
	depth := in.Depth
	switch {
	case depth == 0:
		depth = 1
	case depth < 1 || depth > maxListDepth:
		return "", fmt.Errorf("depth %d is out of range: use 1 to %d", in.Depth, maxListDepth)
	}
	limit := in.MaxEntries
	switch {
	case limit == 0:
		limit = defaultMaxEntries
	case limit < 0:
		return "", fmt.Errorf("max_entries %d is out of range: it must be positive", in.MaxEntries)
	}
	arg := in.Path
	if arg == "" {
		arg = "."
	}
	given, p, err := w.ResolveFollow(arg, true)
	if err != nil {
		return "", err
	}
	info, err := p.Root.Lstat(p.Rel)
	if err != nil {
		return "", pathErr(p, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", textsafe.Name(p.Arg))
	}
	l := &lister{ctx: ctx, p: p, hidden: in.IncludeHidden, names: in.NamesOnly, depth: depth, limit: limit}
	if err := l.list(p.Rel, 0); err != nil {
		return "", err
	}
	if l.shown == 0 && l.more == 0 {
		switch l.skipped {
		case 0:
		case 1:
			return fmt.Sprintf("%s is empty apart from 1 hidden entry (set include_hidden to list it)", textsafe.Name(given.Display())), nil
		default:
			return fmt.Sprintf("%s is empty apart from %d hidden entries (set include_hidden to list them)", textsafe.Name(given.Display()), l.skipped), nil
		}
		return fmt.Sprintf("%s is empty", textsafe.Name(given.Display())), nil
	}
	if l.more > 0 {
		fmt.Fprintf(&l.out, "... and %d more\n", l.more)
	}
	return l.out.String(), nil
})))

// lister walks a directory through its root, depth first, in name order.
type lister struct {
	ctx    context.Context
	p      workspace.Path
	hidden bool
	names  bool // names and kinds only: no sizes, no stat of each entry
	depth  int
	limit  int

	out     strings.Builder
	shown   int // entries written
	more    int // entries past the limit
	skipped int // hidden entries of the top level left out
}

// list writes the entries of the directory rel, at level (0 for the
// listed directory's own entries).
func (l *lister) list(rel string, level int) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	// Without blocking: a FIFO swapped in cannot hang the call, and Go
	// then spares the calls that try to make the descriptor pollable.
	dir, err := l.p.Root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return pathErr(l.at(rel), err)
	}
	// A hidden entry left out is only counted: it needs no stat.
	keep := func(name string) bool {
		return l.hidden || !strings.HasPrefix(name, ".")
	}
	read := readEntries
	if l.names {
		read = readTypes
	}
	entries, err := read(dir, keep)
	dir.Close()
	if err != nil {
		return pathErr(l.at(rel), err)
	}
	indent := strings.Repeat("  ", level)
	out := &l.out
	for _, e := range entries {
		name := e.name
		if !l.hidden && strings.HasPrefix(name, ".") {
			if level == 0 {
				l.skipped++
			}
			continue
		}
		descend := e.err == nil && e.mode.IsDir() && level+1 < l.depth
		if l.shown < l.limit {
			out.WriteString(indent)
			out.WriteString(textsafe.Name(name))
			switch {
			case e.err != nil:
				out.WriteString(" [")
				out.WriteString(workspace.Reason(e.err))
				out.WriteString("]")
			case e.mode&fs.ModeSymlink != 0:
				target, err := l.p.Root.Readlink(filepath.Join(rel, name))
				if err != nil {
					target = "?"
				}
				out.WriteString(" -> ")
				out.WriteString(textsafe.Name(target))
			case e.mode.IsDir():
				out.WriteString("/")
			case e.mode.IsRegular():
				if !l.names {
					out.WriteString(" (")
					out.WriteString(formatSize(e.size))
					out.WriteString(")")
				}
			default:
				out.WriteString(" [")
				out.WriteString(workspace.Kind(e.mode))
				out.WriteString("]")
			}
			out.WriteString("\n")
			l.shown++
		} else {
			l.more++
		}
		if descend {
			if err := l.list(filepath.Join(rel, name), level+1); err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				// A directory that vanished or cannot be read: say so
				// in its place and go on.
				if l.shown < l.limit {
					fmt.Fprintf(out, "%s  [cannot list: %v]\n", indent, err)
				}
			}
		}
	}
	return nil
}

// entry is a directory entry as its Lstat shows it, or with the reason
// it could not be stat'ed. From readTypes, an entry has its type alone
// (size 0), as the directory records it.
type entry struct {
	name string
	mode fs.FileMode // the type bits
	size int64
	err  error
}

// readEntries reads the entries of dir, a directory opened in a root, in
// name order. An entry for which stat says so is stat'ed (lstat: a link
// is not followed); the others are returned with their names alone. An
// entry removed since it was listed is left out; one that cannot be
// stat'ed (a directory that may be read but not searched) is kept, with
// the reason.
//
// Each stat is an fstatat of one name relative to dir's own descriptor:
// it cannot leave the directory that os.Root opened, and it costs one
// system call an entry, where going through the root again costs three.
func readEntries(dir *os.File, stat func(name string) bool) ([]entry, error) {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	conn, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	entries := make([]entry, 0, len(names))
	cerr := conn.Control(func(fd uintptr) {
		var st unix.Stat_t
		for _, name := range names {
			if !stat(name) {
				entries = append(entries, entry{name: name})
				continue
			}
			err := lstatat(int(fd), name, &st)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since it was listed
			}
			e := entry{name: name, err: err}
			if err == nil {
				e.mode, e.size = typeBits(uint32(st.Mode)), int64(st.Size)
			}
			entries = append(entries, e)
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	return entries, nil
}

// lstatat stats name in the directory fd, without following a link.
func lstatat(fd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// typeBits are the fs.FileMode type bits of a stat mode, as os.Lstat
// sets them.
func typeBits(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}

// at is the listed path's entry rel, named for errors as the model would
// name it.
func (l *lister) at(rel string) workspace.Path {
	q := l.p
	if sub, err := filepath.Rel(l.p.Rel, rel); err == nil {
		q.Arg = filepath.Join(l.p.Arg, sub)
	}
	return q
}
