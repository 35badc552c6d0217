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
	"unicode/utf8"

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
	Path          string   `json:"path,omitempty" jsonschema:"Directory to list. Default: the first workspace root."`
	Depth         int      `json:"depth,omitempty" jsonschema:"How many levels to list, 1 to 5. Default 1: the directory's own entries. Deeper levels are shown as an indented tree."`
	IncludeHidden bool     `json:"include_hidden,omitempty" jsonschema:"List entries whose names start with a dot. Default false."`
	MaxEntries    int      `json:"max_entries,omitempty" jsonschema:"Most entries to show. Default 500."`
	NamesOnly     bool     `json:"names_only,omitempty" jsonschema:"Leave out file sizes: list names and kinds only (directories with /, links with their targets), as the directory itself records them, without examining each entry. Quicker on large directories. Default false: files with their sizes."`
	Exclude       []string `json:"exclude,omitempty" jsonschema:"Glob patterns of entries to leave out, at every level; an excluded directory is not entered. A pattern without a slash matches entry names (node_modules, *.log); one with a slash matches paths relative to the listed directory (src/gen, **/testdata/*.json; /build is the listed directory's own build only). A trailing slash matches directories only (build/). Globs: * and ? within a name, ** across directories, [abc], {a,b}."`
}

var listDir = checkedStructured(sdk.NewStructuredTool(sdk.Info{
	Name:  "list_dir",
	Title: "List directory",
	Description: "List a directory: entries sorted by name, one per line, directories with a trailing /, files with their size (bytes below 1 KiB, then KiB, MiB, ...), symbolic links as name -> target (never followed). " +
		"One level by default; depth up to 5 shows an indented tree. Hidden entries only with include_hidden; exclude leaves out entries matching glob patterns (node_modules, *.log), without entering excluded directories. At most 500 entries unless max_entries says otherwise. " +
		"names_only leaves the sizes out, which is quicker on large directories.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspaceStructured(func(ctx context.Context, w *workspace.Workspace, in listDirInput) (string, dirListing, error) {
	depth := in.Depth
	switch {
	case depth == 0:
		depth = 1
	case depth < 1 || depth > maxListDepth:
		return "", dirListing{}, fmt.Errorf("depth %d is out of range: use 1 to %d", in.Depth, maxListDepth)
	}
	limit := in.MaxEntries
	switch {
	case limit == 0:
		limit = defaultMaxEntries
	case limit < 0:
		return "", dirListing{}, fmt.Errorf("max_entries %d is out of range: it must be positive", in.MaxEntries)
	}
	exclude, err := newExcludeRules(in.Exclude)
	if err != nil {
		return "", dirListing{}, err
	}
	arg := in.Path
	if arg == "" {
		arg = "."
	}
	given, p, err := w.ResolveFollow(arg, true)
	if err != nil {
		return "", dirListing{}, err
	}
	info, err := p.Root.Lstat(p.Rel)
	if err != nil {
		return "", dirListing{}, pathErr(p, err)
	}
	if !info.IsDir() {
		return "", dirListing{}, fmt.Errorf("%s is not a directory", textsafe.Name(p.Arg))
	}
	l := &lister{ctx: ctx, p: p, hidden: in.IncludeHidden, names: in.NamesOnly, exclude: exclude, depth: depth, limit: limit}
	entries, cut, err := listLevels(l, p.Rel, "", 0)
	if err != nil {
		return "", dirListing{}, err
	}
	d := dirListing{Path: given.Display(), Entries: entries, Truncated: cut, More: l.more, Hidden: l.skipped, Excluded: l.excluded}
	return d.text(limit), d, nil
})))

// lister walks a directory through its root, depth first, in name order,
// and keeps the entries that fit under the limit as list_dir's
// structured result, from which its text is rendered.
type lister struct {
	ctx     context.Context
	p       workspace.Path
	hidden  bool
	names   bool // names and kinds only: no sizes, no stat of each entry
	exclude []excludeRule
	depth   int
	limit   int

	shown    int // entries kept
	more     int // entries past the limit
	skipped  int // hidden entries of the top level left out
	excluded int // entries the exclude rules left out, at every level
}

// walkLevel lists the directory rel (relative to the root; sub is its
// path relative to the listed directory, "" for the listed directory
// itself) at level (0 for the listed directory's own entries). It
// returns the entries that fit under the limit, each made by wrap from
// what the listing says of it, and reports whether the limit left out
// any. enter lists the entries of a directory that depth reaches into,
// into its entry; for a directory past the limit it is given an entry
// that is dropped, so that the entries below are counted all the same.
// enter is nil for a level that depth never goes below.
func walkLevel[E any](l *lister, rel, sub string, level int, wrap func(entryInfo) E, enter func(e *E, rel, sub string) error) (kept []E, cut bool, err error) {
	if err := l.ctx.Err(); err != nil {
		return nil, false, err
	}
	// Without blocking: a FIFO swapped in cannot hang the call, and Go
	// then spares the calls that try to make the descriptor pollable.
	dir, err := l.p.Root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, pathErr(l.at(rel), err)
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
		return nil, false, pathErr(l.at(rel), err)
	}
	// Not nil, so that a directory entered has children, even none.
	kept = make([]E, 0, min(len(entries), l.limit-l.shown))
	for i := range entries {
		e := &entries[i]
		if !keep(e.name) {
			if level == 0 {
				l.skipped++
			}
			continue
		}
		isDir := e.err == nil && e.mode.IsDir()
		if len(l.exclude) > 0 && excluded(l.exclude, workspace.JoinRel(sub, e.name), e.name, isDir) {
			l.excluded++
			continue
		}
		var at *E
		if l.shown < l.limit {
			kept = append(kept, wrap(l.info(rel, e)))
			at = &kept[len(kept)-1]
			l.shown++
		} else {
			l.more++
			cut = true
		}
		if isDir && enter != nil && level+1 < l.depth {
			if at == nil {
				at = new(E) // past the limit: its entries are only counted
			}
			if err := enter(at, filepath.Join(rel, e.name), workspace.JoinRel(sub, e.name)); err != nil {
				return nil, false, err
			}
		}
	}
	return kept, cut, nil
}

// info is what the listing says of e, an entry of the directory rel.
// A file's size points into e.
func (l *lister) info(rel string, e *entry) entryInfo {
	info := entryInfo{Name: e.name}
	if !utf8.ValidString(e.name) {
		info.Name, info.nameQuoted = textsafe.Name(e.name), true
	}
	switch {
	case e.err != nil:
		info.Type, info.Error = typeUnknown, workspace.Reason(e.err)
	case e.mode&fs.ModeSymlink != 0:
		info.Type = typeSymlink
		if target, err := l.p.Root.Readlink(filepath.Join(rel, e.name)); err == nil {
			info.Target = target
			if !utf8.ValidString(target) {
				info.Target, info.targetQuoted = textsafe.Name(target), true
			}
		}
	case e.mode.IsDir():
		info.Type = typeDirectory
	case e.mode.IsRegular():
		info.Type = typeFile
		if !l.names {
			info.Size = &e.size
		}
	default:
		info.Type, info.Kind = typeOther, workspace.Kind(e.mode)
	}
	return info
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
