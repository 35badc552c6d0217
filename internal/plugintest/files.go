package plugintest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
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

// ResolveSchema resolves a JSON Schema, failing the test if it is not one.
func ResolveSchema(tb testing.TB, raw json.RawMessage) *jsonschema.Resolved {
	tb.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		tb.Fatal(err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return resolved
}
