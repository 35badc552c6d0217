package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

// listedTree is list_dir's structured result as a client decodes it,
// with one recursive entry type.
type listedTree struct {
	Path      string        `json:"path"`
	Entries   []listedEntry `json:"entries"`
	Truncated bool          `json:"truncated"`
	More      int           `json:"more"`
	Hidden    int           `json:"hidden"`
	Excluded  int           `json:"excluded"`
}

type listedEntry struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Kind      string         `json:"kind"`
	Size      *int64         `json:"size"`
	Target    string         `json:"target"`
	Error     string         `json:"error"`
	Children  *[]listedEntry `json:"children"` // nil: absent
	Truncated bool           `json:"truncated"`
}

// listStructured runs list_dir in-process in root and returns its text
// with its structured result, which it checks against the output
// schema and decodes.
func listStructured(t *testing.T, root string, args map[string]any) (string, json.RawMessage, listedTree) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	text, structured, err := listDir.(sdk.StructuredTool).ExecuteStructured(sdk.WithRoots(t.Context(), []string{root}), raw)
	if err != nil {
		t.Fatalf("list_dir(%v): %v", args, err)
	}
	checkOutput(t, sdk.OutputSchemaOf(listDir), structured)
	var tree listedTree
	if err := json.Unmarshal(structured, &tree); err != nil {
		t.Fatalf("list_dir(%v): decoding %s: %v", args, structured, err)
	}
	return text, structured, tree
}

// checkOutput fails unless structured conforms to the output schema.
func checkOutput(t *testing.T, schema, structured json.RawMessage) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatalf("the output schema %s: %v", schema, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the output schema: %v", err)
	}
	if err := sdk.ValidateStructured(resolved, structured); err != nil {
		t.Errorf("%v: %s", err, structured)
	}
}

