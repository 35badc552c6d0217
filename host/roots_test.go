package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// noRootsTool is an in-process tool that says it touches no roots.
type noRootsTool struct{ sdk.Tool }

func (noRootsTool) RootAccess() sdk.RootAccess { return sdk.RootsNone }

// TestWithRootsBindsOnlyFileTools checks that a caller's roots that leave
// none of the workspace roots refuse the tools that touch files, and only
// them: a plugin's, an in-process tool's and an MCP server's, each as it
// is declared or configured.
func TestWithRootsBindsOnlyFileTools(t *testing.T) {
	t.Parallel()
	root, outside := rootsTree(t)
	sub := filepath.Join(root, "sub")

	// A remote server, which reaches no file here.
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "v0"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(remote, &mcp.Tool{Name: "read", Description: "Say which path it was given."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Path string `json:"path"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Path}}}, nil, nil
	})
	front := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
	t.Cleanup(front.Close)

	servers := []host.MCPServer{{Name: "remote", URL: front.URL, Prefix: "remote"}}
	for name, change := range map[string]func(*host.MCPServer){
		"free":    func(*host.MCPServer) {},                                                                  // names no path
		"away":    func(s *host.MCPServer) { s.Grant = readGrant(outside) },                                  // a path outside
		"cwd":     func(s *host.MCPServer) { s.Dir = root },                                                  // runs in a root
		"granted": func(s *host.MCPServer) { s.Grant = readGrant(sub) },                                      // a path inside
		"above":   func(s *host.MCPServer) { s.Grant = readGrant(filepath.Dir(root)) },                       // a path that holds a root
		"args":    func(s *host.MCPServer) { s.Args = []string{"--serve", filepath.Join(root, "file.txt")} }, // its arguments name one
	} {
		s := hostileMCP(t, name)
		s.Prefix = name
		change(&s)
		servers = append(servers, s)
	}
	reg := load(t, pluginDir(t, "fs", "session"), &host.Options{Roots: []string{root}, MCPServers: servers, ToolContext: &liveContext{}})
	for _, r := range reg.Plugins() {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Path, r.Err)
		}
	}
	shout := sdk.NewTool(sdk.Info{Name: "shout", Description: "Upper-cases the text."}, func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return strings.ToUpper(in.Text), nil
	})
	plain := sdk.NewTool(sdk.Info{Name: "plain", Description: "Says nothing of the roots."}, func(context.Context, struct{}) (string, error) {
		return "ran", nil
	})
	if err := reg.Register(noRootsTool{shout}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(plain); err != nil {
		t.Fatal(err)
	}

	away := host.WithRoots(t.Context(), []string{outside})
	tests := []struct {
		tool, args string
		bound      bool
	}{
		{"read_file", `{"path":"file.txt"}`, true},
		{"save_session_context", `{"reason":"r"}`, false},
		{"shout", `{"text":"hi"}`, false},
		{"plain", `{}`, true},
		{"remote_echo", `{"text":"hi"}`, false},
		{"free_echo", `{"text":"hi"}`, false},
		{"free_read", `{"path":"file.txt"}`, true}, // it takes a path
		{"remote_read", `{"path":"file.txt"}`, false},
		{"away_echo", `{"text":"hi"}`, false},
		{"cwd_echo", `{"text":"hi"}`, true},
		{"granted_echo", `{"text":"hi"}`, true},
		{"above_echo", `{"text":"hi"}`, true},
		{"args_echo", `{"text":"hi"}`, true},
	}
	refused := "Error executing %s: the client's roots (" + outside + ") lie outside the workspace roots (" + root + "): add a root inside them to the client"
	for _, tc := range tests {
		if got := reg.TouchesRoots(tc.tool); got != tc.bound {
			t.Errorf("TouchesRoots(%s) = %v, want %v", tc.tool, got, tc.bound)
		}
		got := reg.Execute(away, tc.tool, json.RawMessage(tc.args))
		if isRefused := got == fmt.Sprintf(refused, tc.tool); isRefused != tc.bound {
			t.Errorf("%s with the caller's roots outside: %q (refused: %v, want %v)", tc.tool, got, isRefused, tc.bound)
		}
		if !tc.bound && strings.HasPrefix(got, "Error executing") && tc.tool != "save_session_context" {
			t.Errorf("%s: %q", tc.tool, got)
		}
	}
	if reg.TouchesRoots("nope") {
		t.Error("an unknown tool touches the roots")
	}
}
