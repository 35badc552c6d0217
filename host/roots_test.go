package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// rootsTree makes a workspace root with sub/ and other/ inside, a
// directory outside it, a file, and symbolic links: in/escape (inside the
// root, leading outside), alias (outside, leading to sub) and in/up
// (inside, leading to the root's parent).
func rootsTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{"root/sub/deep", "root/other", "root/in", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{"root/sub/a.txt": "in sub", "root/other/b.txt": "in other", "root/file.txt": "a file", "outside/c.txt": "outside"} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"root/in/escape": outside, "alias": filepath.Join(root, "sub"), "root/in/up": base} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

func TestNarrowRoots(t *testing.T) {
	t.Parallel()
	root, outside := rootsTree(t)
	base := filepath.Dir(root)
	second := t.TempDir()
	reg := host.NewToolRegistry(&host.Options{Roots: []string{root, second}})
	sub, other := filepath.Join(root, "sub"), filepath.Join(root, "other")

	tests := map[string]struct {
		asked       []string
		kept        []string
		dropped     int
		droppedText string
	}{
		"none":                     {},
		"the root itself":          {asked: []string{root}, kept: []string{root}},
		"inside":                   {asked: []string{sub}, kept: []string{sub}},
		"inside, not clean":        {asked: []string{root + "/other/../sub/./"}, kept: []string{sub}},
		"order kept":               {asked: []string{other, sub}, kept: []string{other, sub}},
		"the same twice":           {asked: []string{sub, sub + "/"}, kept: []string{sub}},
		"containing one root":      {asked: []string{base}, kept: []string{root}},
		"containing every root":    {asked: []string{"/"}, kept: []string{root, second}},
		"dot-dot above everything": {asked: []string{"/.."}, kept: []string{root, second}},
		"outside":                  {asked: []string{outside}, dropped: 1, droppedText: "lies outside the workspace roots"},
		"outside and inside":       {asked: []string{outside, sub}, kept: []string{sub}, dropped: 1},
		"relative":                 {asked: []string{"sub"}, dropped: 1, droppedText: "is not an absolute path"},
		"empty":                    {asked: []string{""}, dropped: 1, droppedText: "is not an absolute path"},
		"NUL":                      {asked: []string{sub + "\x00"}, dropped: 1, droppedText: "is not an absolute path"},
		"missing":                  {asked: []string{filepath.Join(root, "missing")}, dropped: 1, droppedText: "no such file or directory"},
		"a file":                   {asked: []string{filepath.Join(root, "file.txt")}, dropped: 1, droppedText: "is not a directory"},
		"link inside to outside":   {asked: []string{filepath.Join(root, "in", "escape")}, dropped: 1, droppedText: "lies outside"},
		"link inside to above":     {asked: []string{filepath.Join(root, "in", "up")}, kept: []string{root}},
		"link outside to inside":   {asked: []string{filepath.Join(base, "alias")}, kept: []string{sub}},
		"dot-dot out of the root":  {asked: []string{root + "/sub/../../outside"}, dropped: 1, droppedText: "lies outside"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kept, dropped := reg.NarrowRoots(tc.asked)
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %q, want %q", kept, tc.kept)
			}
			if len(dropped) != tc.dropped {
				t.Errorf("dropped %v, want %d", dropped, tc.dropped)
			}
			if tc.droppedText != "" && (len(dropped) == 0 || !strings.Contains(dropped[0].Error(), tc.droppedText)) {
				t.Errorf("dropped %v, want one saying %q", dropped, tc.droppedText)
			}
		})
	}
}

// TestWithRootsInProcess checks what an in-process tool finds in
// sdk.Roots under WithRoots, and that a call without WithRoots, or with
// roots that leave nothing, is told so.
func TestWithRootsInProcess(t *testing.T) {
	t.Parallel()
	root, outside := rootsTree(t)
	reg := host.NewToolRegistry(&host.Options{Roots: []string{root}})
	if err := reg.Register(sdk.NewTool(sdk.Info{Name: "roots", Description: "Lists the call's roots."}, func(ctx context.Context, _ struct{}) (string, error) {
		return strings.Join(sdk.Roots(ctx), ","), nil
	})); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "sub")
	tests := map[string]struct {
		ctx  context.Context
		want string
	}{
		"no client roots": {t.Context(), root},
		"narrower":        {host.WithRoots(t.Context(), []string{sub}), sub},
		"wider":           {host.WithRoots(t.Context(), []string{filepath.Dir(root)}), root},
		"outside": {host.WithRoots(t.Context(), []string{outside}),
			"Error executing roots: the client's roots (" + outside + ") lie outside the workspace roots (" + root + "): add a root inside them to the client"},
		"none": {host.WithRoots(t.Context(), nil),
			"Error executing roots: the client offers no usable roots, so no file of the workspace roots (" + root + ") may be touched: add a root inside them to the client"},
	}
	for name, tc := range tests {
		if got := reg.Execute(tc.ctx, "roots", json.RawMessage(`{}`)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

// TestWithRootsPlugins checks that real plugins keep to the narrowed
// roots, and that a tool that touches no roots runs when nothing is left.
func TestWithRootsPlugins(t *testing.T) {
	t.Parallel()
	root, outside := rootsTree(t)
	tc := &liveContext{}
	reg := load(t, pluginDir(t, "fs", "session"), &host.Options{Roots: []string{root}, ToolContext: tc})
	sub := filepath.Join(root, "sub")
	narrow := host.WithRoots(t.Context(), []string{sub})

	if got := reg.Execute(narrow, "read_file", json.RawMessage(`{"path":"a.txt"}`)); got != "in sub" {
		t.Errorf("read_file a.txt, relative to the client's root: %q", got)
	}
	for _, path := range []string{filepath.Join(root, "other", "b.txt"), "../other/b.txt"} {
		got := reg.Execute(narrow, "read_file", json.RawMessage(`{"path":"`+path+`"}`))
		if !strings.HasPrefix(got, "Error executing read_file: ") || !strings.Contains(got, "outside the workspace roots") {
			t.Errorf("read_file %s outside the client's root: %q", path, got)
		}
	}
	if got := call(t, reg, "read_file", `{"path":"other/b.txt"}`); got != "in other" {
		t.Errorf("read_file without client roots: %q", got)
	}

	away := host.WithRoots(t.Context(), []string{outside})
	want := "Error executing read_file: the client's roots (" + outside + ") lie outside the workspace roots (" + root + "): add a root inside them to the client"
	if got := reg.Execute(away, "read_file", json.RawMessage(`{"path":"sub/a.txt"}`)); got != want {
		t.Errorf("read_file with the client's roots outside: %q, want %q", got, want)
	}
	file := filepath.Join(t.TempDir(), "context.json")
	tc.set("prompt", "session", file)
	if got := reg.Execute(away, "save_session_context", json.RawMessage(`{"reason":"r"}`)); got != "Session context saved to "+file {
		t.Errorf("save_session_context with the client's roots outside: %q", got)
	}
}
