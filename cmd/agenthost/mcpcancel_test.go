package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
)

// TestMCPStatelessCancel: with --stateless, the call of a client before
// 2026-07-28 that closes its request (its connection) is canceled, and
// run_bash's command with it: what the command was to do next never
// happens. A call whose client waits runs to its end beside it.
func TestMCPStatelessCancel(t *testing.T) {
	t.Parallel()
	exe, plugins := rootsAgenthost(t)
	root := t.TempDir()
	u, _, stderr := startHTTP(t, exe, plugins, "--root", root, "--stateless", "--enable", "run_bash")
	call := func(ctx context.Context, id int, command string) (servetest.Reply, error) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_bash","arguments":{"command":%q}}}`, id, command)
		return servetest.Do(ctx, http.MethodPost, u, body, "Mcp-Protocol-Version", "2025-11-25")
	}

	start := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	closed := make(chan error, 1)
	go func() {
		_, err := call(ctx, 1, "touch started; sleep 4; touch marker")
		closed <- err
	}()
	waited := make(chan error, 1)
	go func() {
		r, err := call(t.Context(), 1, "sleep 4; touch kept")
		if err == nil && (r.Status != http.StatusOK || !strings.Contains(r.Body, `\"exit_code\":0`)) {
			err = fmt.Errorf("%d %s", r.Status, r.Body)
		}
		waited <- err
	}()
	poll.Eventually(t, 10*time.Second, "the command starts", func() error {
		_, err := os.Stat(filepath.Join(root, "started"))
		return err
	})
	cancel() // the client closes the connection
	if err := <-closed; !errors.Is(err, context.Canceled) {
		t.Errorf("the request closed by its client: %v", err)
	}
	if err := <-waited; err != nil {
		t.Errorf("the call whose client waits: %v", err)
	}
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	if _, err := os.Stat(filepath.Join(root, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command of the canceled call ran on: marker: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(root, "kept")); err != nil {
		t.Errorf("the command of the call that was waited for: %v", err)
	}
}
