package mcpserve

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/servetest"
	"github.com/agenthost/agenthost/sdk"
)

// noRootsTool is an in-process tool that says it touches no roots.
type noRootsTool struct{ sdk.Tool }

func (noRootsTool) RootAccess() sdk.RootAccess { return sdk.RootsNone }

// rootsBench is a registry of the fs and session plugins over a root
// with mine/ and theirs/ in it, a directory outside it, and two
// in-process tools: shout, which says it touches no roots, and plain,
// which says nothing.
type rootsBench struct {
	reg                         *host.ToolRegistry
	root, mine, theirs, outside string
}

func newRootsBench(t *testing.T) *rootsBench {
	t.Helper()
	base := t.TempDir()
	b := &rootsBench{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	b.mine, b.theirs = filepath.Join(b.root, "mine"), filepath.Join(b.root, "theirs")
	for _, dir := range []string{b.mine, b.theirs, b.outside} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("in "+filepath.Base(dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	plugintest.Binaries(t, "./plugins/fs", "./plugins/session")
	plugintest.Install(t, dir, host.PluginPrefix+"fs", "./plugins/fs")
	plugintest.Install(t, dir, host.PluginPrefix+"session", "./plugins/session")
	b.reg = servetest.NewRegistry(t, dir, b.root)
	shout := sdk.NewTool(sdk.Info{Name: "shout", Description: "Upper-case the text."}, func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return strings.ToUpper(in.Text), nil
	})
	plain := sdk.NewTool(sdk.Info{Name: "plain", Description: "Say nothing of the roots."}, func(context.Context, struct{}) (string, error) {
		return "ran", nil
	})
	for _, tool := range []host.ExecutableTool{noRootsTool{shout}, plain} {
		if err := b.reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// refused is the error of a call of tool with the client's roots outside.
func (b *rootsBench) refused(tool string) string {
	return "Error executing " + tool + ": the client's roots (" + b.outside + ") lie outside the workspace roots (" + b.root + "): add a root inside them to the client"
}

// rootsCounter counts the requests for a client's roots it sees:
// roots/list requests, and results that ask for them (input_required),
// on the wire.
type rootsCounter struct {
	lists atomic.Int32
	wire  plugintest.Buffer
}

func (c *rootsCounter) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "roots/list" {
			c.lists.Add(1)
		}
		return next(ctx, method, req)
	}
}

// asked is how many times the client was asked for its roots.
func (c *rootsCounter) asked() int {
	return int(c.lists.Load()) + strings.Count(c.wire.String(), `"resultType":"input_required"`)
}

// connect connects a client of version that offers roots, in memory.
func (b *rootsBench) connect(t *testing.T, version string, opts *mcp.ClientOptions, roots ...string) (*mcp.ClientSession, *rootsCounter) {
	t.Helper()
	srv := New(b.reg, nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "roots-test", Version: "v0"}, opts)
	for _, r := range roots {
		client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: r}).String()})
	}
	counter := &rootsCounter{}
	client.AddReceivingMiddleware(counter.receiving)
	cs, err := client.Connect(t.Context(), &mcp.LoggingTransport{Transport: clientT, Writer: &counter.wire}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, counter
}

// TestRootsBindOnlyFileTools: a client whose roots lie outside the
// workspace roots is refused the tools that touch files, and only them,
// in every protocol version; a call of a tool that touches none does not
// even ask for the roots.
func TestRootsBindOnlyFileTools(t *testing.T) {
	b := newRootsBench(t)
	for _, version := range []string{"2025-11-25", firstSessionless} {
		t.Run(version, func(t *testing.T) {
			// The client's multi round-trip middleware answers a result
			// that asks for the roots by sending the call again.
			cs, counter := b.connect(t, version, nil, b.outside)
			asked := counter.asked
			if got := servetest.Text(t, servetest.Call(t, cs, "shout", map[string]any{"text": "hi"})); got != "HI" {
				t.Errorf("shout: %q", got)
			}
			if n := asked(); n != 0 {
				t.Errorf("the roots were asked %d times before a tool that touches files was called", n)
			}
			for tool, args := range map[string]map[string]any{
				"read_file": {"path": filepath.Join(b.mine, "f.txt")},
				"list_dir":  {"path": b.root},
				"plain":     {},
			} {
				res := servetest.Call(t, cs, tool, args)
				if got := servetest.Text(t, res); !res.IsError || got != b.refused(tool) {
					t.Errorf("%s: %q, want %q", tool, got, b.refused(tool))
				}
			}
			if n := asked(); n == 0 {
				t.Error("the client's roots were never asked")
			}
			if got := servetest.Text(t, servetest.Call(t, cs, "save_session_context", map[string]any{"reason": "r"})); strings.Contains(got, "roots") {
				t.Errorf("save_session_context: %q", got)
			}
			if got := servetest.Text(t, servetest.Call(t, cs, "shout", map[string]any{"text": "again"})); got != "AGAIN" {
				t.Errorf("shout after the roots were asked: %q", got)
			}
		})
	}
}

