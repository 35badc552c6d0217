package main

import "strings"

// kernelFileSystems are the file systems whose files the kernel makes up
// as they are read (process tables, device and driver settings, control
// groups, trace buffers): a walk does not descend into one from outside
// it. Their files are not data a search is after, and some of them are
// endless, slow, block their reader or change what they describe when
// read. A search that starts inside one searches it.
var kernelFileSystems = map[string]bool{
	"autofs": true, "binfmt_misc": true, "bpf": true, "cgroup": true,
	"cgroup2": true, "configfs": true, "debugfs": true, "devpts": true,
	"devtmpfs": true, "efivarfs": true, "fusectl": true, "hugetlbfs": true,
	"mqueue": true, "nsfs": true, "proc": true, "pstore": true,
	"rpc_pipefs": true, "securityfs": true, "selinuxfs": true,
	"sysfs": true, "tracefs": true,
}

// drainedOnRead are the files of kernel file systems that a read
// consumes, taking the kernel's log or trace records from whoever else
// waits for them: a search that starts in a kernel file system passes
// them by.
var drainedOnRead = map[string]bool{"kmsg": true, "trace_pipe": true, "trace_pipe_raw": true}

// fileSystemOf returns the type of the file system that holds path (as
// the kernel names it), among mounts: that of the longest mount point
// that path is at or below.
func fileSystemOf(mounts map[string]string, path string) string {
	best, fsType := -1, ""
	for point, t := range mounts {
		if len(point) > best && (point == "/" || path == point || strings.HasPrefix(path, point+"/")) {
			best, fsType = len(point), t
		}
	}
	return fsType
}

// kernelMountsBelow returns the mount points of kernel file systems that
// lie strictly below dir (a path as the kernel names it), among mounts
// (mount point → file system type), as paths relative to dir.
func kernelMountsBelow(mounts map[string]string, dir string) []string {
	var below []string
	for rel, fsType := range mountsBelow(mounts, dir) {
		if kernelFileSystems[fsType] {
			below = append(below, rel)
		}
	}
	return below
}

// mountsBelow returns the mount points that lie strictly below dir (a
// path as the kernel names it), among mounts, as paths relative to dir,
// with their file system types.
func mountsBelow(mounts map[string]string, dir string) map[string]string {
	var below map[string]string
	for point, fsType := range mounts {
		var rel string
		switch {
		case dir == "/":
			rel = strings.TrimPrefix(point, "/")
		case strings.HasPrefix(point, dir+"/"):
			rel = point[len(dir)+1:]
		}
		if rel != "" {
			if below == nil {
				below = map[string]string{}
			}
			below[rel] = fsType
		}
	}
	return below
}

// wholeReadFileSystems are the file systems whose regular files a read
// fills as far as the file goes: a read that returns less than it was
// asked for has reached the end of the file, and the walk's reads do not
// ask again to be told so (a read more per file, the most common system
// call of a search). Elsewhere (FUSE, whose servers may answer a read
// short, and file systems not known here) a file is read until a read
// returns nothing.
var wholeReadFileSystems = map[string]bool{
	"btrfs": true, "erofs": true, "exfat": true, "ext2": true, "ext3": true,
	"ext4": true, "f2fs": true, "iso9660": true, "nfs": true, "nfs4": true,
	"ntfs3": true, "overlay": true, "ramfs": true, "squashfs": true,
	"tmpfs": true, "vfat": true, "xfs": true, "zfs": true,
}

// parseMountInfo reads /proc/self/mountinfo's lines into mount point →
// file system type. A line is "ID PARENT MAJ:MIN ROOT POINT OPTIONS
// [TAGS...] - TYPE SOURCE OPTIONS", with spaces, tabs, newlines and
// backslashes in paths written as octal escapes.
func parseMountInfo(data []byte) map[string]string {
	mounts := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 7 {
			continue
		}
		for i := 6; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				mounts[unescapeMount(fields[4])] = fields[i+1]
				break
			}
		}
	}
	return mounts
}

// unescapeMount decodes mountinfo's octal escapes ("\040" for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
