//go:build unix

package host

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCheckOwnerAndMode(t *testing.T) {
	t.Parallel()
	const me, other = 54321, 12345
	tests := map[string]struct {
		uid, gid uint32
		mode     uint32
		stickyOK bool
		want     string // "" when accepted
	}{
		"mine":                   {uid: me, gid: other, mode: 0o755},
		"root's":                 {uid: 0, gid: 0, mode: 0o755},
		"another user's":         {uid: other, gid: other, mode: 0o755, want: "plugin binary /p/x is owned by uid 12345, not by you (uid 54321) or root; run chown 54321 /p/x, or pass --allow-insecure-plugins"},
		"world-writable":         {uid: me, gid: me, mode: 0o777, want: "plugin binary /p/x is writable by others (mode 0777); run chmod o-w /p/x, or pass --allow-insecure-plugins"},
		"sticky where allowed":   {uid: me, gid: me, mode: 0o1777, stickyOK: true},
		"sticky where not":       {uid: me, gid: me, mode: 0o1777, want: "plugin binary /p/x is writable by others (mode 01777); run chmod o-w /p/x, or pass --allow-insecure-plugins"},
		"another group writes":   {uid: me, gid: other, mode: 0o775, want: "plugin binary /p/x is writable by group gid 12345 (mode 0775); run chmod g-w /p/x, or pass --allow-insecure-plugins"},
		"group may only read":    {uid: me, gid: other, mode: 0o755},
		"setuid, not writable":   {uid: 0, gid: 0, mode: 0o4755},
		"others may not execute": {uid: me, gid: other, mode: 0o700},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := &syscall.Stat_t{Uid: tc.uid, Gid: tc.gid, Mode: syscall.S_IFREG | tc.mode}
			err := checkOwnerAndMode("/p/x", "plugin binary", st, me, tc.stickyOK)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v\nwant %s", err, tc.want)
			case err != nil && !errors.Is(err, ErrInsecure):
				t.Errorf("%v does not match ErrInsecure", err)
			}
		})
	}
}

func TestShellWord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/usr/lib/agenthost/plugins": "/usr/lib/agenthost/plugins",
		"/my plugins":                `'/my plugins'`,
		"/it's":                      `'/it'\''s'`,
		"/a\nb":                      `"/a\nb"`,
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// A launch checks the file it opened, as it is then: a binary made
// writable by others after the plugins were loaded does not start.
func TestLaunchChecksTheOpenedBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, PluginPrefix+"x")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := openBinary(bin, nil, false)
	if want := "plugin binary " + bin + " is writable by others (mode 0777); run chmod o-w " + bin + ", or pass --allow-insecure-plugins"; err == nil || err.Error() != want {
		t.Errorf("openBinary = %v, want %s", err, want)
	}
	b, err := openBinary(bin, nil, true)
	if err != nil {
		t.Fatalf("openBinary allowing insecure binaries: %v", err)
	}
	if !b.script {
		t.Error("a #! file is not seen as a script")
	}
	b.close()
}