// TestRootsInTheResult drives the exchange of protocol 2026-07-28 by
// hand: a call of a tool that touches files is answered with a request
// for the roots, and runs once it is sent again with them; what the
// client answers narrows the roots and never widens them.
func TestRootsInTheResult(t *testing.T) {
	b := newRootsBench(t)
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	cs, _ := b.connect(t, firstSessionless, manual)
	call := func(tool string, args map[string]any, roots ...string) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: tool, Arguments: args}
		if roots != nil {
			answer := &mcp.ListRootsResult{Roots: []*mcp.Root{}}
			for _, r := range roots {
				answer.Roots = append(answer.Roots, &mcp.Root{URI: r})
			}
			p.InputResponses = mcp.InputResponseMap{rootsRequest: answer}
		}
		res, err := cs.CallTool(t.Context(), p)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	fileURI := func(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }
	mine, theirs := filepath.Join(b.mine, "f.txt"), filepath.Join(b.theirs, "f.txt")

	res := call("read_file", map[string]any{"path": mine})
	if !res.NeedsInput() || len(res.InputRequests) != 1 || len(res.Content) != 0 {
		t.Fatalf("the first call of read_file: %+v, want a result that asks for the roots alone", res)
	}
	if _, ok := res.InputRequests[rootsRequest].(*mcp.ListRootsParams); !ok {
		t.Fatalf("the input requests: %#v, want roots/list", res.InputRequests)
	}
	if res := call("shout", map[string]any{"text": "hi"}); res.NeedsInput() || servetest.Text(t, res) != "HI" {
		t.Errorf("shout: %+v, want it run at once", res)
	}

	steps := []struct {
		name  string
		roots []string
		read  map[string]bool // path → readable
		error string          // what a refused read says
	}{
		{"mine/", []string{fileURI(b.mine)}, map[string]bool{mine: true, theirs: false}, "outside the workspace roots"},
		{"above the root", []string{fileURI(filepath.Dir(b.root))}, map[string]bool{mine: true, theirs: true, filepath.Join(b.outside, "f.txt"): false}, "outside the workspace roots"},
		{"outside", []string{fileURI(b.outside)}, map[string]bool{mine: false}, b.refused("read_file")},
		{"not file URIs", []string{"https://example.com/", "file://elsewhere" + b.mine, "file:mine"}, map[string]bool{mine: false}, "the client offers no usable roots"},
		{"none listed", []string{}, map[string]bool{mine: true, theirs: true}, ""},
		{"mine/ past the first 64", append(slices.Repeat([]string{"https://example.com/"}, maxClientRoots), fileURI(b.mine)), map[string]bool{mine: false}, "the client offers no usable roots"},
	}
	for _, step := range steps {
		for path, want := range step.read {
			res := call("read_file", map[string]any{"path": path}, step.roots...)
			got := servetest.Text(t, res)
			switch {
			case res.NeedsInput():
				t.Errorf("%s: read_file %s sent with the roots asked for them again", step.name, path)
			case want && (res.IsError || !strings.HasPrefix(got, "in ")):
				t.Errorf("%s: read_file %s: %q, want it read", step.name, path, got)
			case !want && (!res.IsError || !strings.Contains(got, step.error)):
				t.Errorf("%s: read_file %s: %q, want an error saying %q", step.name, path, got, step.error)
			}
		}
	}

	// A client that does not offer roots is not asked.
	noRoots := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	cs, _ = b.connect(t, firstSessionless, noRoots)
	if res := call("read_file", map[string]any{"path": theirs}); res.NeedsInput() || res.IsError {
		t.Errorf("read_file from a client without roots: %+v", res)
	}
}

// TestRootsInTheResultOverHTTP: over streamable HTTP, where a request of
// 2026-07-28 has no session, the SDK's client answers the request for
// its roots and they narrow the call, with Stateless too.
func TestRootsInTheResultOverHTTP(t *testing.T) {
	b := newRootsBench(t)
	for _, stateless := range []bool{false, true} {
		front := httptest.NewServer(New(b.reg, &Options{Stateless: stateless}).Handler())
		t.Cleanup(front.Close)
		client := mcp.NewClient(&mcp.Implementation{Name: "roots-test", Version: "v0"}, nil)
		client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: b.mine}).String()})
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: front.URL, MaxRetries: 0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v < firstSessionless {
			t.Fatalf("negotiated %s", v)
		}
		if res := servetest.Call(t, cs, "read_file", map[string]any{"path": "f.txt"}); res.IsError || servetest.Text(t, res) != "in mine" {
			t.Errorf("stateless %v: read_file f.txt, in the client's root: %q", stateless, servetest.Text(t, res))
		}
		if res := servetest.Call(t, cs, "read_file", map[string]any{"path": filepath.Join(b.theirs, "f.txt")}); !res.IsError {
			t.Errorf("stateless %v: read_file outside the client's root: %q", stateless, servetest.Text(t, res))
		}
	}
}