// renderListed renders a structured result as list_dir's text, as a
// client holding only the data would: the tree matches the text when
// this gives the text back. limit is the call's max_entries.
func renderListed(tree listedTree, limit int) string {
	if len(tree.Entries) == 0 && tree.More == 0 {
		var apart []string
		if tree.Hidden > 0 {
			apart = append(apart, fmt.Sprintf("%d hidden %s (set include_hidden to list %s)", tree.Hidden, plural(tree.Hidden, "entry", "entries"), plural(tree.Hidden, "it", "them")))
		}
		if tree.Excluded > 0 {
			apart = append(apart, fmt.Sprintf("%d excluded %s", tree.Excluded, plural(tree.Excluded, "entry", "entries")))
		}
		if len(apart) == 0 {
			return textsafe.Name(tree.Path) + " is empty"
		}
		return textsafe.Name(tree.Path) + " is empty apart from " + strings.Join(apart, " and ")
	}
	var b strings.Builder
	shown := 0
	var render func(entries []listedEntry, indent string)
	render = func(entries []listedEntry, indent string) {
		for _, e := range entries {
			name := e.Name
			if !strings.HasPrefix(name, `"`) {
				name = textsafe.Name(name)
			}
			b.WriteString(indent + name)
			switch e.Type {
			case "file":
				if e.Size != nil {
					b.WriteString(" (" + formatSize(*e.Size) + ")")
				}
			case "directory":
				b.WriteString("/")
			case "symlink":
				target := cmpOr(e.Target, "?")
				if !strings.HasPrefix(target, `"`) {
					target = textsafe.Name(target)
				}
				b.WriteString(" -> " + target)
			case "other":
				b.WriteString(" [" + e.Kind + "]")
			case "unknown":
				b.WriteString(" [" + e.Error + "]")
			default:
				b.WriteString(" [TYPE " + e.Type + "]")
			}
			b.WriteString("\n")
			shown++
			if e.Type == "directory" && e.Error != "" && shown < limit {
				b.WriteString(indent + "  [cannot list: " + e.Error + "]\n")
			}
			if e.Children != nil {
				render(*e.Children, indent+"  ")
			}
		}
	}
	render(tree.Entries, "")
	if tree.More > 0 {
		fmt.Fprintf(&b, "... and %d more\n", tree.More)
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// The structured result says what the text says, for every kind of
// entry, depth, cap and filter.
func TestListDirDataMatchesText(t *testing.T) {
	t.Parallel()
	trees := map[string]string{}
	trees["sizes"], _ = listTree(t)
	trees["kinds"] = namesTree(t)
	trees["exclude"] = excludeTree(t)
	argSets := []map[string]any{
		{},
		{"include_hidden": true},
		{"depth": 2},
		{"depth": 5},
		{"depth": 5, "include_hidden": true},
		{"max_entries": 1},
		{"max_entries": 3},
		{"depth": 5, "max_entries": 4},
		{"depth": 3, "max_entries": 7},
		{"depth": 5, "exclude": []string{"*.log", "node_modules", "deep"}},
		{"path": "sub"},
		{"path": "zdir"},
		{"path": "src", "exclude": []string{"*"}},
	}
	for treeName, root := range trees {
		for _, args := range argSets {
			for _, names := range []bool{false, true} {
				call := map[string]any{"names_only": names}
				for k, v := range args {
					call[k] = v
				}
				if p, ok := call["path"].(string); ok {
					if _, err := os.Stat(filepath.Join(root, p)); err != nil {
						continue
					}
				}
				text, structured, tree := listStructured(t, root, call)
				limit := defaultMaxEntries
				if n, ok := call["max_entries"].(int); ok {
					limit = n
				}
				if got := renderListed(tree, limit); got != text {
					t.Errorf("%s: list_dir(%v): the data\n%s\nrenders as\n%s\nbut the text is\n%s", treeName, call, structured, got, text)
				}
			}
		}
	}
}

// The structured result of a small tree, exactly: sizes (0 too), an
// empty directory entered, one past the depth, a link, a fifo, a name
// that is not UTF-8, and the cuts of a cap.
func TestListDirData(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a", "empty.txt"), "")
	mustWrite(t, filepath.Join(root, "a", "deeper", "x.txt"), "x")
	mustWrite(t, filepath.Join(root, "b.txt"), "hello")
	mustWrite(t, filepath.Join(root, "bad\xff"), "b")
	mustWrite(t, filepath.Join(root, ".h"), "h")
	if err := os.Mkdir(filepath.Join(root, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "b.txt", filepath.Join(root, "link"))
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args map[string]any
		want string
	}{
		"depth 2": {map[string]any{"depth": 2},
			`{"path":".","entries":[` +
				`{"name":"a","type":"directory","children":[{"name":"deeper","type":"directory"},{"name":"empty.txt","type":"file","size":0}]},` +
				`{"name":"b.txt","type":"file","size":5},{"name":"\"bad\\xff\"","type":"file","size":1},` +
				`{"name":"c","type":"directory","children":[]},` +
				`{"name":"link","type":"symlink","target":"b.txt"},{"name":"pipe","type":"other","kind":"fifo"}],` +
				`"truncated":false,"more":0,"hidden":1,"excluded":0}`},
		"names only, a cap inside a directory": {map[string]any{"depth": 3, "names_only": true, "max_entries": 2},
			`{"path":".","entries":[{"name":"a","type":"directory","children":[{"name":"deeper","type":"directory","children":[],"truncated":true}],"truncated":true}],` +
				`"truncated":true,"more":7,"hidden":1,"excluded":0}`},
		"excluded": {map[string]any{"exclude": []string{"a", "*.txt", "bad*", "pipe"}},
			`{"path":".","entries":[{"name":"c","type":"directory"},{"name":"link","type":"symlink","target":"b.txt"}],"truncated":false,"more":0,"hidden":1,"excluded":4}`},
		"empty": {map[string]any{"path": "c"},
			`{"path":"c","entries":[],"truncated":false,"more":0,"hidden":0,"excluded":0}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, structured, _ := listStructured(t, root, tc.args)
			if string(structured) != tc.want {
				t.Errorf("list_dir(%v) structured:\n%s\nwant:\n%s", tc.args, structured, tc.want)
			}
		})
	}
}

// A directory that cannot be listed says why in its entry, with no
// children; an entry that cannot be examined is of type unknown.
func TestListDirDataUnreadable(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "locked", "f.txt"), "f")
	mustWrite(t, filepath.Join(root, "nox", "g.txt"), "g")
	for dir, mode := range map[string]os.FileMode{"locked": 0, "nox": 0o600} {
		if err := os.Chmod(filepath.Join(root, dir), mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(root, dir), 0o755) })
	}
	unprivileged(t, func() {
		text, structured, _ := listStructured(t, root, map[string]any{"depth": 2})
		wantText := "locked/\n  [cannot list: locked: permission denied]\nnox/\n  g.txt [permission denied]\n"
		want := `{"path":".","entries":[` +
			`{"name":"locked","type":"directory","error":"locked: permission denied"},` +
			`{"name":"nox","type":"directory","children":[{"name":"g.txt","type":"unknown","error":"permission denied"}]}],` +
			`"truncated":false,"more":0,"hidden":0,"excluded":0}`
		if text != wantText || string(structured) != want {
			t.Errorf("list_dir(depth 2) =\n%s\n%s\nwant:\n%s\n%s", text, structured, wantText, want)
		}
	})
}

// The output schema describes every level depth reaches.
func TestListDirOutputSchema(t *testing.T) {
	t.Parallel()
	var s jsonschema.Schema
	if err := json.Unmarshal(sdk.OutputSchemaOf(listDir), &s); err != nil {
		t.Fatal(err)
	}
	level := s.Properties["entries"]
	for depth := 1; depth <= maxListDepth; depth++ {
		if level == nil || level.Items == nil {
			t.Fatalf("the output schema has no entries at depth %d", depth)
		}
		for _, p := range []string{"name", "type", "size", "target", "kind", "error"} {
			if level.Items.Properties[p] == nil {
				t.Errorf("the entries at depth %d have no %s", depth, p)
			}
		}
		level = level.Items.Properties["children"]
	}
	if level != nil {
		t.Errorf("the entries at depth %d, past maxListDepth, have children", maxListDepth)
	}
	if got := sdk.TitleOf(listDir); got != "List directory" {
		t.Errorf("list_dir's title = %q", got)
	}
}
