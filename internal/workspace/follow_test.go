//go:build unix

package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFollow(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws, other, outside := filepath.Join(base, "ws"), filepath.Join(base, "other"), filepath.Join(base, "outside")
	for _, d := range []string{ws, other, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"inlink":  "in.txt",
		"cross":   "../other",
		"out":     outside,
		"loop":    "loop",
		"chain":   "inlink",
		"missing": "nowhere/deeper",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open([]string{ws, other})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for arg, want := range map[string]struct{ root, rel string }{
		"inlink":       {ws, "in.txt"},
		"chain":        {ws, "in.txt"},
		"cross/o.txt":  {other, "o.txt"},
		"missing":      {ws, "nowhere/deeper"},
		"new/dir/file": {ws, "new/dir/file"},
	} {
		_, p, err := w.ResolveFollow(arg, true)
		if err != nil {
			t.Errorf("ResolveFollow(%q): %v", arg, err)
			continue
		}
		if p.RootPath != want.root || p.Rel != want.rel || p.Arg != arg {
			t.Errorf("ResolveFollow(%q) = root %s rel %s arg %s, want root %s rel %s", arg, p.RootPath, p.Rel, p.Arg, want.root, want.rel)
		}
	}

	// The last component is left alone when asked.
	if _, p, err := w.ResolveFollow("inlink", false); err != nil || p.Rel != "inlink" {
		t.Errorf("ResolveFollow(inlink, false) = %+v, %v", p, err)
	}
	if _, _, err := w.ResolveFollow("out/x", true); !errors.Is(err, ErrOutside) || err.Error() != `path "out/x" is outside the workspace roots` {
		t.Errorf("a link out: %v", err)
	}
	if _, _, err := w.ResolveFollow("loop", true); err == nil || err.Error() != "loop: too many levels of symbolic links" {
		t.Errorf("a link loop: %v", err)
	}
}

func TestOpenRegular(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for arg, want := range map[string]string{
		"nope.txt": "file not found: nope.txt",
		"d":        "d is a directory, not a file",
		"pipe":     "pipe is a fifo, not a regular file",
		"a\x1bb":   `file not found: "a\x1bb"`,
	} {
		p, err := w.Resolve(arg)
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := OpenRegular(p)
		if err == nil {
			f.Close()
		}
		if err == nil || err.Error() != want {
			t.Errorf("OpenRegular(%q): %v, want %q", arg, err, want)
		}
	}
	p, err := w.Resolve("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, size, err := OpenRegular(p)
	if err != nil || size != 4 {
		t.Fatalf("OpenRegular(f.txt) = %d, %v", size, err)
	}
	f.Close()
}
