package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestResolvePathMax(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	// The root given by a longer path, a link: its length counts.
	given := filepath.Join(base, strings.Repeat("l", 200))
	if err := os.Symlink(real, given); err != nil {
		t.Fatal(err)
	}
	w, err := Open([]string{given})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fits := strings.Repeat("n", MaxPath-len(given)-1)
	cases := map[string]struct {
		arg  string
		long int // the length in the error; 0: resolved
	}{
		"at the limit":                 {fits, 0},
		"one byte past it":             {fits + "x", MaxPath + 1},
		"absolute, by the real path":   {filepath.Join(real, fits+"x"), MaxPath + 1},
		"long before it is cleaned":    {strings.Repeat("./", 3000) + "x", 0},
		"short, resolved past the cap": {"a/" + fits, MaxPath + 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := w.Resolve(c.arg)
			if c.long == 0 {
				if err != nil {
					t.Errorf("Resolve(%d bytes) = %v", len(c.arg), err)
				}
				return
			}
			var tl *TooLongError
			if !errors.As(err, &tl) || tl.Len != c.long || !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("Resolve(%d bytes) = %+v, %v; want a TooLongError of %d bytes", len(c.arg), p, err, c.long)
			}
		})
	}
}
