package mcpserve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/servetest"
	"github.com/agenthost/agenthost/sdk"
)

// slowWrite is an in-process tool that may change something (not
// read-only): each call waits until the test lets it go, and answers
// "written".
type slowWrite struct {
	started chan struct{}
	gate    chan struct{}
}

func newSlowWrite(t *testing.T, reg *host.ToolRegistry) *slowWrite {
	w := &slowWrite{started: make(chan struct{}, 8), gate: make(chan struct{})}
	tool := sdk.NewTool(sdk.Info{Name: "slow_write", Description: "Write, slowly."},
		func(ctx context.Context, _ struct{}) (string, error) {
			w.started <- struct{}{}
			select {
			case <-w.gate:
				return "written", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		})
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestServerShutdown checks Shutdown over Connect's sessions: a call of
// a tool that may change something is let finish and answered as it
// ended, a read-only one is canceled at once, the sessions are closed,
// and the server takes no session after.
func TestServerShutdown(t *testing.T) {
	reg := host.NewToolRegistry(nil)
	write := newSlowWrite(t, reg)
	wait := newWaitTool(t, reg)
	srv := New(reg, nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	callAsync := func(name string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			ch <- answer{res, err}
		}()
		return ch
	}
	written, waited := callAsync("slow_write"), callAsync("wait")
	waitFor(t, write.started, "slow_write to start")
	wait.waitStarted(t, 1)

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	select {
	case <-wait.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the read-only call was not canceled as the shutdown began")
	}
	if _, err := srv.Connect(t.Context(), &mcp.InMemoryTransport{}, nil); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Connect while shutting down: %v, want ErrServerClosed", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a write in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(write.gate)
	select {
	case a := <-written:
		if a.err != nil || a.res.IsError || servetest.Text(t, a.res) != "written" {
			t.Errorf("the write in flight: %+v, %v; want it answered as it ended", a.res, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write in flight was not answered")
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	<-waited
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	waitFor(t, done, "the session to close")
}

// TestServerShutdownDeadline checks that a write in flight is canceled
// when Shutdown's context ends first, that the session is closed all the
// same, and that Shutdown says so.
func TestServerShutdownDeadline(t *testing.T) {
	reg := host.NewToolRegistry(nil)
	write := newSlowWrite(t, reg)
	srv := New(reg, nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{}})
		errc <- err
	}()
	waitFor(t, write.started, "slow_write to start")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown past its deadline: %v", err)
	}
	select {
	case <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the write in flight was not canceled")
	}
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	waitFor(t, done, "the session to close")
}

// TestServerRun checks that Run and ServeStdio refuse a server that has
// shut down, and that Run returns nil once its context is canceled.
func TestServerRun(t *testing.T) {
	srv := New(host.NewToolRegistry(nil), nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, serverT) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if err := srv.Run(t.Context(), &mcp.InMemoryTransport{}); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Run once shut down: %v", err)
	}
	if err := srv.ServeStdio(t.Context(), strings.NewReader(""), &strings.Builder{}); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ServeStdio once shut down: %v", err)
	}
}

// TestHandler serves Handler from an http.Server of the test's: the
// token, the Origin check with the origins of the address reached, any
// path, and Shutdown.
func TestHandler(t *testing.T) {
	reg := host.NewToolRegistry(nil)
	srv := New(reg, &Options{Token: "s3cret", AllowOrigins: []string{"HTTPS://App.Example:443"}})
	mux := http.NewServeMux()
	mux.Handle("/tools/mcp", srv.Handler())
	ts := httptest.NewServer(mux)
	defer ts.Close()
	u := ts.URL + "/tools/mcp"
	auth := []string{"Authorization", "Bearer s3cret"}
	port := func() string { p, _ := url.Parse(ts.URL); return p.Port() }()

	if r := servetest.Send(t, http.MethodPost, u, initializeBody); r.Status != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s", r.Status, r.Body)
	}
	for origin, ok := range map[string]bool{
		"":                                true,
		"http://127.0.0.1:" + port:        true,
		"http://localhost:" + port:        true,
		"https://app.example":             true,
		"http://127.0.0.1:1":              false,
		"http://attacker.example:" + port: false,
	} {
		kv := auth
		if origin != "" {
			kv = append([]string{"Origin", origin}, auth...)
		}
		r := servetest.Send(t, http.MethodPost, u, initializeBody, kv...)
		if ok && (r.Status != http.StatusOK || r.Header.Get(sessionIDHeader) == "") {
			t.Errorf("Origin %q: %d %s; want 200 and a session", origin, r.Status, r.Body)
		}
		if !ok {
			wantReply(t, "Origin "+origin, r, http.StatusForbidden, "text/plain; charset=utf-8", forbiddenOrigin)
		}
	}

	cs, err := connectHTTP(t, u, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	r := servetest.Send(t, http.MethodPost, u, initializeBody, auth...)
	wantReply(t, "initialize once shut down", r, http.StatusServiceUnavailable, "application/json",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"server is shutting down; retry later"}}`+"\n")
}

// TestClientRootsOverConnect checks that a client connected over a
// transport other than HTTP (in memory) is asked for its roots, which
// narrow its calls, with the HTTP transport's middleware in place.
func TestClientRootsOverConnect(t *testing.T) {
	root := t.TempDir()
	mine, theirs := filepath.Join(root, "mine"), filepath.Join(root, "theirs")
	for _, dir := range []string{mine, theirs} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("in "+filepath.Base(dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := servetest.NewRegistry(t, pluginDir(t), root)
	srv := New(reg, nil)
	serverT, clientT := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(t.Context(), serverT, nil); err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "roots-test", Version: "v0"}, nil)
	client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: mine}).String()})
	cs, err := client.Connect(t.Context(), clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res := servetest.Call(t, cs, "read_file", map[string]any{"path": filepath.Join(mine, "f.txt")}); res.IsError || servetest.Text(t, res) != "in mine" {
		t.Errorf("read_file in the client's root: %q", servetest.Text(t, res))
	}
	if res := servetest.Call(t, cs, "read_file", map[string]any{"path": filepath.Join(theirs, "f.txt")}); !res.IsError {
		t.Errorf("read_file outside the client's root: %q", servetest.Text(t, res))
	}
}
