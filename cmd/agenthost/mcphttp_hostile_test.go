package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
)

// bashPlugins is a plugins directory holding the fs and bash plugins.
func bashPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"fs", "./plugins/fs")
	plugintest.Install(t, dir, host.PluginPrefix+"bash", "./plugins/bash")
	return dir
}

// batchSession opens a session of protocol 2025-03-26, which takes
// batches, with a raw client, and returns the headers its requests need.
func batchSession(t *testing.T, u string) []string {
	t.Helper()
	r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	id := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	in := []string{"Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26"}
	if r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in...); r.Status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	return in
}

func callBody(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// One request cannot make thousands of calls: a batch of more than 32
// messages is refused whole, in words; one of 32 is answered. One session
// has at most 32 calls in flight: the 33rd is answered at once, saying
// so.
func TestMCPHTTPBoundsCallsPerRequestAndSession(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _, _ := startHTTP(t, plugintest.Binary(t, "./cmd/agenthost"), bashPlugins(t), "--root", root, "--enable", "run_bash")
	in := batchSession(t, u)

	batch := func(n int) string {
		var calls []string
		for i := range n {
			calls = append(calls, callBody(i+1, "read_file", `{"path":"f.txt"}`))
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	r := servetest.Send(t, http.MethodPost, u, batch(2500), in...)
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "Invalid Request: a batch of 2500 messages; at most 32 in one request") || len(r.Body) > 1000 {
		t.Errorf("a batch of 2500 calls: %d, %d bytes: %.300s", r.Status, len(r.Body), r.Body)
	}
	if r := servetest.Send(t, http.MethodPost, u, batch(32), in...); r.Status != http.StatusOK || strings.Count(r.Body, `"text":"x"`) != 32 {
		t.Errorf("a batch of 32 calls: %d: %.300s", r.Status, r.Body)
	}

	// 40 calls that each take a second, at once in one session.
	var wg sync.WaitGroup
	replies := make([]servetest.Reply, 40)
	for i := range replies {
		wg.Go(func() {
			replies[i], _ = servetest.Do(t.Context(), http.MethodPost, u, callBody(100+i, "run_bash", `{"command":"sleep 1"}`), in...)
		})
	}
	wg.Wait()
	refused := 0
	for _, r := range replies {
		if strings.Contains(r.Body, "too many calls in flight in this session: at most 32; wait for one to answer") {
			refused++
		}
	}
	if refused != 8 {
		t.Errorf("40 calls at once in one session: %d refused, want 8", refused)
	}
}

// Request bodies that trickle in are cut after 10 s, and the connections
// the server takes at once are bounded: 300 of them hold no more than
// 4 x --max-sessions + 16 descriptors, and a real client is served once
// they are cut.
func TestMCPHTTPSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	u, cmd, _ := startHTTP(t, plugintest.Binary(t, "./cmd/agenthost"), bashPlugins(t), "--max-sessions", "10", "--root", t.TempDir())
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	began := time.Now()
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", addr)
	}
	fds := func() int {
		entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
		return len(entries)
	}
	time.Sleep(time.Second)
	if n := fds(); n > 4*10+16+32 {
		t.Errorf("300 slow bodies: agenthost holds %d descriptors, want at most about %d", n, 4*10+16)
	}
	// The ones it took are answered 408 in ~10 s, and closed.
	answered := make(chan string, 1)
	go func() {
		conns[0].SetReadDeadline(time.Now().Add(20 * time.Second))
		data, _ := io.ReadAll(conns[0])
		answered <- string(data)
	}()
	select {
	case got := <-answered:
		if !strings.Contains(got, "408") || !strings.Contains(got, "the request body did not arrive within 10s") {
			t.Errorf("a slow body was answered %.300q", got)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("a slow body was never cut")
	}
	for _, c := range conns {
		c.Close()
	}
	t.Logf("cut after %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	defer func() { t.Logf("served after %v", time.Since(began).Round(time.Millisecond)) }()
	if r, err := servetest.Do(ctx, http.MethodPost, u, initializeBody); err != nil || r.Status != http.StatusOK {
		t.Errorf("a real client after the slow bodies: %v %d %s", err, r.Status, r.Body)
	}
}

// SIGTERM while writes are in flight: every write answered a success has
// landed, every one answered an error has not, and no temporary file is
// left: the writes in flight finish before the server goes.
func TestMCPHTTPShutdownAnswersWritesAsTheyEnded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	u, cmd, stderr := startHTTP(t, plugintest.Binary(t, "./cmd/agenthost"), bashPlugins(t), "--root", root, "--enable", "run_bash")
	in := batchSession(t, u)
	content := strings.Repeat("data ", 400_000) // 2 MB a write
	var wg sync.WaitGroup
	replies := make([]servetest.Reply, 24)
	errs := make([]error, len(replies))
	for i := range replies {
		wg.Go(func() {
			var body string
			if i%2 == 0 {
				body = callBody(i+1, "write_file", fmt.Sprintf(`{"path":"w%d.txt","content":%q}`, i, content))
			} else {
				body = callBody(i+1, "run_bash", fmt.Sprintf(`{"command":"sleep 0.5; echo done > b%d.txt"}`, i))
			}
			replies[i], errs[i] = servetest.Do(t.Context(), http.MethodPost, u, body, in...)
		})
		if i == len(replies)/2 {
			// SIGTERM once a write is under way.
			poll.Eventually(t, 10*time.Second, "a write begins", func() error {
				if entries, _ := os.ReadDir(root); len(entries) == 0 {
					return errors.New("nothing in the root yet")
				}
				return nil
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Errorf("agenthost mcp --http after SIGTERM: %v\n%s", err, stderr.String())
	}
	landed, refused := 0, 0
	for i, r := range replies {
		name := fmt.Sprintf("w%d.txt", i)
		if i%2 == 1 {
			name = fmt.Sprintf("b%d.txt", i)
		}
		_, statErr := os.Stat(filepath.Join(root, name))
		ok := errs[i] == nil && r.Status == http.StatusOK && strings.Contains(r.Body, `"result"`) && !strings.Contains(r.Body, `"isError":true`)
		switch {
		case ok && statErr != nil:
			t.Errorf("call %d answered success, and %s is not there: %.300s", i, name, r.Body)
		case !ok && statErr == nil:
			t.Errorf("call %d answered failure (%v), and %s was written: %.300s", i, errs[i], name, r.Body)
		case ok:
			landed++
		default:
			refused++
			if errs[i] == nil && !strings.Contains(r.Body, `"code":-32000,"message":"the server is shutting down; retry later"`) {
				t.Errorf("call %d: answered %d %.300q, want it refused as the server shuts down", i, r.Status, r.Body)
			}
		}
	}
	if landed == 0 {
		t.Error("no write in flight at SIGTERM was let finish")
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".agenthost-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	t.Logf("%d writes landed and were answered so, %d were refused and did not land", landed, refused)
}
