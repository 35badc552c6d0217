package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// helperEnv runs the test binary as a writer: it writes "new" to the file
// the variable names and prints the error.
const helperEnv = "ATOMICFILE_TEST_WRITE"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		err := Write(path, []byte("new"), 0o644)
		fmt.Print(err, "|", errors.Is(err, ErrOwner))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// As root, a replace keeps the owner, group, mode (setgid included) and
// extended attributes of a file that belongs to another user.
func TestKeepOwnerModeXattrs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "theirs")
	mustWriteFile(t, path, "old")
	if err := os.Chown(path, 12345, 23456); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, os.ModeSetgid|0o750); err != nil {
		t.Fatal(err)
	}
	xattr := unix.Setxattr(path, "user.agenthost-test", []byte("kept"), 0)
	if err := Write(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if st.Uid != 12345 || st.Gid != 23456 {
		t.Errorf("owner %d:%d, want 12345:23456", st.Uid, st.Gid)
	}
	if got := info.Mode() & (os.ModePerm | os.ModeSetgid); got != 0o750|os.ModeSetgid {
		t.Errorf("mode %v, want setgid 0750", got)
	}
	if xattr == nil {
		buf := make([]byte, 16)
		n, err := unix.Getxattr(path, "user.agenthost-test", buf)
		if err != nil || string(buf[:n]) != "kept" {
			t.Errorf("extended attribute after the replace: %q, %v", buf[:max(n, 0)], err)
		}
	} else {
		t.Logf("no user extended attributes here (%v): not checked", xattr)
	}
	assertNoTemp(t, dir)
}

// A writer that is not root cannot give the replacement another user's
// ownership: it writes nothing and says why.
func TestKeepOwnerRefusedWithoutRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("this test needs root to set up a file of another user and run a writer as nobody")
	}
	bin, err := os.MkdirTemp("", "atomicfile-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "writer")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(bin, "theirs")
	mustWriteFile(t, path, "old")
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the writer as nobody: %v", err)
	}
	if !strings.HasSuffix(string(out), "|true") || !strings.Contains(string(out), "uid 12345, gid 12345") {
		t.Errorf("the writer as nobody said %q, want ErrOwner naming the owner", out)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("the file holds %q, want it untouched", got)
	}

	// The writer's own file, which it may replace but not read: it is
	// replaced, keeping its mode.
	own := filepath.Join(bin, "write-only")
	mustWriteFile(t, own, "old")
	if err := os.Chown(own, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(own, 0o200); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+own)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.Output(); err != nil || string(out) != "<nil>|false" {
		t.Errorf("the writer as nobody, on its write-only file: %q, %v", out, err)
	}
	assertFile(t, own, "new", 0o200)
	assertNoTemp(t, bin)
}
