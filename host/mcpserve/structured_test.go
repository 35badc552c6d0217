package mcpserve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/servetest"
)

// structuredTools are the built-in tools with structured results.
var structuredTools = []string{"run_bash", "file_info", "search_text", "search_files"}

// titledTools are built-in tools and their titles.
var titledTools = map[string]string{
	"read_file":            "Read file",
	"write_file":           "Write file",
	"remove":               "Remove file or directory",
	"mkdir":                "Create directory",
	"move":                 "Move or rename",
	"file_info":            "Describe files",
	"run_bash":             "Run shell command",
	"search_text":          "Search file contents",
	"search_files":         "Find files",
	"save_session_context": "Save session context",
}

// The built-ins' titles and output schemas reach MCP clients in
// tools/list, and their structured results, which cross the plugin
// processes' boundary, reach them as structuredContent, saying what the
// text says.
func TestMCPStructuredResults(t *testing.T) {
	dir := pluginDir(t)
	plugintest.Binaries(t, "./plugins/bash", "./plugins/search")
	plugintest.Install(t, dir, host.PluginPrefix+"bash", "./plugins/bash")
	plugintest.Install(t, dir, host.PluginPrefix+"search", "./plugins/search")
	root := t.TempDir()
	for name, content := range map[string]string{"notes.txt": "alpha\nbeta\nalphabet\n", "sub/deep.txt": "no\nalpha here\n"} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("notes.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	reg := servetest.NewRegistry(t, dir, root, "run_bash", "remove")
	cs := servetest.ConnectInMemory(t, New(reg, nil).Connect, nil)

	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	for name, title := range titledTools {
		tl := tools[name]
		if tl == nil {
			t.Errorf("%s is not listed", name)
			continue
		}
		if tl.Title != title {
			t.Errorf("%s's title = %q, want %q", name, tl.Title, title)
		}
		hasSchema := tl.OutputSchema != nil
		if want := slices.Contains(structuredTools, name); hasSchema != want {
			t.Errorf("%s has an output schema: %v, want %v", name, hasSchema, want)
		}
		if hasSchema {
			schema, _ := json.Marshal(tl.OutputSchema)
			if !strings.HasPrefix(string(schema), `{"additionalProperties":false,`) || !strings.Contains(string(schema), `"type":"object"`) {
				t.Errorf("%s's output schema is not a closed object schema: %s", name, schema)
			}
		}
	}

	t.Run("run_bash", func(t *testing.T) {
		res := servetest.Call(t, cs, "run_bash", map[string]any{"command": "echo out; echo '<err>' >&2; exit 3"})
		var fromText, structured map[string]any
		if err := json.Unmarshal([]byte(servetest.Text(t, res)), &fromText); err != nil {
			t.Fatalf("the text is not JSON: %v", err)
		}
		structuredOf(t, res, &structured)
		if !reflect.DeepEqual(structured, fromText) {
			t.Errorf("structuredContent %v, the text says %v", structured, fromText)
		}
		if structured["exit_code"] != 3.0 || structured["stdout"] != "out\n" || structured["stderr"] != "<err>\n" {
			t.Errorf("structuredContent %v", structured)
		}
	})

	t.Run("search_text", func(t *testing.T) {
		res := servetest.Call(t, cs, "search_text", map[string]any{"query": "alpha", "context": 1})
		var out struct {
			Lines []struct {
				Path    string `json:"path"`
				Line    int    `json:"line"`
				Text    string `json:"text"`
				Context bool   `json:"context"`
			} `json:"lines"`
			Total int `json:"total"`
		}
		structuredOf(t, res, &out)
		var lines []string
		for _, l := range out.Lines {
			sep := ":"
			if l.Context {
				sep = "-"
			}
			lines = append(lines, l.Path+sep+fmt.Sprint(l.Line)+sep+l.Text)
		}
		got := strings.ReplaceAll(servetest.Text(t, res), "--\n", "")
		if want := strings.Join(lines, "\n"); got != want {
			t.Errorf("the text:\n%s\nthe structured lines say:\n%s", got, want)
		}
		if out.Total != 5 || len(out.Lines) != 8 {
			t.Errorf("structuredContent %+v, want 5 matches and 3 context lines", out)
		}
	})

	t.Run("search_files", func(t *testing.T) {
		res := servetest.Call(t, cs, "search_files", map[string]any{"pattern": "**"})
		var out struct {
			Paths []string `json:"paths"`
			Total int      `json:"total"`
		}
		structuredOf(t, res, &out)
		if got, want := servetest.Text(t, res), strings.Join(out.Paths, "\n"); got != want || out.Total != 4 {
			t.Errorf("the text:\n%s\nstructuredContent %+v", got, out)
		}
		none := servetest.Call(t, cs, "search_files", map[string]any{"pattern": "*.none"})
		structuredOf(t, none, &out)
		if len(out.Paths) != 0 || out.Total != 0 || out.Paths == nil {
			t.Errorf("no match: structuredContent %+v, want an empty list", out)
		}
	})

	t.Run("file_info", func(t *testing.T) {
		res := servetest.Call(t, cs, "file_info", map[string]any{"paths": []string{"notes.txt", "link", "missing", "sub"}})
		var out struct {
			Files []struct {
				Path, Error, Type, Target, Permissions, Mode, Owner, Modified, Created string
				Size                                                                   *int64
			} `json:"files"`
		}
		structuredOf(t, res, &out)
		blocks := servetest.Text(t, res)
		if len(out.Files) != 4 {
			t.Fatalf("structuredContent %+v, want 4 records", out)
		}
		for _, f := range out.Files {
			if f.Error != "" {
				if !strings.Contains(blocks, "error: "+f.Error+"\n") || f.Size != nil || f.Type != "" {
					t.Errorf("record %+v: the text does not say its error, or it says more:\n%s", f, blocks)
				}
				continue
			}
			head := fmt.Sprintf("%s: %s", f.Path, f.Type)
			if f.Target != "" {
				head += " -> " + f.Target
			}
			head += fmt.Sprintf(", %d bytes", *f.Size)
			perms := fmt.Sprintf("  permissions %s (%s), owner %s,", f.Permissions, f.Mode, f.Owner)
			for _, want := range []string{head, perms, "  modified " + f.Modified + "\n", "  created " + f.Created + "\n"} {
				if !strings.Contains(blocks, want) {
					t.Errorf("record %+v: the text does not say %q:\n%s", f, want, blocks)
				}
			}
		}
		if f := out.Files[1]; f.Type != "symlink" || f.Target != "notes.txt" {
			t.Errorf("the link's record %+v", f)
		}
	})

	t.Run("errors are text", func(t *testing.T) {
		res := servetest.Call(t, cs, "file_info", map[string]any{"paths": []string{"missing"}})
		if !res.IsError || res.StructuredContent != nil || !strings.HasPrefix(servetest.Text(t, res), "Error executing file_info: ") {
			t.Errorf("a failed call: %+v", res)
		}
	})
}

// structuredOf decodes a successful result's structuredContent into v.
func structuredOf(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("the call failed: %s", servetest.Text(t, res))
	}
	if res.StructuredContent == nil {
		t.Fatal("no structuredContent")
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
}
