package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/servetest"
)

// TestMCPListDirTree drives the built agenthost mcp over stdio with the
// official client: list_dir has a title and an output schema in
// tools/list, and its calls carry the listing as structuredContent that
// conforms to the schema, beside the text, with excluded entries left
// out at every level.
func TestMCPListDirTree(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	root := t.TempDir()
	for path, content := range map[string]string{
		"main.go":                    "package main\n",
		"run.log":                    "log",
		"src/app.go":                 "package src\n",
		"src/app.log":                "log",
		"src/node_modules/dep/a.js":  "a",
		"node_modules/left-pad/i.js": "i",
	} {
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "src", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs := mcpOverStdio(t, exe, plugins, root)

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "list_dir" {
			tool = tl
		}
	}
	if tool == nil {
		t.Fatal("tools/list has no list_dir")
	}
	if tool.Title != "List directory" {
		t.Errorf("list_dir's title = %q, want \"List directory\"", tool.Title)
	}
	if tool.OutputSchema == nil {
		t.Fatal("list_dir has no output schema")
	}
	schema := resolveSchema(t, tool.OutputSchema)

	// structured checks a result's structuredContent against the output
	// schema and returns it decoded.
	structured := func(t *testing.T, res *mcp.CallToolResult) any {
		t.Helper()
		if res.StructuredContent == nil {
			t.Fatalf("no structuredContent beside %q", servetest.Text(t, res))
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("structuredContent %s does not conform to the output schema: %v", raw, err)
		}
		return v
	}

	t.Run("a tree with exclude", func(t *testing.T) {
		res := servetest.Call(t, cs, "list_dir", map[string]any{"depth": 3, "exclude": []string{"node_modules", "*.log"}})
		wantText := "main.go (13 B)\nsrc/\n  app.go (12 B)\n  empty/\n"
		if got := servetest.Text(t, res); res.IsError || got != wantText {
			t.Errorf("list_dir: isError %v\n%s\nwant:\n%s", res.IsError, got, wantText)
		}
		want := decodeJSON(t, `{"path":".","entries":[`+
			`{"name":"main.go","type":"file","size":13},`+
			`{"name":"src","type":"directory","children":[{"name":"app.go","type":"file","size":12},{"name":"empty","type":"directory","children":[]}]}],`+
			`"truncated":false,"more":0,"hidden":0,"excluded":4}`)
		if got := structured(t, res); !reflect.DeepEqual(got, want) {
			t.Errorf("structuredContent:\n%v\nwant:\n%v", got, want)
		}
	})

	t.Run("names only, cut by max_entries", func(t *testing.T) {
		res := servetest.Call(t, cs, "list_dir", map[string]any{"path": "src", "depth": 2, "names_only": true, "max_entries": 3})
		wantText := "app.go\napp.log\nempty/\n... and 2 more\n"
		if got := servetest.Text(t, res); res.IsError || got != wantText {
			t.Errorf("list_dir: isError %v\n%s\nwant:\n%s", res.IsError, got, wantText)
		}
		want := decodeJSON(t, `{"path":"src","entries":[`+
			`{"name":"app.go","type":"file"},{"name":"app.log","type":"file"},{"name":"empty","type":"directory","children":[]}],`+
			`"truncated":true,"more":2,"hidden":0,"excluded":0}`)
		if got := structured(t, res); !reflect.DeepEqual(got, want) {
			t.Errorf("structuredContent:\n%v\nwant:\n%v", got, want)
		}
	})

	t.Run("a malformed pattern", func(t *testing.T) {
		res := servetest.Call(t, cs, "list_dir", map[string]any{"exclude": []string{"[a-"}})
		want := `Error executing list_dir: exclude pattern "[a-" is not a valid glob: check that each [ and { is closed and that it does not end in \`
		if got := servetest.Text(t, res); !res.IsError || got != want || res.StructuredContent != nil {
			t.Errorf("list_dir: isError %v, structuredContent %v\n%s\nwant the error:\n%s", res.IsError, res.StructuredContent, got, want)
		}
	})
}

// resolveSchema resolves a JSON Schema as an MCP client received it.
func resolveSchema(t *testing.T, schema any) *jsonschema.Resolved {
	t.Helper()
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("the output schema %s: %v", raw, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the output schema %s: %v", raw, err)
	}
	return resolved
}

// decodeJSON decodes JSON text as a client decodes structuredContent.
func decodeJSON(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return v
}
