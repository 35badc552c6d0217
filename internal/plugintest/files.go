package plugintest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes data to dir/name, making the directories it needs, and
// returns the file's path.
func WriteFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
