package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// A home directory granted whole keeps its secrets: the keys, a token
// reached through a symbolic link, a rule naming a secret outright; its
// other files, and every name in it, stay reachable.
func TestSecretsStayOutOfAGrantedDirectory(t *testing.T) {
	requireLandlock(t)
	home := t.TempDir()
	for _, f := range []string{".ssh/id_rsa", ".config/gh/hosts.yml", ".config/git/config", "notes.txt", "proj/main.go"} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	p := &Policy{
		Rules:   []Rule{{Path: home, Access: Read | Write}, {Path: filepath.Join(home, ".config/gh"), Access: Read}},
		Secrets: []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".config/gh")},
	}
	for _, c := range []struct {
		act, path string
		want      string
	}{
		{"read", ".ssh/id_rsa", "error: permission denied"},
		{"read", "keys/id_rsa", "error: permission denied"},
		{"read", ".config/gh/hosts.yml", "error: permission denied"},
		{"write", ".ssh/new", "error: permission denied"},
		{"read", ".config/git/config", "ok"},
		{"read", "notes.txt", "ok"},
		{"write", "proj/new.go", "ok"},
		{"read", ".", "ok"},
		{"read", ".ssh", "ok"}, // its names
	} {
		if got := confined(t, p, c.act, filepath.Join(home, c.path)); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.act, c.path, got, c.want)
		}
		allowed := p.Allows(filepath.Join(home, c.path), map[string]Access{"read": Read, "write": Write}[c.act])
		if c.path == "." || c.path == ".ssh" {
			continue // listing: Allows speaks of reading files
		}
		if allowed != (c.want == "ok") {
			t.Errorf("Allows(%s, %s) = %v, the kernel says %s", c.path, c.act, allowed, c.want)
		}
	}
}
