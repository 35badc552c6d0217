package workspace

import (
	"errors"
	"os"
	"path/filepath"
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
