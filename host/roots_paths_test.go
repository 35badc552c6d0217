package host

import (
	"encoding/json"
	"testing"
)

// TestTakesPaths: the arguments that say they hold a path, as MCP
// servers name them, and those that do not.
func TestTakesPaths(t *testing.T) {
	for schema, want := range map[string]bool{
		`{"type":"object","properties":{"path":{"type":"string"}}}`:                                   true,
		`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}}}`:         true,
		`{"type":"object","properties":{"repo_path":{"type":"string"}}}`:                              true,
		`{"type":"object","properties":{"fileName":{"type":"string"}}}`:                               true,
		`{"type":"object","properties":{"Directory":{"type":"string"}}}`:                              true,
		`{"type":"object","properties":{"working-dir":{"type":"string"}}}`:                            true,
		`{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}}}`: true,
		`{"type":"object","properties":{"cwd":{"type":"string"}}}`:                                    true,
		`{"type":"object","properties":{"message":{"type":"string","description":"the file path"}}}`:  false,
		`{"type":"object","properties":{"query":{"type":"string"}}}`:                                  false,
		`{"type":"object","properties":{"url":{"type":"string"},"max_length":{"type":"integer"}}}`:    false,
		`{"type":"object"}`: false,
		`{"type":"object","properties":{"sql":"not a schema","path":1}}`: true,
		`{"properties": ["path"`: true, // unreadable, with a word of a path in it
	} {
		if got := takesPaths(json.RawMessage(schema)); got != want {
			t.Errorf("takesPaths(%s) = %v, want %v", schema, got, want)
		}
	}
}
