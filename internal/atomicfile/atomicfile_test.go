package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("new file in new directories", func(t *testing.T) {
		path := filepath.Join(dir, "a", "b", "new.txt")
		if err := Write(path, []byte("hello"), 0o640); err != nil {
			t.Fatal(err)
		}
		assertFile(t, path, "hello", 0o640)
	})
	t.Run("existing file keeps its mode", func(t *testing.T) {
		path := filepath.Join(dir, "script.sh")
		if err := os.WriteFile(path, []byte("old"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		assertFile(t, path, "new", 0o755)
	})
	t.Run("directory is refused", func(t *testing.T) {
		path := filepath.Join(dir, "sub")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(path, []byte("x"), 0o644); err == nil {
			t.Fatal("writing over a directory succeeded")
		}
	})
	t.Run("no temporary files are left", func(t *testing.T) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if filepath.Ext(e.Name()) != "" && e.Name()[0] == '.' {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	})
}

func assertFile(t *testing.T, path, want string, perm os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != perm {
		t.Errorf("mode = %v, want %v", info.Mode().Perm(), perm)
	}
}
