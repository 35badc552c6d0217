package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

// maxInfoPaths is the most paths one file_info call describes.
const maxInfoPaths = 100

type fileInfoInput struct {
	Paths []string `json:"paths" jsonschema:"Paths to describe, 1 to 100."`
}

// fileInfoOutput is file_info's structured result.
type fileInfoOutput struct {
	Files []fileRecord `json:"files" jsonschema:"one per path, in the order given"`
}

// fileRecord is what file_info says of one path: its error, or its
// description, the fields of its text block.
type fileRecord struct {
	Path        string `json:"path"`
	Error       string `json:"error,omitempty" jsonschema:"why the path could not be described; then nothing else is set"`
	Type        string `json:"type,omitempty"`
	Target      string `json:"target,omitempty" jsonschema:"a symlink's target"`
	Device      string `json:"device,omitempty" jsonschema:"a device's major:minor"`
	Size        *int64 `json:"size,omitempty"`
	Permissions string `json:"permissions,omitempty"`
	Mode        string `json:"mode,omitempty" jsonschema:"octal"`
	Owner       string `json:"owner,omitempty"`
	Group       string `json:"group,omitempty"`
	Links       uint64 `json:"links,omitempty"`
	Modified    string `json:"modified,omitempty"`
	Accessed    string `json:"accessed,omitempty"`
	Changed     string `json:"changed,omitempty"`
	Created     string `json:"created,omitempty"`
}

var fileInfo = checkedStructured(sdk.NewStructuredTool(sdk.Info{
	Name:  "file_info",
	Title: "Describe files",
	Description: "Describe files without reading them: for each path, its type (file, directory, symlink with its target, fifo, socket, device), size in bytes, " +
		"permissions (-rw-r--r-- and octal), owner and group, link count, and modified, accessed, changed and created times (RFC 3339; created is \"unknown\" where the file system does not keep it). " +
		"A symbolic link is described itself, never followed. One block per path, in the order given; a path that fails shows its error in its place. " +
		"The call fails only when every path fails.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspaceStructured(func(ctx context.Context, w *workspace.Workspace, in fileInfoInput) (string, fileInfoOutput, error) {
	var res fileInfoOutput
	switch n := len(in.Paths); {
	case n == 0:
		return "", res, errors.New("paths is empty: give 1 to 100 paths")
	case n > maxInfoPaths:
		return "", res, fmt.Errorf("%d paths is too many: give at most %d per call", n, maxInfoPaths)
	}
	var out strings.Builder
	var errs []error
	for _, arg := range in.Paths {
		if err := ctx.Err(); err != nil {
			return "", res, err
		}
		rec, err := describe(w, arg)
		switch {
		case err == nil:
			rec.write(&out)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "", res, err
		default:
			errs = append(errs, err)
			fmt.Fprintf(&out, "error: %v\n", err)
			rec = fileRecord{Path: arg, Error: err.Error()}
		}
		res.Files = append(res.Files, rec)
	}
	if len(errs) == len(in.Paths) {
		return "", res, errors.Join(errs...)
	}
	return out.String(), res, nil
})))

// fileStat is what file_info reports of a file, as lstat (statx on
// Linux) gives it.
type fileStat struct {
	mode                     uint32 // type and permission bits, as st_mode
	size                     int64
	nlink                    uint64
	uid, gid                 uint32
	rdevMajor, rdevMinor     uint32
	modified, accessed, chgd time.Time
	born                     time.Time // zero when unknown
}

// describe describes one path: the path's own entry, a symbolic link
// not followed.
func describe(w *workspace.Workspace, arg string) (fileRecord, error) {
	given, p, err := w.ResolveFollow(arg, false)
	if err != nil {
		return fileRecord{}, err
	}
	st, err := lstatPath(p)
	if err != nil {
		return fileRecord{}, pathErr(p, err)
	}
	rec := fileRecord{
		Path:        given.Display(),
		Size:        &st.size,
		Permissions: modeString(st.mode),
		Mode:        fmt.Sprintf("%04o", st.mode&0o7777),
		Owner:       userNames.name(st.uid),
		Group:       groupNames.name(st.gid),
		Links:       st.nlink,
		Modified:    stamp(st.modified),
		Accessed:    stamp(st.accessed),
		Changed:     stamp(st.chgd),
		Created:     stamp(st.born),
	}
	switch st.mode & unix.S_IFMT {
	case unix.S_IFREG:
		rec.Type = "file"
	case unix.S_IFDIR:
		rec.Type = "directory"
	case unix.S_IFLNK:
		rec.Type = "symlink"
		rec.Target, err = p.Root.Readlink(p.Rel)
		if err != nil {
			rec.Target = "?"
		}
	case unix.S_IFCHR, unix.S_IFBLK:
		rec.Type = workspace.Kind(typeBits(st.mode))
		rec.Device = fmt.Sprintf("%d:%d", st.rdevMajor, st.rdevMinor)
	default:
		rec.Type = workspace.Kind(typeBits(st.mode))
	}
	return rec, nil
}

