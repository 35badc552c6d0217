package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/internal/servetest"
)

// rootsProtocol is the protocol version the roots tests speak: the last
// one in which a server asks its client for roots with roots/list.
const rootsProtocol = "2025-11-25"

// rootsAgenthost returns the built agenthost and a plugins directory with
// the fs, session and bash plugins.
func rootsAgenthost(t *testing.T) (exe, plugins string) {
	t.Helper()
	plugintest.Binaries(t, "./cmd/agenthost", "./plugins/fs", "./plugins/session", "./plugins/bash")
	plugins = t.TempDir()
	for name, pkg := range map[string]string{"fs": "./plugins/fs", "session": "./plugins/session", "bash": "./plugins/bash"} {
		plugintest.Install(t, plugins, host.PluginPrefix+name, pkg)
	}
	return plugintest.Install(t, t.TempDir(), "agenthost", "./cmd/agenthost"), plugins
}

// rootsWorkspace is a --root with the directories mine/ and theirs/, each
// holding a file, and a directory beside it, outside it, holding one too.
type rootsWorkspace struct {
	root, mine, theirs, outside string
}

func newRootsWorkspace(t *testing.T) rootsWorkspace {
	t.Helper()
	base := t.TempDir()
	w := rootsWorkspace{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	w.mine, w.theirs = filepath.Join(w.root, "mine"), filepath.Join(w.root, "theirs")
	for dir, file := range map[string]string{w.mine: "mine.txt", w.theirs: "theirs.txt", w.outside: "outside.txt"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte("in "+filepath.Base(dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// fileURI is the file:// URI of a path, percent-escaped.
func fileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// rootsClient is a client that offers roots (all of them, or none, as
// roots/list answers), or, with noCapability, declares no roots.
func rootsClient(noCapability bool, roots ...string) *mcp.Client {
	opts := &mcp.ClientOptions{}
	if noCapability {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "roots-test", Version: "v0"}, opts)
	for _, r := range roots {
		c.AddRoots(&mcp.Root{URI: fileURI(r)})
	}
	return c
}

// connectStdio runs agenthost mcp over stdio with --root root for the
// client. The plugins' temporary directory is one of its own, so that no
// grant of $TMPDIR reaches the test's directories.
func connectStdio(t *testing.T, exe, plugins, root string, client *mcp.Client) (*mcp.ClientSession, *plugintest.Buffer) {
	t.Helper()
	cmd := exec.Command(exe, "mcp", "--plugins", plugins, "--root", root, "--enable", "run_bash")
	cmd.Env = agenthostEnv("TMPDIR=" + t.TempDir())
	stderr := &plugintest.Buffer{}
	cmd.Stderr = stderr
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: rootsProtocol})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// readable reports whether read_file reads path, and fails the test for
// an answer that is neither its content nor a refusal for the roots.
func readable(t *testing.T, cs *mcp.ClientSession, path string) bool {
	t.Helper()
	res := servetest.Call(t, cs, "read_file", map[string]any{"path": path})
	got := servetest.Text(t, res)
	switch {
	case !res.IsError && strings.HasPrefix(got, "in "):
		return true
	case res.IsError && (strings.Contains(got, "outside the workspace roots") || strings.Contains(got, "the client offers no usable roots")):
		return false
	}
	t.Fatalf("read_file %s: %q", path, got)
	return false
}

// wantReadable checks which files read_file reads.
func wantReadable(t *testing.T, what string, cs *mcp.ClientSession, paths map[string]bool) {
	t.Helper()
	for path, want := range paths {
		if got := readable(t, cs, path); got != want {
			t.Errorf("%s: read_file %s: readable %v, want %v", what, path, got, want)
		}
	}
}

func TestMCPClientRootsStdio(t *testing.T) {
	t.Parallel()
	exe, plugins := rootsAgenthost(t)
	w := newRootsWorkspace(t)
	mine, theirs, outside := filepath.Join(w.mine, "mine.txt"), filepath.Join(w.theirs, "theirs.txt"), filepath.Join(w.outside, "outside.txt")
	client := rootsClient(false, w.mine)
	cs, stderr := connectStdio(t, exe, plugins, w.root, client)

	wantReadable(t, "client root mine/", cs, map[string]bool{mine: true, "mine.txt": true, theirs: false, "../theirs/theirs.txt": false, outside: false})
	if res := servetest.Call(t, cs, "list_dir", map[string]any{"path": w.root}); !res.IsError {
		t.Errorf("list_dir of the --root outside the client's root: %q", servetest.Text(t, res))
	}
	if res := servetest.Call(t, cs, "list_dir", map[string]any{"path": w.mine}); res.IsError || !strings.Contains(servetest.Text(t, res), "mine.txt") {
		t.Errorf("list_dir of the client's root: %q", servetest.Text(t, res))
	}
	if res := servetest.Call(t, cs, "write_file", map[string]any{"path": filepath.Join(w.theirs, "new.txt"), "content": "x"}); !res.IsError {
		t.Errorf("write_file outside the client's root: %q", servetest.Text(t, res))
	}
	if _, err := os.Stat(filepath.Join(w.theirs, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("write_file outside the client's root wrote the file: %v", err)
	}

	// run_bash's command runs in a Landlock sandbox of the client's roots:
	// the kernel refuses what the shell tries outside them.
	if sandbox.Probe().ABI > 0 {
		res := servetest.Call(t, cs, "run_bash", map[string]any{"command": "echo x > inside.txt; echo x > ../theirs/bash.txt"})
		if _, err := os.Stat(filepath.Join(w.theirs, "bash.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run_bash wrote outside the client's root: %v (%s)", err, servetest.Text(t, res))
		}
		if _, err := os.Stat(filepath.Join(w.mine, "inside.txt")); err != nil {
			t.Errorf("run_bash did not write inside the client's root: %v (%s)", err, servetest.Text(t, res))
		}
	}

	// A change of the client's roots holds from the next call.
	client.RemoveRoots(fileURI(w.mine))
	client.AddRoots(&mcp.Root{URI: fileURI(w.theirs)})
	wantReadable(t, "client root theirs/", cs, map[string]bool{mine: false, theirs: true, "theirs.txt": true, outside: false})

	// Wider than --root: the --root itself, no more.
	client.RemoveRoots(fileURI(w.theirs))
	client.AddRoots(&mcp.Root{URI: fileURI(filepath.Dir(w.root))})
	wantReadable(t, "client root above --root", cs, map[string]bool{mine: true, theirs: true, outside: false})

	// Outside --root: nothing is left, and the error says so.
	client.RemoveRoots(fileURI(filepath.Dir(w.root)))
	client.AddRoots(&mcp.Root{URI: fileURI(w.outside)})
	res := servetest.Call(t, cs, "read_file", map[string]any{"path": outside})
	want := "Error executing read_file: the client's roots (" + w.outside + ") lie outside the workspace roots (" + w.root + "): add a root inside them to the client"
	if got := servetest.Text(t, res); !res.IsError || got != want {
		t.Errorf("client root outside --root: %q, want %q", got, want)
	}
	// A tool that touches no file still runs (and fails for want of an
	// agent's state, which agenthost mcp has not).
	if got := servetest.Text(t, servetest.Call(t, cs, "save_session_context", map[string]any{"reason": "r"})); strings.Contains(got, "roots") {
		t.Errorf("save_session_context with no roots left: %q", got)
	}
	if !strings.Contains(stderr.String(), "refusing a root of the MCP client") {
		t.Errorf("no warning of the refused root on stderr:\n%s", stderr.String())
	}
}

func TestMCPClientWithoutRoots(t *testing.T) {
	t.Parallel()
	exe, plugins := rootsAgenthost(t)
	w := newRootsWorkspace(t)
	for name, client := range map[string]*mcp.Client{
		"no roots capability": rootsClient(true, w.mine),
		"no roots listed":     rootsClient(false),
	} {
		cs, _ := connectStdio(t, exe, plugins, w.root, client)
		wantReadable(t, name, cs, map[string]bool{filepath.Join(w.mine, "mine.txt"): true, filepath.Join(w.theirs, "theirs.txt"): true, filepath.Join(w.outside, "outside.txt"): false})
	}
}

// hostileRoots answers roots/list as a hostile client may: with roots,
// an error, or never.
type hostileRoots struct {
	mode  atomic.Value // "roots", "error" or "silent"
	roots atomic.Value // []*mcp.Root
}

func (h *hostileRoots) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		switch h.mode.Load() {
		case "error":
			return nil, errors.New("no roots for you")
		case "silent":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &mcp.ListRootsResult{Roots: h.roots.Load().([]*mcp.Root)}, nil
	}
}

func TestMCPHostileClientRoots(t *testing.T) {
	t.Parallel()
	exe, plugins := rootsAgenthost(t)
	w := newRootsWorkspace(t)
	escape := filepath.Join(w.mine, "escape")
	if err := os.Symlink(w.outside, escape); err != nil {
		t.Fatal(err)
	}
	h := &hostileRoots{}
	h.mode.Store("roots")
	h.roots.Store([]*mcp.Root{})
	client := rootsClient(false)
	client.AddReceivingMiddleware(h.middleware)
	cs, _ := connectStdio(t, exe, plugins, w.root, client)
	mine, theirs, outside := filepath.Join(w.mine, "mine.txt"), filepath.Join(w.theirs, "theirs.txt"), filepath.Join(w.outside, "outside.txt")
	inEscape := filepath.Join(escape, "outside.txt")

	steps := []struct {
		name  string
		mode  string
		roots []string
		want  map[string]bool
	}{
		{"garbage", "roots", []string{"https://example.com/", "file:mine", "file://elsewhere" + w.root, "/" + w.mine, fileURI(escape), "file://" + w.mine + "%00"},
			map[string]bool{mine: false, theirs: false, outside: false, inEscape: false}},
		{"file:///..", "roots", []string{"file:///.."}, map[string]bool{mine: true, theirs: true, outside: false, inEscape: false}},
		{"percent-escaped", "roots", []string{"file://" + strings.TrimSuffix(w.mine, "mine") + "%6Dine"}, map[string]bool{mine: true, theirs: false, outside: false}},
		{"an error", "error", nil, map[string]bool{mine: true, theirs: true, outside: false, inEscape: false}},
		{"no answer", "silent", nil, map[string]bool{mine: true, theirs: true, outside: false, inEscape: false}},
	}
	for i, step := range steps {
		var roots []*mcp.Root
		for _, uri := range step.roots {
			roots = append(roots, &mcp.Root{URI: uri})
		}
		h.roots.Store(roots)
		h.mode.Store(step.mode)
		if i > 0 {
			// Any change makes the client send roots/list_changed.
			client.AddRoots(&mcp.Root{URI: fileURI(step.name)})
		}
		wantReadable(t, step.name, cs, step.want)
	}
}

// TestMCPClientRootsHTTP runs two sessions at once over streamable HTTP,
// each with roots of its own, and one with --stateless, whose client is
// never asked.
func TestMCPClientRootsHTTP(t *testing.T) {
	t.Parallel()
	exe, plugins := rootsAgenthost(t)
	w := newRootsWorkspace(t)
	mine, theirs := filepath.Join(w.mine, "mine.txt"), filepath.Join(w.theirs, "theirs.txt")
	connect := func(u string, client *mcp.Client) *mcp.ClientSession {
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{}, MaxRetries: 0}, &mcp.ClientSessionOptions{ProtocolVersion: rootsProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	u, _, stderr := startHTTP(t, exe, plugins, "--root", w.root)
	a := connect(u, rootsClient(false, w.mine))
	b := connect(u, rootsClient(false, w.theirs))
	for range 2 {
		wantReadable(t, "session a", a, map[string]bool{mine: true, theirs: false})
		wantReadable(t, "session b", b, map[string]bool{mine: false, theirs: true})
	}
	if t.Failed() {
		t.Log(stderr.String())
	}

	u, _, stderr = startHTTP(t, exe, plugins, "--root", w.root, "--stateless")
	c := connect(u, rootsClient(false, w.mine))
	wantReadable(t, "stateless", c, map[string]bool{mine: true, theirs: true})
	if strings.Contains(stderr.String(), "roots") {
		t.Errorf("a stateless session's client was asked for its roots:\n%s", stderr.String())
	}
}
