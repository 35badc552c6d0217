package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestMCPCancellationReachesTheServer: a caller that gives up sends MCP's
// notifications/cancelled, and the server's handler sees its context end.
func TestMCPCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	started, canceled := filepath.Join(root, "started"), filepath.Join(root, "canceled")
	reg := loadMCP(t, &host.Options{Roots: []string{root}}, hostileMCP(t, "hostile"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan string, 1)
	go func() {
		done <- reg.Execute(ctx, "sleep", []byte(fmt.Sprintf(`{"millis":20000,"started":%q,"canceled":%q}`, started, canceled)))
	}()
	waitForFile(t, started)
	cancel()
	if got := <-done; got != "Error executing sleep: canceled" {
		t.Errorf("the canceled call = %q", got)
	}
	waitForFile(t, canceled)
	if got := call(t, reg, "echo", `{"text":"on"}`); got != "on" {
		t.Errorf("echo after a canceled call = %q", got)
	}
}

// TestMCPIdleServerIsStoppedAndStartsAgain: the idle timeout of plugins
// stops an MCP server too, and its next call starts it again.
func TestMCPIdleServerIsStoppedAndStartsAgain(t *testing.T) {
	t.Parallel()
	srv := hostileMCP(t, "hostile")
	mark := marked(t, &srv)
	reg := loadMCP(t, &host.Options{IdleTimeout: 200 * time.Millisecond, CacheDir: host.NoCache}, srv)
	first := atoi(t, call(t, reg, "pid", `{}`))
	waitGone(t, first, "the idle server")
	if pids := serverPIDs(t, mark); len(pids) != 0 {
		t.Fatalf("server processes left after the idle stop: %v", pids)
	}
	if again := atoi(t, call(t, reg, "pid", `{}`)); again == first {
		t.Error("the same process answered after the idle stop")
	}
}

// TestMCPStoppedServerIsReplacedAfterItsDeadline: a server that stops
// answering (SIGSTOP) costs the call its deadline; it does not answer the
// ping that follows, so its process group is killed and the next call
// starts a new one.
func TestMCPStoppedServerIsReplacedAfterItsDeadline(t *testing.T) {
	t.Parallel()
	srv := hostileMCP(t, "hostile")
	mark := marked(t, &srv)
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, srv)
	answer := call(t, reg, "pid", `{}`)
	pid := atoi(t, answer)
	plugintest.KillAtEnd(t, pid)
	defer func() {
		if t.Failed() {
			t.Logf("the server answered pid %q, read as %d (%s); the processes of the server now: %s",
				answer, pid, processStatus(pid), processesStatus(serverPIDs(t, mark)))
		}
	}()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The stop takes effect as each of its threads next runs: the call
	// goes once it has.
	eventually(t, "the server is stopped", func() bool { return strings.Contains(processStatus(pid), "State: T") })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if got := reg.Execute(ctx, "echo", []byte(`{"text":"x"}`)); !strings.HasPrefix(got, "Error executing echo: timed out after ") {
		t.Errorf("a call to the stopped server = %q", got)
	}
	waitGone(t, pid, "the stopped server")
	if next := atoi(t, call(t, reg, "pid", `{}`)); next == pid {
		t.Errorf("pid after the hang = %d, the old one", next)
	}
}
