package main

import (
	"slices"
	"testing"
)

func TestKernelMounts(t *testing.T) {
	t.Parallel()
	info := `22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
23 1 0:22 / /sys rw shared:2 - sysfs sysfs rw
24 23 0:6 / /sys/kernel/debug rw - debugfs debugfs rw
25 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw
26 25 0:23 / /home/me/work\040dir/proc rw - proc proc rw
27 25 0:24 / /home/me/work\040dir/data rw - tmpfs tmpfs rw
28 22 0:25 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw
bad line
`
	mounts := parseMountInfo([]byte(info))
	if got := mounts["/home/me/work dir/proc"]; got != "proc" {
		t.Errorf("the escaped mount point: %q, want proc (mounts %v)", got, mounts)
	}
	tests := map[string]struct {
		dir  string
		want []string
	}{
		"from /":               {"/", []string{"home/me/work dir/proc", "proc", "proc/sys/fs/binfmt_misc", "sys", "sys/kernel/debug"}},
		"a workspace":          {"/home/me/work dir", []string{"proc"}},
		"a prefix is no dir":   {"/home/me/work", nil},
		"inside /proc":         {"/proc", []string{"sys/fs/binfmt_misc"}},
		"inside /sys":          {"/sys", []string{"kernel/debug"}},
		"nothing below":        {"/home/me/work dir/data", nil},
		"the mount point only": {"/sys/kernel/debug", nil},
	}
	for name, tc := range tests {
		got := kernelMountsBelow(mounts, tc.dir)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: kernelMountsBelow(%q) = %q, want %q", name, tc.dir, got, tc.want)
		}
	}
	for path, want := range map[string]string{"/proc/self": "proc", "/sys/kernel/debug/x": "debugfs", "/home/me": "ext4", "/procfoo": "ext4", "/": "ext4"} {
		if got := fileSystemOf(mounts, path); got != want {
			t.Errorf("fileSystemOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestWholeReadsByMount: the walk counts on a short read to end a file
// only in the file systems known to fill reads, from the start's file
// system down and at each mount point below it, and never without the
// mount table.
func TestWholeReadsByMount(t *testing.T) {
	t.Parallel()
	info := `25 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw
26 25 0:23 / /w/fuse rw - fuse.sshfs host:/x rw
27 26 0:24 / /w/fuse/tmp rw - tmpfs tmpfs rw
28 25 0:25 / /w/proc rw - proc proc rw
`
	mounts := parseMountInfo([]byte(info))
	below := mountsBelow(mounts, "/w")
	want := map[string]bool{"fuse": false, "fuse/tmp": true, "proc": false}
	if len(below) != len(want) {
		t.Fatalf("mountsBelow(/w) = %v, want the mount points of %v", below, want)
	}
	for rel, whole := range want {
		if got := wholeReadFileSystems[below[rel]]; got != whole {
			t.Errorf("%s (%s): whole reads %v, want %v", rel, below[rel], got, whole)
		}
	}
	if !wholeReadFileSystems[fileSystemOf(mounts, "/w")] || wholeReadFileSystems[fileSystemOf(nil, "/w")] {
		t.Errorf("ext4 must fill reads, and no file system without a mount table")
	}
	if mountsBelow(mounts, "/w/fuse/tmp") != nil {
		t.Errorf("mount points below a leaf: %v", mountsBelow(mounts, "/w/fuse/tmp"))
	}
}
