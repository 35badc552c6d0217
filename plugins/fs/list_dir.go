package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
}

var listDir = checked(sdk.NewTool(sdk.Info{
	Name: "list_dir",
	Description: "List a directory: entries sorted by name, one per line, directories with a trailing /, files with their size (bytes below 1 KiB, then KiB, MiB, ...), symbolic links as name -> target (never followed). " +
		"One level by default; depth up to 5 shows an indented tree. Hidden entries only with include_hidden. At most 500 entries unless max_entries says otherwise.",
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
	given, p, err := resolve(w, arg, true)
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
	l := &lister{ctx: ctx, p: p, hidden: in.IncludeHidden, depth: depth, limit: limit}
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
	dir, err := l.p.Root.Open(rel)
	if err != nil {
		return pathErr(l.at(rel), err)
	}
	entries, err := readEntries(l.p.Root, rel, dir)
	dir.Close()
	if err != nil {
		return pathErr(l.at(rel), err)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
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
		descend := e.err == nil && e.info.IsDir() && e.info.Mode()&fs.ModeSymlink == 0 && level+1 < l.depth
		if l.shown < l.limit {
			out.WriteString(indent)
			out.WriteString(textsafe.Name(name))
			switch info := e.info; {
			case e.err != nil:
				out.WriteString(" [")
				out.WriteString(workspace.Reason(e.err))
				out.WriteString("]")
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := l.p.Root.Readlink(filepath.Join(rel, name))
				if err != nil {
					target = "?"
				}
				out.WriteString(" -> ")
				out.WriteString(textsafe.Name(target))
			case info.IsDir():
				out.WriteString("/")
			case info.Mode().IsRegular():
				out.WriteString(" (")
				out.WriteString(formatSize(info.Size()))
				out.WriteString(")")
			default:
				out.WriteString(" [")
				out.WriteString(kindOf(info.Mode()))
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

// entry is a directory entry: its name, and its Lstat or why that failed.
type entry struct {
	name string
	info fs.FileInfo
	err  error
}

// readEntries reads the entries of dir, the directory rel of root, each
// with its Lstat. For a directory opened in a root, ReadDir stats each
// entry relative to the directory's own descriptor (fstatat, never
// following a link), so nothing leaves the directory os.Root opened, at
// one call per entry. If an entry cannot be stat'ed (a directory that may
// be read but not searched), ReadDir stops: then each entry is stat'ed on
// its own through the root, and one that fails is kept with its error, to
// be shown in its place. An entry removed since it was listed is left
// out.
func readEntries(root *os.Root, rel string, dir *os.File) ([]entry, error) {
	des, err := dir.ReadDir(-1)
	if err == nil {
		entries := make([]entry, 0, len(des))
		for _, de := range des {
			info, err := de.Info() // stat'ed by ReadDir already
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			entries = append(entries, entry{name: de.Name(), info: info, err: err})
		}
		return entries, nil
	}
	if _, serr := dir.Seek(0, io.SeekStart); serr != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	entries := make([]entry, 0, len(names))
	for _, name := range names {
		info, err := root.Lstat(filepath.Join(rel, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		entries = append(entries, entry{name: name, info: info, err: err})
	}
	return entries, nil
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

// kindOf names a file type that is neither a regular file, a directory
// nor a symbolic link.
func kindOf(m fs.FileMode) string {
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
