package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws, inner, other := filepath.Join(base, "ws"), filepath.Join(base, "ws", "vendor"), filepath.Join(base, "other")
	for _, d := range []string{ws, inner, other, ws + "_evil"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open([]string{ws, inner, other})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	cases := map[string]struct {
		arg, root, rel string // root "" means refused
	}{
		"relative":               {"a/b.txt", ws, "a/b.txt"},
		"dot":                    {".", ws, "."},
		"root itself":            {ws, ws, "."},
		"absolute inside":        {filepath.Join(ws, "x"), ws, "x"},
		"dotdot inside":          {"a/../b", ws, "b"},
		"dotdot out":             {"../other/x", other, "x"},
		"dotdot out of all":      {"../../etc/passwd", "", ""},
		"absolute elsewhere":     {"/etc/passwd", "", ""},
		"prefix trick":           {ws + "_evil/x", "", ""},
		"deepest root wins":      {filepath.Join(inner, "m.go"), inner, "m.go"},
		"relative into a nested": {"vendor/m.go", inner, "m.go"},
		"second root":            {filepath.Join(other, "y"), other, "y"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := w.Resolve(tc.arg)
			if tc.root == "" {
				if !errors.Is(err, ErrOutside) || err.Error() != `path "`+tc.arg+`" is outside the workspace roots` {
					t.Fatalf("Resolve(%q) = %+v, %v; want the outside error", tc.arg, p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.RootPath != tc.root || p.Rel != tc.rel {
				t.Errorf("Resolve(%q) = root %s rel %s, want root %s rel %s", tc.arg, p.RootPath, p.Rel, tc.root, tc.rel)
			}
		})
	}
}

func TestDisplayAndEscapes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	w, err := Open([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p, err := w.Resolve("out/secret")
	if err != nil {
		t.Fatal(err)
	}
	if p.Display() != "out/secret" {
		t.Errorf("Display() = %q", p.Display())
	}
	_, err = p.Root.ReadFile(p.Rel)
	if !IsEscape(err) {
		t.Fatalf("reading through a link out: %v, want os.Root's escape error", err)
	}
	if got := p.Err(err); !errors.Is(got, ErrOutside) || got.Error() != `path "out/secret" is outside the workspace roots` {
		t.Errorf("Err() = %v", got)
	}
	if _, err := Open(nil); err == nil {
		t.Error("Open with no roots succeeded")
	}
	if _, err := Open([]string{"relative"}); err == nil {
		t.Error("Open with a relative root succeeded")
	}
}

// A root given through a symbolic link holds both the link's path and
// the real one.
func TestSymlinkedRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	w, err := Open([]string{link})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, arg := range []string{"sub/f", filepath.Join(link, "sub/f"), filepath.Join(real, "sub/f")} {
		p, err := w.Resolve(arg)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", arg, err)
		}
		if p.RootPath != link || p.Rel != "sub/f" || p.Abs != filepath.Join(link, "sub/f") {
			t.Errorf("Resolve(%q) = root %s rel %s abs %s; want root %s rel sub/f", arg, p.RootPath, p.Rel, p.Abs, link)
		}
	}
	if p, err := w.Resolve(real); err != nil || !p.IsRoot() {
		t.Errorf("Resolve(the real path) = %+v, %v; want the root", p, err)
	}
	if _, err := w.Resolve(base + "/realx"); !errors.Is(err, ErrOutside) {
		t.Errorf("a sibling sharing the real path's prefix: %v, want the outside error", err)
	}
}

// RootsWithin finds the roots a directory holds, whichever way they were
// given.
func TestRootsWithin(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	nested := filepath.Join(ws, "a", "nested")
	elsewhere := filepath.Join(base, "elsewhere")
	for _, d := range []string{nested, elsewhere, filepath.Join(ws, "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A root given through a link inside ws: moving the link breaks it.
	if err := os.Symlink(elsewhere, filepath.Join(ws, "b", "ln")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(ws, "b", "ln")
	w, err := Open([]string{ws, nested, linked})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tests := map[string]struct {
		arg  string
		want []string
	}{
		"parent of a nested root":  {"a", []string{nested}},
		"the nested root":          {"a/nested", []string{nested}},
		"a sibling":                {"b/other", nil},
		"holds a root by its link": {"b", []string{linked}},
		"the whole workspace":      {ws, []string{ws, nested, linked}},
		"the real place of a root": {elsewhere, []string{linked}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := w.Resolve(tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			got := w.RootsWithin(p)
			if len(got) != len(tc.want) {
				t.Fatalf("RootsWithin(%s) = %v, want %v", tc.arg, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("RootsWithin(%s) = %v, want %v", tc.arg, got, tc.want)
				}
			}
		})
	}
}

// Path.Err words os errors without Go's operation names.
func TestErrWords(t *testing.T) {
	t.Parallel()
	p := Path{Arg: "dir/f.txt"}
	tests := map[string]struct {
		err  error
		want string
	}{
		"not found":     {&fs.PathError{Op: "openat", Path: "x", Err: syscall.ENOENT}, "dir/f.txt: no such file or directory"},
		"loop":          {&fs.PathError{Op: "statat", Path: "loopa", Err: syscall.ELOOP}, "dir/f.txt: too many levels of symbolic links"},
		"no space":      {&fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, "dir/f.txt: no space left on the device"},
		"read-only":     {&os.LinkError{Op: "renameat", Old: "a", New: "b", Err: syscall.EROFS}, "dir/f.txt: read-only file system"},
		"name too long": {&fs.PathError{Op: "openat", Path: "x", Err: syscall.ENAMETOOLONG}, "dir/f.txt: file name too long (a name has at most 255 bytes)"},
		"escape":        {&fs.PathError{Op: "openat", Path: "swap", Err: errors.New("path escapes from parent")}, `path "dir/f.txt" is outside the workspace roots`},
		"cross-device":  {os.NewSyscallError("renameat2", syscall.EXDEV), "dir/f.txt: on a different file system"},
		"not os":        {errors.New("plain"), "plain"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := p.Err(tc.err)
			if got.Error() != tc.want {
				t.Errorf("Err(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
	if got := (Path{Arg: "a\nb"}).Err(&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}); got.Error() != `"a\nb": no such file or directory` {
		t.Errorf("a name with a newline: %q", got)
	}
}

// FuzzResolve places arbitrary paths: a placed path is always inside its
// root, and a refused one is refused in the tool's words.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"a/b.txt", ".", "..", "../x", "/etc/passwd", "a/../../b", "//", "/",
		"sub/../sub/./f", "x\x00y", "", "a\nb", "\xff\xfe", "link/f", "real/f",
		"ws_evil/x", "./../ws/f", "a/" + strings.Repeat("n", 255), strings.Repeat("../", 30),
		strings.Repeat("d/", 2100),
	} {
		f.Add(s)
	}
	base := f.TempDir()
	ws := filepath.Join(base, "ws")
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	for _, d := range []string{filepath.Join(ws, "sub", "deeper"), real} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(real, link); err != nil {
		f.Fatal(err)
	}
	w, err := Open([]string{ws, filepath.Join(ws, "sub", "deeper"), link})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close() })
	f.Fuzz(func(t *testing.T, arg string) {
		p, err := w.Resolve(arg)
		if err != nil {
			msg := err.Error()
			var tooLong *TooLongError
			switch {
			case errors.Is(err, ErrOutside):
			case msg == "path is empty" && arg == "":
			case strings.HasSuffix(msg, "contains a NUL byte") && strings.ContainsRune(arg, 0):
			case errors.As(err, &tooLong) && tooLong.Len > MaxPath && tooLong.Len <= len(ws)+1+len(arg):
				// Too long as an absolute path, which is at most the
				// first root's path and the argument joined.
			default:
				t.Fatalf("Resolve(%q): unexpected error %v", arg, err)
			}
			return
		}
		if filepath.IsAbs(p.Rel) || p.Rel == ".." || strings.HasPrefix(p.Rel, "../") || p.Rel != filepath.Clean(p.Rel) {
			t.Fatalf("Resolve(%q) = rel %q: not inside its root", arg, p.Rel)
		}
		if p.Abs != filepath.Join(p.RootPath, p.Rel) {
			t.Fatalf("Resolve(%q): abs %q is not root %q + rel %q", arg, p.Abs, p.RootPath, p.Rel)
		}
		if p.RootPath != ws && p.RootPath != filepath.Join(ws, "sub", "deeper") && p.RootPath != link {
			t.Fatalf("Resolve(%q): root %q is none of the roots", arg, p.RootPath)
		}
		if p.Root == nil || p.Arg != arg {
			t.Fatalf("Resolve(%q) = %+v", arg, p)
		}
		// Placing the result again places it in the same spot.
		q, err := w.Resolve(p.Abs)
		if err != nil || q.Abs != p.Abs || q.Rel != p.Rel {
			t.Fatalf("Resolve(Resolve(%q).Abs) = %+v, %v; want the same place", arg, q, err)
		}
	})
}
