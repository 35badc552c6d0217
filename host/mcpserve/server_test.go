package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
	"github.com/agenthost/agenthost/sdk"
)

func TestMCPServer(t *testing.T) {
	dir := pluginDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := servetest.NewRegistry(t, dir, root)
	var wire plugintest.Buffer
	cs := servetest.ConnectInMemory(t, New(reg, nil).Connect, &wire)

	t.Run("initialize", func(t *testing.T) {
		info := cs.InitializeResult().ServerInfo
		if info.Name != "agenthost" || info.Version == "" {
			t.Errorf("server info %+v, want agenthost and a version", info)
		}
		if cs.InitializeResult().Capabilities.Tools == nil {
			t.Error("no tools capability")
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]host.ChatTool{}
		for _, s := range reg.EnabledSchemas() {
			want[s.Function.Name] = s
		}
		if got, wantNames := servetest.ToolNames(res.Tools), slices.Sorted(maps.Keys(want)); !slices.Equal(got, wantNames) {
			t.Fatalf("tools %v, want the enabled ones %v", got, wantNames)
		}
		if _, ok := want["danger"]; ok {
			t.Fatal("danger is opt-in and should be disabled")
		}
		for _, tl := range res.Tools {
			s := want[tl.Name]
			if tl.Description != s.Function.Description {
				t.Errorf("%s: description %q, want %q", tl.Name, tl.Description, s.Function.Description)
			}
			var got, exp any
			raw, _ := json.Marshal(tl.InputSchema)
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(s.Function.Parameters, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Errorf("%s: input schema\n%s\nwant\n%s", tl.Name, raw, s.Function.Parameters)
			}
		}
	})

	t.Run("annotations are explicit", func(t *testing.T) {
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		// Read the reply as it crossed the wire: a hint left out means
		// MCP's default, which is the unsafe one.
		anns := wireAnnotations(t, wire.String())
		for name, want := range map[string]map[string]bool{
			"read_file":  {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
			"write_file": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
			"echo":       {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
		} {
			if got := anns[name]; !maps.Equal(got, want) {
				t.Errorf("%s: annotations %v, want %v", name, got, want)
			}
		}
		for name, got := range anns {
			if len(got) != 4 {
				t.Errorf("%s: annotations %v, want all four hints", name, got)
			}
		}
	})

	calls := map[string]struct {
		name    string
		args    any
		want    string
		prefix  bool
		isError bool
	}{
		"read_file":         {name: "read_file", args: map[string]any{"path": "notes.txt", "limit": 1}, want: "alpha\n"},
		"no arguments":      {name: "list_dir", want: "notes.txt", prefix: true},
		"tool failure":      {name: "fail", args: map[string]any{"text": "nope"}, want: "Error executing fail: nope", isError: true},
		"unknown tool":      {name: "nope", want: "Error: tool not found: nope", isError: true},
		"disabled tool":     {name: "danger", args: map[string]any{}, want: "Error: tool not available: danger is disabled", isError: true},
		"bad arguments":     {name: "echo", args: map[string]any{"text": 1}, want: "Error executing echo: invalid arguments: ", prefix: true, isError: true},
		"arguments not map": {name: "echo", args: []int{1}, want: "Error executing echo: invalid arguments", prefix: true, isError: true},
	}
	for name, tc := range calls {
		t.Run("tools/call "+name, func(t *testing.T) {
			res := servetest.Call(t, cs, tc.name, tc.args)
			got := servetest.Text(t, res)
			if res.IsError != tc.isError {
				t.Errorf("isError %v, want %v (%q)", res.IsError, tc.isError, got)
			}
			if tc.prefix && !strings.HasPrefix(got, tc.want) || !tc.prefix && got != tc.want {
				t.Errorf("text %q, want %q", got, tc.want)
			}
		})
	}

	t.Run("no tool name is a protocol error", func(t *testing.T) {
		if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{}); err == nil {
			t.Errorf("got result %+v, want a protocol error", res)
		}
	})

	t.Run("enabled opt-in tool", func(t *testing.T) {
		cs := servetest.ConnectInMemory(t, New(servetest.NewRegistry(t, dir, root, "danger"), nil).Connect, nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(servetest.ToolNames(res.Tools), "danger") {
			t.Errorf("tools %v lack the enabled danger", servetest.ToolNames(res.Tools))
		}
		if got := servetest.Text(t, servetest.Call(t, cs, "danger", nil)); got != "done" {
			t.Errorf("danger: %q", got)
		}
	})
}

// wireAnnotations finds the tools/list replies among the logged messages
// and returns each tool's hints as they were on the wire.
func wireAnnotations(t *testing.T, log string) map[string]map[string]bool {
	t.Helper()
	anns := map[string]map[string]bool{}
	for line := range strings.Lines(log) {
		msg, ok := strings.CutPrefix(strings.TrimSpace(line), "read: ")
		if !ok || !strings.Contains(msg, `"tools":[`) {
			continue
		}
		var reply struct {
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					Annotations map[string]bool `json:"annotations"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(msg), &reply); err != nil {
			t.Fatalf("%v: %s", err, msg)
		}
		for _, tl := range reply.Result.Tools {
			anns[tl.Name] = tl.Annotations
		}
	}
	if len(anns) == 0 {
		t.Fatalf("no tools/list reply in\n%s", log)
	}
	return anns
}

// blocker is an in-process tool that waits for its context to end, and
// tells when it started and when its context was canceled.
type blocker struct {
	name              string
	started, canceled chan struct{}
}

func newBlocker(t *testing.T, reg *host.ToolRegistry, name string) *blocker {
	b := &blocker{name: name, started: make(chan struct{}), canceled: make(chan struct{})}
	tool := sdk.NewTool(sdk.Info{Name: name, Description: "Wait for cancellation."},
		func(ctx context.Context, _ struct{}) (string, error) {
			close(b.started)
			<-ctx.Done()
			close(b.canceled)
			return "", ctx.Err()
		})
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	return b
}

// cancelCall calls the blocker, cancels the call once it runs, and checks
// that the tool's context is canceled and the call returns.
func (b *blocker) cancelCall(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: b.name})
		errc <- err
	}()
	waitFor(t, b.started, "the tool to start")
	cancel()
	waitFor(t, b.canceled, "the tool's context to be canceled")
	select {
	case err := <-errc:
		if err == nil {
			t.Error("canceled call: no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the canceled call did not return")
	}
}

// TestMCPCancel checks that a client canceling a call cancels the context
// the tool runs with, in-process and across the plugin boundary.
func TestMCPCancel(t *testing.T) {
	dir := pluginDir(t)
	root := t.TempDir()
	reg := servetest.NewRegistry(t, dir, root)
	inMemory := newBlocker(t, reg, "block_mem")
	overHTTP := newBlocker(t, reg, "block_http")
	cs := servetest.ConnectInMemory(t, New(reg, nil).Connect, nil)

	t.Run("in-process tool", func(t *testing.T) { inMemory.cancelCall(t, cs) })

	t.Run("over HTTP", func(t *testing.T) {
		ctx, stop := context.WithCancel(t.Context())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- New(reg, nil).Serve(ctx, ln) }()
		hcs, err := connectHTTP(t, "http://"+ln.Addr().String()+"/mcp", "")
		if err != nil {
			t.Fatal(err)
		}
		overHTTP.cancelCall(t, hcs)
		if got := servetest.Text(t, servetest.Call(t, hcs, "echo", map[string]any{"text": "after"})); got != "after" {
			t.Errorf("echo after cancel: %q", got)
		}
		// Canceling the server's context shuts it down, with a session open.
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after cancel")
		}
	})

	t.Run("plugin tool", func(t *testing.T) {
		marker := filepath.Join(root, "started") // inside the root: the plugin's sandbox allows nothing else
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		begin := time.Now()
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"millis": 20000, "started": marker}})
			errc <- err
		}()
		poll.Eventually(t, 20*time.Second, "sleep starts", func() error {
			select {
			case err := <-errc:
				return poll.Stop(fmt.Errorf("the call ended before sleep started: %v", err))
			default:
			}
			_, err := os.Stat(marker)
			return err
		})
		cancel()
		select {
		case <-errc:
		case <-time.After(10 * time.Second):
			t.Fatal("the canceled call did not return")
		}
		if d := time.Since(begin); d > 15*time.Second {
			t.Errorf("the canceled call took %s", d)
		}
		// The session and the plugin go on.
		if got := servetest.Text(t, servetest.Call(t, cs, "echo", map[string]any{"text": "after"})); got != "after" {
			t.Errorf("echo after cancel: %q", got)
		}
	})
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects the SDK's client to the server at url, with the
// bearer token when it is not empty.
func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := &http.Client{}
	if token != "" {
		client.Transport = bearer{token}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: 0}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
