package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// list_dir in a real plugin process: the host sees its title and output
// schema, and each call's structured result comes back with its text,
// the same as in-process.
func TestListDirTreeInProcess(t *testing.T) {
	t.Parallel()
	root := excludeTree(t)
	mustWrite(t, filepath.Join(root, "src", "gen", "deep", "deeper", "deepest", "x.go"), "x")
	p := startPlugin(t, []string{root})

	var info *host.ToolInfo
	for _, ti := range p.reg.Tools() {
		if ti.Name == "list_dir" {
			info = &ti
		}
	}
	switch {
	case info == nil:
		t.Fatal("the plugin serves no list_dir")
	case info.Title != "List directory":
		t.Errorf("list_dir's title through the plugin = %q", info.Title)
	case !bytes.Equal(info.OutputSchema, sdk.OutputSchemaOf(listDir)):
		t.Errorf("list_dir's output schema through the plugin:\n%s\nwant:\n%s", info.OutputSchema, sdk.OutputSchemaOf(listDir))
	}

	for _, args := range []map[string]any{
		{},
		{"depth": 5, "names_only": true},
		{"depth": 5, "exclude": []string{"node_modules", "*.log", "/build", "testdata/"}},
		{"depth": 3, "max_entries": 6, "include_hidden": true},
		{"path": "src", "exclude": []string{"*"}},
	} {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		got := p.reg.ExecuteResult(t.Context(), "list_dir", raw)
		text, structured, tree := listStructured(t, root, args)
		if got.IsError || got.Text != text {
			t.Errorf("list_dir(%v) through the plugin: %q (error %v), want %q", args, got.Text, got.IsError, text)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got.Structured); err != nil {
			t.Fatalf("list_dir(%v) through the plugin: structured result %q: %v", args, got.Structured, err)
		}
		if compact.String() != string(structured) {
			t.Errorf("list_dir(%v) through the plugin: structured\n%s\nwant:\n%s", args, got.Structured, structured)
		}
		limit := defaultMaxEntries
		if n, ok := args["max_entries"].(int); ok {
			limit = n
		}
		if r := renderListed(tree, limit); r != got.Text {
			t.Errorf("list_dir(%v) through the plugin: the data renders as\n%s\nbut the text is\n%s", args, r, got.Text)
		}
	}
}

// A malformed exclude pattern fails the call in the plugin process, with
// no structured result.
func TestListDirExcludeErrorInProcess(t *testing.T) {
	t.Parallel()
	root := excludeTree(t)
	p := startPlugin(t, []string{root})
	got := p.reg.ExecuteResult(t.Context(), "list_dir", json.RawMessage(`{"exclude":["src/{a,b"]}`))
	want := `Error executing list_dir: exclude pattern "src/{a,b" is not a valid glob: check that each [ and { is closed and that it does not end in \`
	if !got.IsError || got.Text != want || got.Structured != nil {
		t.Errorf("list_dir(a bad pattern) through the plugin = %q (error %v), structured %s; want the error %q", got.Text, got.IsError, got.Structured, want)
	}
	noGoText(t, "list_dir(a bad pattern)", got.Text)
}