// write writes the text block of a path described.
func (rec *fileRecord) write(out *strings.Builder) {
	out.WriteString(textsafe.Name(rec.Path))
	out.WriteString(": ")
	out.WriteString(rec.Type)
	switch {
	case rec.Type == "symlink":
		out.WriteString(" -> ")
		out.WriteString(textsafe.Name(rec.Target))
	case rec.Device != "":
		out.WriteString(" ")
		out.WriteString(rec.Device)
	}
	size := *rec.Size
	fmt.Fprintf(out, ", %d bytes", size)
	if size >= 1024 && rec.Type == "file" {
		fmt.Fprintf(out, " (%s)", formatSize(size))
	}
	fmt.Fprintf(out, "\n  permissions %s (%s), owner %s, group %s, links %d\n",
		rec.Permissions, rec.Mode, rec.Owner, rec.Group, rec.Links)
	fmt.Fprintf(out, "  modified %s\n  accessed %s\n  changed %s\n  created %s\n",
		rec.Modified, rec.Accessed, rec.Changed, rec.Created)
}

// lstatPath stats p itself, without following a final link: through a
// descriptor of its directory opened in its root, so that the stat
// cannot leave the root.
func lstatPath(p workspace.Path) (fileStat, error) {
	dir, name := filepath.Dir(p.Rel), filepath.Base(p.Rel)
	if p.Rel == "." {
		dir, name = ".", "."
	}
	d, err := p.Root.OpenFile(dir, dirOpenFlags, 0)
	if err != nil {
		return fileStat{}, err
	}
	defer d.Close()
	conn, err := d.SyscallConn()
	if err != nil {
		return fileStat{}, err
	}
	var st fileStat
	cerr := conn.Control(func(fd uintptr) {
		for {
			st, err = statAt(int(fd), name)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return fileStat{}, cerr
	}
	if err != nil {
		return fileStat{}, &fs.PathError{Op: "stat", Path: p.Rel, Err: err}
	}
	return st, nil
}

// fstatatStat is statAt through fstatat, which gives no birth time.
func fstatatStat(fd int, name string) (fileStat, error) {
	var s unix.Stat_t
	if err := unix.Fstatat(fd, name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, err
	}
	rdev := uint64(s.Rdev)
	return fileStat{
		mode:      uint32(s.Mode),
		size:      int64(s.Size),
		nlink:     uint64(s.Nlink),
		uid:       s.Uid,
		gid:       s.Gid,
		rdevMajor: unix.Major(rdev),
		rdevMinor: unix.Minor(rdev),
		modified:  time.Unix(s.Mtim.Unix()),
		accessed:  time.Unix(s.Atim.Unix()),
		chgd:      time.Unix(s.Ctim.Unix()),
	}, nil
}

// stamp is a time in RFC 3339, in the local zone, or "unknown".
func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Local().Format(time.RFC3339)
}

// modeString renders a stat mode as ls does: the type letter, then rwx
// for owner, group and others, with the setuid, setgid and sticky bits
// as s/S and t/T.
func modeString(mode uint32) string {
	b := []byte("?rwxrwxrwx")
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		b[0] = '-'
	case unix.S_IFDIR:
		b[0] = 'd'
	case unix.S_IFLNK:
		b[0] = 'l'
	case unix.S_IFIFO:
		b[0] = 'p'
	case unix.S_IFSOCK:
		b[0] = 's'
	case unix.S_IFCHR:
		b[0] = 'c'
	case unix.S_IFBLK:
		b[0] = 'b'
	}
	for i := range 9 {
		if mode&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	special := func(bit uint32, at int, set byte) {
		if mode&bit == 0 {
			return
		}
		if b[at] == '-' {
			b[at] = set - 'a' + 'A' // the bit without execute: upper case
		} else {
			b[at] = set
		}
	}
	special(unix.S_ISUID, 3, 's')
	special(unix.S_ISGID, 6, 's')
	special(unix.S_ISVTX, 9, 't')
	return string(b)
}

// nameTTL is how long a user or group name looked up is kept, across
// calls: os/user reads /etc/group (or /etc/passwd) whole for each
// look-up, which cost file_info of one path a fifth of its time in the
// plugin. A name changed there shows within a second.
const nameTTL = time.Second

// maxNames bounds the ids of one kind whose names are kept.
const maxNames = 1024

// idNames names the ids of one kind, users or groups, as lookup does,
// keeping each answer for nameTTL.
type idNames struct {
	lookup func(id string) string // "" for an id without a name

	mu    sync.Mutex
	names map[uint32]idName
}

// idName is a name looked up, and when it was.
type idName struct {
	name string
	at   time.Time
}

var (
	userNames = &idNames{lookup: func(id string) string {
		if u, err := user.LookupId(id); err == nil {
			return u.Username
		}
		return ""
	}}
	groupNames = &idNames{lookup: func(id string) string {
		if g, err := user.LookupGroupId(id); err == nil {
			return g.Name
		}
		return ""
	}}
)

// name is "name (id)", or the id alone when lookup finds no name.
func (n *idNames) name(id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	now := time.Now()
	n.mu.Lock()
	known, ok := n.names[id]
	n.mu.Unlock()
	if !ok || now.Sub(known.at) >= nameTTL {
		// Looked up unlocked: a slow look-up holds up no other call.
		known = idName{name: n.lookup(s), at: now}
		n.mu.Lock()
		if n.names == nil || len(n.names) >= maxNames {
			n.names = map[uint32]idName{}
		}
		n.names[id] = known
		n.mu.Unlock()
	}
	if known.name == "" {
		return s
	}
	return textsafe.Name(known.name) + " (" + s + ")"
}
