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

var fileInfo = checked(sdk.NewTool(sdk.Info{
	Name: "file_info",
	Description: "Describe files without reading them: for each path, its type (file, directory, symlink with its target, fifo, socket, device), size in bytes, " +
		"permissions (-rw-r--r-- and octal), owner and group, link count, and modified, accessed, changed and created times (RFC 3339; created is \"unknown\" where the file system does not keep it). " +
		"A symbolic link is described itself, never followed. One block per path, in the order given; a path that fails shows its error in its place. " +
		"The call fails only when every path fails.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, inWorkspace(func(ctx context.Context, w *workspace.Workspace, in fileInfoInput) (string, error) {
	switch n := len(in.Paths); {
	case n == 0:
		return "", errors.New("paths is empty: give 1 to 100 paths")
	case n > maxInfoPaths:
		return "", fmt.Errorf("%d paths is too many: give at most %d per call", n, maxInfoPaths)
	}
	var out strings.Builder
	var errs []error
	names := &ownerNames{}
	for _, arg := range in.Paths {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		err := describe(&out, w, arg, names)
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "", err
		default:
			errs = append(errs, err)
			fmt.Fprintf(&out, "error: %v\n", err)
		}
	}
	if len(errs) == len(in.Paths) {
		return "", errors.Join(errs...)
	}
	return out.String(), nil
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

// describe writes the block for one path: the path's own entry, a
// symbolic link not followed.
func describe(out *strings.Builder, w *workspace.Workspace, arg string, names *ownerNames) error {
	given, p, err := w.ResolveFollow(arg, false)
	if err != nil {
		return err
	}
	st, err := lstatPath(p)
	if err != nil {
		return pathErr(p, err)
	}
	out.WriteString(textsafe.Name(given.Display()))
	out.WriteString(": ")
	switch st.mode & unix.S_IFMT {
	case unix.S_IFREG:
		out.WriteString("file")
	case unix.S_IFDIR:
		out.WriteString("directory")
	case unix.S_IFLNK:
		target, err := p.Root.Readlink(p.Rel)
		if err != nil {
			target = "?"
		}
		out.WriteString("symlink -> ")
		out.WriteString(textsafe.Name(target))
	case unix.S_IFCHR, unix.S_IFBLK:
		fmt.Fprintf(out, "%s %d:%d", workspace.Kind(typeBits(st.mode)), st.rdevMajor, st.rdevMinor)
	default:
		out.WriteString(workspace.Kind(typeBits(st.mode)))
	}
	fmt.Fprintf(out, ", %d bytes", st.size)
	if st.size >= 1024 && st.mode&unix.S_IFMT == unix.S_IFREG {
		fmt.Fprintf(out, " (%s)", formatSize(st.size))
	}
	fmt.Fprintf(out, "\n  permissions %s (%04o), owner %s, group %s, links %d\n",
		modeString(st.mode), st.mode&0o7777, names.user(st.uid), names.group(st.gid), st.nlink)
	fmt.Fprintf(out, "  modified %s\n  accessed %s\n  changed %s\n  created %s\n",
		stamp(st.modified), stamp(st.accessed), stamp(st.chgd), stamp(st.born))
	return nil
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

// ownerNames names user and group ids (os/user), each id looked up at
// most once a call; an id without a name is shown alone.
type ownerNames struct {
	users, groups map[uint32]string
}

func (n *ownerNames) user(id uint32) string {
	return lookupName(&n.users, id, func(s string) string {
		if u, err := user.LookupId(s); err == nil {
			return u.Username
		}
		return ""
	})
}

func (n *ownerNames) group(id uint32) string {
	return lookupName(&n.groups, id, func(s string) string {
		if g, err := user.LookupGroupId(s); err == nil {
			return g.Name
		}
		return ""
	})
}

// lookupName is "name (id)", or the id alone when lookup finds no name;
// cache keeps what lookup said of each id.
func lookupName(cache *map[uint32]string, id uint32, lookup func(id string) string) string {
	s := strconv.FormatUint(uint64(id), 10)
	if *cache == nil {
		*cache = map[uint32]string{}
	}
	name, ok := (*cache)[id]
	if !ok {
		name = lookup(s)
		(*cache)[id] = name
	}
	if name == "" {
		return s
	}
	return textsafe.Name(name) + " (" + s + ")"
}
